// atomic_file.h: output files written under a temporary name, fsynced and renamed, so that a
// crash never leaves a half-written file under the real name.
#pragma once
#include <stdio.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    FILE *f;
    char *tmp;          // "<path>.tmp.<pid>"
    const char *path, *what;
} AtomicFile;

// Creates the temporary file; dies "<what> '<path>': cannot create '<tmp>': <reason>".
AtomicFile atomic_open(const char *path, const char *what);
// Flushes, fsyncs and closes the temporary file, renames it to path and fsyncs the directory.
// On a failure (a write to f included) removes the temporary file and dies
// "<what> '<path>': write failed: <reason>".
void atomic_commit(AtomicFile *af);
// Removes the temporary files in dir ("*.tmp.<pid>") whose process no longer runs: what a
// killed run left. Returns how many it removed.
int atomic_remove_stale(const char *dir);

#ifdef __cplusplus
}
#endif
