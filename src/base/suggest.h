// suggest.h: "did you mean": the known name closest to a mistyped one (config keys, verbs'
// options).
#pragma once
#ifdef __cplusplus
extern "C" {
#endif

// The name of names[0..n) closest to `name` in edit distance, when it is near enough to be the
// one meant (within 2 edits or a third of name's length); else NULL.
const char *suggest_name(const char *name, const char *const *names, int n);

#ifdef __cplusplus
}
#endif
