// opts.h: one way for every verb to read its arguments: "--opt value" and "--opt=value" alike,
// '_' and '-' alike in an option's name, --help/-h, --quiet/-q and --progress, a missing value
// and an unknown option ("did you mean") each one line and status 1.
#pragma once
#include "base/common.h"

// A copy of argv (argc entries and a NULL) in which each "--opt=value" became the two
// entries "--opt" "value", so that a verb parses only the "--opt value" form, and each
// option's name has '-' for '_' (config overrides map them back to keys). *out_argc gets
// the new count. One allocation: free() it. main() hands every verb such a copy.
char **opts_split(int argc, char **argv, int *out_argc);

#define OPTS_MAX_NAMES 64

// A verb's walk over its arguments:
//   Opts o;
//   if (!opts_begin(&o, "sample", argc, argv, usage)) return 0;   // --help: usage printed
//   while (opts_next(&o)) {
//       if (opts_is(&o, "--top-k")) k = opts_long(&o, 0, 256);
//       else if (opts_is(&o, "--raw-weights")) raw = 1;
//       else if (opts_positional(&o, &ckpt)) {}
//       else opts_unknown(&o);
//   }
// The names opts_is compared the argument with are the verb's options: opts_unknown suggests
// the closest of them.
typedef struct {
    const char *verb;   // "sample", "bench --probe": errors name it
    int argc, i;
    char **argv;
    const char *arg;    // the argument being read
    int progress;       // -1 (on a terminal only; the default), 0 --quiet/-q, 1 --progress
    const char *names[OPTS_MAX_NAMES];  // the options arg was compared with
    int nnames;
} Opts;

// Starts the walk. When --help or -h is among the arguments, prints usage() and returns 0.
int opts_begin(Opts *o, const char *verb, int argc, char **argv, void (*usage)(void));
// Moves to the next argument (o->arg); 0 after the last.
int opts_next(Opts *o);
// Whether the argument is option `name` (one spelling: "-t" and "--temperature" are two calls).
int opts_is(Opts *o, const char *name);
// --quiet, -q or --progress: sets o->progress and returns 1.
int opts_progress(Opts *o);
// A first argument that is not an option: stores it in *slot (if still NULL) and returns 1.
int opts_positional(Opts *o, const char **slot);
// The option's value (the next argument); dies when there is none.
const char *opts_value(Opts *o);
// The option's value as a number in [lo, hi], or a name of config key `key`'s choices.
long opts_long(Opts *o, long lo, long hi);
double opts_double(Opts *o, double lo, double hi);
int opts_choice(Opts *o, const char *key);
// Dies: "VERB: unknown option '--x' (did you mean '--y'?)", or an unexpected argument.
__attribute__((noreturn)) void opts_unknown(Opts *o);
