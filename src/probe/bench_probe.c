// bench_probe.c: `swlstm bench --probe`: wall time of the probe sweep: on a checkpoint's real
// features (bench_probe_ckpt.c) first, then at the shapes of the published sentiment tasks on
// generated features (strongly correlated: low rank plus noise, tanh-bounded; labels from a
// sparse linear rule with noise), or on saved .npy features. CPU and CUDA builds.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "io/npy.h"
#include "probe/bench_probe.h"
#include "base/rng.h"

#define RANK 48       // latent factors shared by all units
#define NOISE 0.6     // per-unit noise, relative to the factors' scale
#define RULE 16       // units in the label rule (one of them dominant: the "sentiment unit")

typedef struct {
    const char *name;
    int n_train, n_dev, d, folds, penalties;
    double target_s;
} Shape;

static const Shape shapes[] = {
    {"sst2-l2", 6920, 872, 4096, 0, 1 << PEN_L2, 30},
    {"sst2-both", 6920, 872, 4096, 0, 1 << PEN_L2 | 1 << PEN_L1, 120},
    {"mr-l2", 10662, 0, 4096, 10, 1 << PEN_L2, 180},
    {"mr256-both", 10662, 0, 256, 10, 1 << PEN_L2 | 1 << PEN_L1, 20},
};

// n rows of d units: x = tanh(z A + noise) with z ~ N(0, I_RANK), the loadings A fixed by the
// seed and shared by all rows, so that train and dev come from one distribution.
static void gen_features(float *X, int *y, int n, int d, uint64_t seed, uint64_t row_seed) {
    Rng r;
    rng_seed(&r, seed);
    float *A = xmalloc((size_t)RANK * d * sizeof(float));
    for (size_t k = 0; k < (size_t)RANK * d; k++) A[k] = (float)(rng_normal(&r) / sqrt(RANK));
    int unit[RULE];
    double coef[RULE];
    for (int k = 0; k < RULE; k++) unit[k] = (int)rng_below(&r, d), coef[k] = (k ? 0.3 : 1.5) * rng_normal(&r);
    rng_seed(&r, row_seed);
    for (int i = 0; i < n; i++) {
        float z[RANK], *x = X + (size_t)i * d;
        for (int k = 0; k < RANK; k++) z[k] = (float)rng_normal(&r);
        for (int j = 0; j < d; j++) x[j] = (float)(NOISE * rng_normal(&r));
        for (int k = 0; k < RANK; k++)
            for (int j = 0; j < d; j++) x[j] += z[k] * A[(size_t)k * d + j];
        for (int j = 0; j < d; j++) x[j] = tanhf(x[j]);
        double t = 0.5 * rng_normal(&r);
        for (int k = 0; k < RULE; k++) t += coef[k] * x[unit[k]];
        y[i] = t > 0;
    }
    free(A);
}

static ProbeSet as_set(const Owned *o) { return (ProbeSet){o->X, o->y, o->n, o->d}; }

static Owned generated(int n, int d, uint64_t row_seed) {
    Owned o = {xmalloc((size_t)n * d * sizeof(float)), xmalloc(n * sizeof(int)), n, d};
    gen_features(o.X, o.y, n, d, 1234, row_seed);
    return o;
}

static Owned loaded(const char *feat, const char *lab) {
    size_t rows, cols, n;
    Owned o = {npy_read_matrix(feat, &rows, &cols), NULL, 0, 0};
    o.y = labels_read(lab, &n);
    if (rows != n) die("bench --probe: '%s' has %zu rows but '%s' has %zu labels", feat, rows, lab, n);
    o.n = (int)rows;
    o.d = (int)cols;
    return o;
}

void bench_probe_row(const char *name, const ProbeSet *tr, const ProbeSet *dev, const ProbeOpts *o, double target) {
    double t0 = now_sec();
    ProbeResult r;
    probe_run(tr, dev, NULL, o, &r);
    double s = now_sec() - t0;
    char tgt[32] = "-", conv[32];
    if (target > 0) snprintf(tgt, sizeof tgt, "%.0f s", target);
    snprintf(conv, sizeof conv, "%d/%d", r.fits - r.unconverged, r.fits);
    printf("| %-10s | %5d x %4d | %-8s | %-4s | %8.1f s | %6s | %.4f | %s C=%g | %ld | %s |\n", name, tr->n, tr->d,
           dev ? "dev" : "10-fold", o->penalties == 3 ? "both" : o->penalties == 1 ? "l2" : "l1", s, tgt,
           r.dev_accuracy, penalty_name(r.penalty), r.C, r.nonzero, conv);
    fflush(stdout);
}

static void usage(void) {
    printf("usage: swlstm bench --probe [--checkpoint CKPT [--data DIR]] [--only NAME] [--device cpu|cuda]\n"
           "       swlstm bench --probe --features-file F.npy --labels L.npy [--dev-features F --dev-labels L]\n"
           "                    [--folds K]\n"
           "both forms: [--penalty l2|l1|both] (replaces the task's) [--device cpu|cuda]\n"
           "Times the probe's C sweep (selection only, no test set). With a checkpoint, first on its\n"
           "features of DIR's mr.all (10-fold, row mr) and sst2.train/.dev (row sst2), DIR defaulting\n"
           "to ../shared/data/sentiment; then on generated features at the SST-2 and MR shapes\n"
           "(NAME: mr sst2 sst2-l2 sst2-both mr-l2 mr256-both).\n");
}

// The generated rows (the one named `only`, or all); returns how many ran.
static int generated_rows(const char *only, ProbeOpts *o, const char *pen) {
    int ran = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        if (only && strcmp(only, sh->name)) continue;
        Owned tr = generated(sh->n_train, sh->d, 1), dv = sh->n_dev ? generated(sh->n_dev, sh->d, 2) : (Owned){0};
        ProbeSet a = as_set(&tr), b = as_set(&dv);
        o->penalties = pen ? probe_parse_penalty(pen) : sh->penalties;
        bench_probe_row(sh->name, &a, sh->n_dev ? &b : NULL, o, sh->target_s);
        owned_free(&tr);
        owned_free(&dv);
        ran++;
    }
    return ran;
}

int bench_probe(int argc, char **argv) {
    const char *only = NULL, *f[4] = {0}, *pen = NULL, *ckpt = NULL, *data = "../shared/data/sentiment", *device = "cpu";
    ProbeOpts o = {.folds = 10, .seed = 1, .device = PROBE_CPU};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--probe")) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 0; }
        if (!v) die("bench --probe: unknown option '%s' or missing value (see swlstm bench --probe --help)", a);
        i++;
        if (!strcmp(a, "--only")) only = v;
        else if (!strcmp(a, "--features-file")) f[0] = v;
        else if (!strcmp(a, "--labels")) f[1] = v;
        else if (!strcmp(a, "--dev-features")) f[2] = v;
        else if (!strcmp(a, "--dev-labels")) f[3] = v;
        else if (!strcmp(a, "--checkpoint")) ckpt = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--penalty")) pen = v;
        else if (!strcmp(a, "--folds")) o.folds = (int)parse_long("bench --folds", v, 2, 1000);
        else if (!strcmp(a, "--device")) o.device = probe_parse_device(device = v);
        else die("bench --probe: unknown option '%s' (see swlstm bench --probe --help)", a);
    }
    printf("| task       | train rows x d | select | pen. | wall time  | target | sel. acc | chosen | non-zero | converged fits |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    if (f[0]) {
        if (!f[1] || !f[2] != !f[3]) die("bench --probe: --features-file needs --labels, --dev-features needs --dev-labels");
        o.penalties = probe_parse_penalty(pen ? pen : "both");
        Owned tr = loaded(f[0], f[1]), dv = f[2] ? loaded(f[2], f[3]) : (Owned){0};
        ProbeSet a = as_set(&tr), b = as_set(&dv);
        bench_probe_row("files", &a, f[2] ? &b : NULL, &o, 0);
        owned_free(&tr);
        owned_free(&dv);
        return 0;
    }
    int ckpt_rows = ckpt && (!only || !strcmp(only, "mr") || !strcmp(only, "sst2"));
    int ran = ckpt_rows ? bench_probe_checkpoint(ckpt, data, device, only, &o, pen) : 0;
    if (!ckpt_rows || !only) ran += generated_rows(only, &o, pen);
    if (!ran) die("bench --probe --only '%s': expected mr or sst2 (with --checkpoint), sst2-l2, sst2-both, mr-l2 or mr256-both", only);
    return 0;
}
