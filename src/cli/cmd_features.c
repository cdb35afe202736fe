// cmd_features.c: the `features` verb: per-document features of a checkpoint to .npy.
#include <stdlib.h>
#include <string.h>
#include "features/feature_extract.h"
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
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { features_usage(); return 0; }
        if (feat_opts_parse(&a->fo, argc, argv, &i, "features")) continue;
        if (!strcmp(o, "--labels")) {
            a->want_labels = 1;
            if (v && is_labels_path(v)) a->labels = argv[++i];
        } else if (!strcmp(o, "--input") || !strcmp(o, "--out")) {
            if (!v) die("features: option '%s' needs a value", o);
            *(o[2] == 'i' ? &a->input : &a->out) = argv[++i];
        } else if (o[0] != '-' && !a->ckpt) a->ckpt = o;
        else die("features: unknown option or extra argument '%s' (see swlstm features --help)", o);
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
