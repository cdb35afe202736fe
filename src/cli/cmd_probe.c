// cmd_probe.c: the `probe` verb: logistic-regression probes on saved features, on a
// checkpoint's features of labelled text, or on byte-bigram features (a baseline).
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "features/bigram.h"
#include "cli/shared_opts.h"
#include "io/npy.h"
#include "probe/probe.h"
#include "cli/verbs.h"

enum { TRAIN, DEV, TEST };
static const char *set_name[3] = {"train", "dev", "test"};

typedef struct {
    const char *ckpt, *kind;
    const char *text[3], *feat[3], *lab[3];   // per set: labelled text, or .npy features + labels
    int json, folds_given;
    ProbeOpts po;
    FeatOpts fo;
} ProbeArgs;

typedef struct { float *X; int *y; int n, d; } Loaded;

static void probe_usage(void) {
    printf("usage: swlstm probe --features-file F.npy --labels L.npy [--dev-features F --dev-labels L]\n"
           "                    [--test-features F --test-labels L] [options]\n"
           "       swlstm probe CKPT --train FILE [--dev FILE] [--test FILE] [options] [feature options]\n"
           "       swlstm probe --features bigram --train FILE [--dev FILE] [--test FILE] [options]\n"
           "Fits logistic regression for C = 2^-8 .. 2^3, picks C (and penalty) by dev accuracy, or by\n"
           "k-fold cross-validation on the training set when there is no dev set, refits on the\n"
           "training set and reports test accuracy (or the CV/dev accuracy without a test set).\n"
           "A penalty whose best C is an edge of that grid goes on past it (up to %d Cs: 2^%d .. 2^%d);\n"
           "a choice still at the edge is reported (--json: \"c_interior\":false).\n"
           "Text files hold 'LABEL TEXT' lines with labels 0/1; labels files are .npy or .txt.\n"
           "options:\n"
           "  --penalty l2|l1|both  (default both)      --folds K   (default 10)\n"
           "  --seed S      fold assignment (default 1) --refit-all refit on train + dev\n"
           "  --json        one JSON object on stdout\n"
           "  --tol T       KKT tolerance of every fit, relative to the largest gradient at w = 0\n"
           "                (default 1e-8 for L2, 1e-6 for L1); a fit that misses it is reported\n"
           "  --device cpu|cuda  (default cpu) extracts features and runs the fits' products and\n"
           "                Hessian blocks on the GPU\n"
           "feature options (CKPT form; --no-preprocess and --max-docs also for bigram):\n%s",
           PROBE_EXTRA, probe_log2C(0), probe_log2C(PROBE_NK - 1), feat_opts_usage);
}

// Options naming one file of a set: which array and which set.
static const char **set_option(ProbeArgs *a, Opts *o) {
    static const char *names[9] = {"--train", "--dev", "--test", "--features-file", "--dev-features",
                                   "--test-features", "--labels", "--dev-labels", "--test-labels"};
    const char **slots[9] = {&a->text[0], &a->text[1], &a->text[2], &a->feat[0], &a->feat[1],
                             &a->feat[2], &a->lab[0], &a->lab[1], &a->lab[2]};
    for (int i = 0; i < 9; i++)
        if (opts_is(o, names[i])) return slots[i];
    return NULL;
}

static void parse_option(ProbeArgs *a, Opts *o) {
    const char **slot;
    if (opts_is(o, "--json")) a->json = 1;
    else if (opts_is(o, "--refit-all")) a->po.refit_all = 1;
    else if (feat_opts_read(o, &a->fo)) {}
    else if ((slot = set_option(a, o))) *slot = opts_value(o);
    else if (opts_is(o, "--features")) a->kind = opts_value(o);
    else if (opts_is(o, "--penalty")) a->po.penalties = probe_penalties(o);
    else if (opts_is(o, "--folds")) a->po.folds = (int)opts_long(o, 2, INT_MAX), a->folds_given = 1;
    else if (opts_is(o, "--seed")) a->po.seed = opts_long(o, 0, LONG_MAX);
    else if (opts_is(o, "--tol")) a->po.tol = opts_double(o, 1e-300, 0.1);
    else if (!opts_positional(o, &a->ckpt)) opts_unknown(o);
}

static void check_args(const ProbeArgs *a) {
    if (a->kind && strcmp(a->kind, "bigram"))
        die("probe --features = '%s': expected bigram (give a checkpoint, or saved features with --features-file)", a->kind);
    int npy = a->feat[TRAIN] || a->lab[TRAIN], text = a->text[TRAIN] != NULL;
    if (npy == text) die("probe: give either --features-file F.npy --labels L.npy, or --train FILE (see swlstm probe --help)");
    if (text && !a->ckpt == !a->kind) die("probe --train: give a checkpoint or --features bigram (one of them)");
    if (npy && (a->ckpt || a->kind)) die("probe --features-file: saved features need no checkpoint or --features");
    for (int s = 0; s < 3; s++) {
        if (npy ? a->text[s] != NULL : a->feat[s] || a->lab[s])
            die("probe: do not mix saved features (--features-file ...) with text files (--train ...)");
        if (npy && !a->feat[s] != !a->lab[s]) die("probe: the %s set needs both its features and its labels file", set_name[s]);
    }
    if ((a->text[DEV] || a->feat[DEV]) && a->folds_given) die("probe: --folds picks C without a dev set: drop --dev or --folds");
    if (a->po.refit_all && !(a->text[DEV] || a->feat[DEV])) die("probe --refit-all: needs a dev set");
}

static void check_binary(const Loaded *l, const char *path) {
    for (int i = 0; i < l->n; i++)
        if (l->y[i] != 0 && l->y[i] != 1)
            die("labels of '%s': label %d at document %d; the probe is binary (expected 0 or 1)", path, l->y[i], i + 1);
}

static void load_npy(Loaded *l, const char *feat, const char *lab) {
    size_t rows, cols, n;
    l->X = npy_read_matrix(feat, &rows, &cols);
    l->y = labels_read(lab, &n);
    if (rows != n) die("probe: '%s' has %zu rows but '%s' has %zu labels", feat, rows, lab, n);
    if (rows == 0 || rows > INT_MAX || cols > INT_MAX) die("probe: '%s': shape (%zu, %zu) not usable", feat, rows, cols);
    l->n = (int)rows;
    l->d = (int)cols;
    check_binary(l, lab);
}

// Reads the labelled text sets and computes their features (bigram or from the checkpoint).
static void load_text(Loaded *sets, const ProbeArgs *a) {
    Docs docs[3] = {{0}};
    BigramVocab *v = a->kind ? xmalloc(sizeof *v) : NULL;
    if (v) bigram_vocab_init(v);
    for (int s = 0; s < 3; s++) {
        if (!a->text[s]) continue;
        docs_read(&docs[s], a->text[s], 1, a->fo.preprocess, a->fo.max_docs);
        if (docs[s].n == 0) die("probe: no documents in '%s'", a->text[s]);
        sets[s] = (Loaded){.y = docs[s].label, .n = docs[s].n};
        docs[s].label = NULL;
        check_binary(&sets[s], a->text[s]);
        if (v) bigram_vocab_add(v, &docs[s]);
    }
    FeatOpts fo = a->fo;
    Model *m = a->ckpt ? feat_model_load(a->ckpt, &fo) : NULL;
    for (int s = 0; s < 3; s++) {
        if (!a->text[s]) continue;
        sets[s].X = m ? features_extract(m, &docs[s], &fo) : bigram_features(v, &docs[s]);
        sets[s].d = m ? feat_dim(m, &fo) : v->ncol;
        docs_free(&docs[s]);
    }
    if (m) model_free(m);
    free(v);
}

static const char scaling[] = "standardized: mean and std of each fit's training rows, applied to its held-out rows";

// One line on how the fits converged; a fit that missed its tolerance is never silent.
static void print_convergence(const ProbeResult *r) {
    if (!r->unconverged) {
        printf("fits: %d, every one met its KKT tolerance (largest violation %.2g of it)\n", r->fits, r->worst_kkt);
        return;
    }
    printf("WARNING: %d of %d fits did not meet their KKT tolerance (worst: %.3g times it): "
           "their accuracies and non-zero counts are not those of the optimum\n", r->unconverged, r->fits, r->worst_kkt);
    warnf("probe: %d of %d fits did not converge (see the report)", r->unconverged, r->fits);
}

// The C indices shown for penalty p: the grid, and every C its paths fitted past it.
static void shown(const ProbeResult *r, int p, int *k0, int *k1) {
    *k0 = r->k_lo[p] < PROBE_K0 ? r->k_lo[p] : PROBE_K0;
    *k1 = r->k_hi[p] > PROBE_K0 + PROBE_NC ? r->k_hi[p] : PROBE_K0 + PROBE_NC;
}

// One line when the chosen C is the edge of the Cs fitted (the paths went PROBE_EXTRA Cs past the grid).
static void print_edge(const ProbeResult *r) {
    if (r->c_interior) return;
    int p = r->penalty;
    printf("NOTE: the chosen C = 2^%d is the edge of the Cs fitted (%s: 2^%d .. 2^%d, up to %d past the grid "
           "2^%d .. 2^%d): the best C may lie beyond it\n", (int)lround(log2(r->C)), penalty_name(r->penalty),
           probe_log2C(r->k_lo[p]), probe_log2C(r->k_hi[p] - 1), PROBE_EXTRA, probe_log2C(PROBE_K0),
           probe_log2C(PROBE_K0 + PROBE_NC - 1));
}

static void print_human(const ProbeResult *r, int d) {
    printf("probe: %d features (%s), %d training documents, C chosen by %s\n", d, scaling, r->n_train,
           r->folds ? "cross-validation" : "dev accuracy");
    int k0, k1;
    for (int p = 0; p < 2; p++) {
        if (!r->k_hi[p]) continue;
        shown(r, p, &k0, &k1);
        printf("  %s:", penalty_name((Penalty)p));
        for (int k = k0; k < k1; k++) r->sweep[p][k] < 0 ? printf("   -   ") : printf(" %.4f", r->sweep[p][k]);
        printf("   (C = 2^%d .. 2^%d; - : after the early stop)\n", probe_log2C(k0), probe_log2C(k1 - 1));
    }
    if (r->k_hi[PEN_L1]) {
        printf("  l1 non-zero weights:");
        for (int k = r->k_lo[PEN_L1]; k < r->k_hi[PEN_L1]; k++) printf(" %ld", r->sweep_nonzero[PEN_L1][k]);
        printf("\n");
    }
    printf("chosen: penalty %s, C = %g, %s accuracy %.4f, nonzero weights %ld\n", penalty_name(r->penalty), r->C,
           r->folds ? "CV" : "dev", r->dev_accuracy, r->nonzero);
    print_edge(r);
    if (r->n_test) printf("test accuracy %.4f (%d documents)\n", r->accuracy, r->n_test);
    if (r->n_top) {
        printf("largest L1 weights (C = %g):", r->top_C);
        for (int t = 0; t < r->n_top; t++) printf(" %d:%+.3g", r->top_unit[t], r->top_weight[t]);
        printf("\n");
    }
    printf("best single unit: %d (%s %.4g), accuracy %.4f (training %.4f)\n", r->single.unit,
           r->single.sign > 0 ? ">" : "<", r->single.thr, r->single_accuracy, r->single.train_acc);
    print_convergence(r);
}

// "sweep":{"l2":[{"C":..,"accuracy":..,"nonzero":..,"kkt_ratio":..},..],..}: the grid and every
// C fitted past it, null where not run.
static void print_json_sweep(const ProbeResult *r) {
    printf("\"sweep\":{");
    for (int p = 0, first = 1, k0, k1; p < 2; p++) {
        if (!r->k_hi[p]) continue;
        printf("%s\"%s\":[", first ? "" : ",", penalty_name((Penalty)p));
        first = 0;
        shown(r, p, &k0, &k1);
        for (int k = k0; k < k1; k++) {
            printf("%s{\"C\":%g,", k > k0 ? "," : "", probe_C(k));
            if (r->sweep[p][k] < 0) printf("\"accuracy\":null,\"nonzero\":null,\"kkt_ratio\":null}");
            else printf("\"accuracy\":%.6f,\"nonzero\":%ld,\"kkt_ratio\":%.3g}", r->sweep[p][k], r->sweep_nonzero[p][k], r->sweep_kkt[p][k]);
        }
        printf("]");
    }
    printf("},");
}

// "c_interior": whether the chosen C has a fitted C on each side; "c_tried": the smallest and
// largest C the chosen penalty's paths fitted.
static void print_json(const ProbeResult *r) {
    int p = r->penalty;
    printf("{\"accuracy\":%.6f,\"C\":%g,\"penalty\":\"%s\",\"nonzero\":%ld,\"folds\":%d,"
           "\"dev_accuracy\":%.6f,\"n_train\":%d,\"n_test\":%d,\"scaling\":\"%s\","
           "\"c_interior\":%s,\"c_tried\":[%g,%g],"
           "\"converged\":%s,\"fits\":%d,\"unconverged_fits\":%d,\"max_kkt_ratio\":%.3g,",
           r->accuracy, r->C, penalty_name(r->penalty), r->nonzero, r->folds, r->dev_accuracy, r->n_train, r->n_test,
           scaling, r->c_interior ? "true" : "false", probe_C(r->k_lo[p]), probe_C(r->k_hi[p] - 1),
           r->unconverged ? "false" : "true", r->fits, r->unconverged, r->worst_kkt);
    print_json_sweep(r);
    printf("\"top_units\":[");
    for (int t = 0; t < r->n_top; t++) printf("%s{\"unit\":%d,\"weight\":%.6g}", t ? "," : "", r->top_unit[t], r->top_weight[t]);
    const SingleUnit *u = &r->single;
    printf("],\"top_units_C\":%g,\"single_unit\":{\"unit\":%d,\"threshold\":%.6g,\"sign\":%d,"
           "\"train_accuracy\":%.6f,\"accuracy\":%.6f}}\n",
           r->n_top ? r->top_C : 0, u->unit, u->thr, u->sign, u->train_acc, r->single_accuracy);
    if (r->unconverged) warnf("probe: %d of %d fits did not converge (\"converged\":false)", r->unconverged, r->fits);
}

int cmd_probe(int argc, char **argv) {
    ProbeArgs a = {.po = {.penalties = 1 << PEN_L2 | 1 << PEN_L1, .folds = 10, .seed = 1}};
    feat_opts_default(&a.fo);
    Opts o;
    if (!opts_begin(&o, "probe", argc, argv, probe_usage)) return 0;
    while (opts_next(&o)) parse_option(&a, &o);
    check_args(&a);
    a.po.device = probe_device(config_choice_name("device", a.fo.device), "probe --device");   // --device: feature extraction and the L2 solver
    a.po.progress = a.fo.progress < 0 ? 0 : a.fo.progress ? 1 : 2;
    Loaded sets[3] = {{0}};
    if (a.text[TRAIN]) load_text(sets, &a);
    else for (int s = 0; s < 3; s++) if (a.feat[s]) load_npy(&sets[s], a.feat[s], a.lab[s]);
    ProbeSet ps[3];
    for (int s = 0; s < 3; s++) {
        if (sets[s].n && sets[s].d != sets[TRAIN].d)
            die("probe: the %s set has %d features, the training set %d", set_name[s], sets[s].d, sets[TRAIN].d);
        ps[s] = (ProbeSet){.X = sets[s].X, .y = sets[s].y, .n = sets[s].n, .d = sets[s].d};
    }
    ProbeResult r;
    probe_run(&ps[TRAIN], sets[DEV].n ? &ps[DEV] : NULL, sets[TEST].n ? &ps[TEST] : NULL, &a.po, &r);
    if (a.json) print_json(&r);
    else print_human(&r, sets[TRAIN].d);
    for (int s = 0; s < 3; s++) free(sets[s].X), free(sets[s].y);
    return 0;
}
