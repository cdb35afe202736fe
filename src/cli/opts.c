// opts.c: one option syntax for every verb. main() hands each verb its arguments with every
// "--opt=value" rewritten as "--opt" "value" and every '_' of an option's name as '-'
// ("--batch_size" is "--batch-size"); a verb's parser then never needs to know which of the
// forms the user typed. The verb walks them with opts_next and friends.
#include "cli/opts.h"
#include <stdlib.h>
#include <string.h>
#include "base/suggest.h"
#include "model/config.h"

// "--name=value" with a non-empty name: the '=' that splits it, else NULL.
static const char *split_point(const char *a) {
    const char *eq = strchr(a, '=');
    return strncmp(a, "--", 2) || !eq || eq == a + 2 ? NULL : eq;
}

char **opts_split(int argc, char **argv, int *out_argc) {
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += strlen(argv[i]) + 2;
    char **out = xmalloc(sizeof(char *) * (2 * (size_t)argc + 1) + bytes);
    char *text = (char *)(out + 2 * argc + 1);
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char *eq = split_point(argv[i]);
        size_t len = strlen(argv[i]) + 1;
        memcpy(text, argv[i], len);
        size_t name_end = eq ? (size_t)(eq - argv[i]) : len - 1;
        for (size_t k = 2; !strncmp(argv[i], "--", 2) && k < name_end; k++)
            if (text[k] == '_') text[k] = '-';
        out[n++] = text;
        if (eq) {
            text[eq - argv[i]] = 0;
            out[n++] = text + (eq - argv[i]) + 1;
        }
        text += len;
    }
    out[n] = NULL;
    *out_argc = n;
    return out;
}

int opts_begin(Opts *o, const char *verb, int argc, char **argv, void (*usage)(void)) {
    *o = (Opts){.verb = verb, .argc = argc, .argv = argv, .i = 0, .progress = -1};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
    return 1;
}

int opts_next(Opts *o) {
    if (++o->i >= o->argc) return 0;
    o->arg = o->argv[o->i];
    o->names[0] = "--help";
    o->nnames = 1;
    return 1;
}

int opts_is(Opts *o, const char *name) {
    if (o->nnames < OPTS_MAX_NAMES) o->names[o->nnames++] = name;
    return !strcmp(o->arg, name);
}

int opts_progress(Opts *o) {
    if (opts_is(o, "--quiet") || opts_is(o, "-q")) return !(o->progress = 0);
    return opts_is(o, "--progress") ? (o->progress = 1) : 0;
}

int opts_positional(Opts *o, const char **slot) {
    if (o->arg[0] == '-' || *slot) return 0;
    *slot = o->arg;
    return 1;
}

const char *opts_value(Opts *o) {
    if (o->i + 1 >= o->argc) die("%s: option '%s' needs a value (see swlstm %s --help)", o->verb, o->arg, o->verb);
    return o->argv[++o->i];
}

// "sample --top-k": what a value's error names.
static const char *what(const Opts *o, char *buf, size_t n) {
    snprintf(buf, n, "%s %s", o->verb, o->argv[o->i - 1]);
    return buf;
}

long opts_long(Opts *o, long lo, long hi) {
    const char *v = opts_value(o);
    char buf[128];
    return parse_long(what(o, buf, sizeof buf), v, lo, hi);
}

double opts_double(Opts *o, double lo, double hi) {
    const char *v = opts_value(o);
    char buf[128];
    return parse_double(what(o, buf, sizeof buf), v, lo, hi);
}

int opts_choice(Opts *o, const char *key) {
    const char *v = opts_value(o);
    char buf[128];
    return config_parse_choice(key, v, what(o, buf, sizeof buf));
}

void opts_unknown(Opts *o) {
    if (o->arg[0] != '-' || !o->arg[1]) die("%s: unexpected argument '%s' (see swlstm %s --help)", o->verb, o->arg, o->verb);
    const char *near = suggest_name(o->arg, o->names, o->nnames);
    if (near) die("%s: unknown option '%s' (did you mean '%s'?)", o->verb, o->arg, near);
    die("%s: unknown option '%s' (see swlstm %s --help)", o->verb, o->arg, o->verb);
}
