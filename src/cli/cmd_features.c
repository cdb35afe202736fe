// cmd_features.c: the `features` verb: per-document features of a checkpoint to .npy.
#include <stdlib.h>
#include <string.h>
#include "cli/shared_opts.h"
#include "io/npy.h"
#include "cli/verbs.h"

typedef struct {
    const char *ckpt, *input, *out, *labels;
    int want_labels;
    FeatOpts fo;
} FeatArgs;

static void features_usage(void) {
    printf("usage: swlstm features CKPT --input FILE --out FEATS.npy [--labels [LABELS.npy|LABELS.txt]]\n"
           "                      [feature options]\n"
           "Runs every line of FILE (one document per line) from a zero state through the model and\n"
           "writes one row per document, in input order, as float32 (N, D) .npy. With --labels each\n"
           "line is 'LABEL TEXT' and the integer labels go to LABELS (default: FEATS.labels.npy;\n"
           "int32 .npy, or text when the name ends in .txt).\n"
           "feature options:\n%s", feat_opts_usage);
}

static int is_labels_path(const char *s) { return ends_with(s, ".npy") || ends_with(s, ".txt"); }

static int parse_features_args(int argc, char **argv, FeatArgs *a) {
    feat_opts_default(&a->fo);
    Opts o;
    if (!opts_begin(&o, "features", argc, argv, features_usage)) return 0;
    while (opts_next(&o)) {
        if (feat_opts_read(&o, &a->fo)) continue;
        if (opts_is(&o, "--labels")) {
            a->want_labels = 1;
            if (o.i + 1 < argc && is_labels_path(argv[o.i + 1])) a->labels = opts_value(&o);
        } else if (opts_is(&o, "--input")) a->input = opts_value(&o);
        else if (opts_is(&o, "--out")) a->out = opts_value(&o);
        else if (!opts_positional(&o, &a->ckpt)) opts_unknown(&o);
    }
    if (!a->ckpt || !a->input || !a->out) die("features: usage: swlstm features CKPT --input FILE --out FEATS.npy");
    return 1;
}

// FEATS.npy -> FEATS.labels.npy
static char *default_labels_path(const char *out) {
    size_t n = strlen(out) - (ends_with(out, ".npy") ? 4 : 0);
    char *p = xmalloc(n + 12);
    memcpy(p, out, n);
    strcpy(p + n, ".labels.npy");
    return p;
}

int cmd_features(int argc, char **argv) {
    FeatArgs a = {0};
    if (!parse_features_args(argc, argv, &a)) return 0;
    const char *outs[2] = {a.out, a.labels};
    for (int k = 0; k < 2; k++) {
        refuse_same_file("features", a.ckpt, outs[k]);
        refuse_same_file("features", a.input, outs[k]);
    }
    Docs d;
    docs_read(&d, a.input, a.want_labels, a.fo.preprocess, a.fo.max_docs);
    if (d.n == 0) die("features: no documents in '%s'", a.input);
    Model *m = feat_model_load(a.ckpt, &a.fo);
    float *F = features_extract(m, &d, &a.fo);
    size_t shape[2] = {(size_t)d.n, (size_t)feat_dim(m, &a.fo)};
    npy_write(a.out, "<f4", F, 2, shape);
    printf("features: %d documents x %zu -> %s", d.n, shape[1], a.out);
    if (a.want_labels) {
        char *lp = a.labels ? xstrdup(a.labels) : default_labels_path(a.out);
        labels_write(lp, d.label, (size_t)d.n);
        printf(", labels -> %s", lp);
        free(lp);
    }
    printf("\n");
    free(F);
    docs_free(&d);
    model_free(m);
    return 0;
}
