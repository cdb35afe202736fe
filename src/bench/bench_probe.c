// bench_probe.c: `swlstm bench --probe`: wall time of the probe sweep: on a checkpoint's real
// features (probe_features.c) first, then at the shapes of the published sentiment tasks
// (shapes.c) on generated features (strongly correlated: low rank plus noise, tanh-bounded;
// labels from a sparse linear rule with noise), or on saved .npy features. CPU and CUDA builds.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "base/common.h"
#include "base/rng.h"
#include "bench/bench.h"
#include "bench/probe_features.h"
#include "bench/shapes.h"
#include "bench/table.h"
#include "io/npy.h"

#define RANK 48       // latent factors shared by all units
#define NOISE 0.6     // per-unit noise, relative to the factors' scale
#define RULE 16       // units in the label rule (one of them dominant: the "sentiment unit")

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

static Owned generated(int n, int d, uint64_t row_seed) {
    Owned o = {.X = xmalloc((size_t)n * d * sizeof(float)), .y = xmalloc(n * sizeof(int)), .n = n, .d = d};
    gen_features(o.X, o.y, n, d, 1234, row_seed);
    return o;
}

static Owned loaded(const char *feat, const char *lab) {
    size_t rows, cols, n;
    Owned o = {.X = npy_read_matrix(feat, &rows, &cols)};
    o.y = labels_read(lab, &n);
    if (rows != n) die("bench --probe: '%s' has %zu rows but '%s' has %zu labels", feat, rows, lab, n);
    o.n = (int)rows;
    o.d = (int)cols;
    return o;
}

// One table row: the sweep's wall time on tr, C chosen on dev (when dev->n) or by CV; frees
// both sets.
static void row(const char *name, Owned *tr, Owned *dev, const ProbeOpts *o, double target) {
    ProbeSet a = owned_set(tr), b = owned_set(dev);
    double t0 = now_sec();
    ProbeResult r;
    probe_run(&a, dev->n ? &b : NULL, NULL, o, &r);
    double s = now_sec() - t0;
    char tgt[32] = "-", conv[32], folds[16];
    snprintf(folds, sizeof folds, "%d-fold", o->folds);
    if (target > 0) snprintf(tgt, sizeof tgt, "%.0f", target);
    snprintf(conv, sizeof conv, "%d/%d", r.fits - r.unconverged, r.fits);
    table_row("| %-10s | %5d | %4d | %-8s | %-4s | %8.1f | %6s | %.4f | %-4s | %g | %ld | %s |\n", name, a.n, a.d,
           dev->n ? "dev" : folds, o->penalties == 3 ? "both" : o->penalties == 1 ? "l2" : "l1", s, tgt,
           r.dev_accuracy, penalty_name(r.penalty), r.C, r.nonzero, conv);
    fflush(stdout);
    owned_free(tr);
    owned_free(dev);
}

// The wall time aimed at on 2 CPU cores for a checkpoint's rows with both penalties: MR
// 10-fold, 256-d features: 20 s; SST-2, 4096-d: 120 s (15 s with --device cuda).
static double ckpt_target(const char *task, int d, const ProbeOpts *o) {
    if (o->penalties != 3) return 0;
    if (!strcmp(task, "mr") && d <= 256) return 20;
    if (!strcmp(task, "sst2") && d >= 4096) return o->device == PROBE_CUDA ? 15 : 120;
    return 0;
}

// The rows "mr" (10-fold) and "sst2" (train, dev) on the checkpoint's features; returns the
// rows run.
static int ckpt_rows(const BenchProbeOpts *bo, ProbeOpts *o) {
    int mr = !bo->only || !strcmp(bo->only, "mr"), sst = !bo->only || !strcmp(bo->only, "sst2");
    Owned all, tr, dv, none = {0};
    ckpt_features(bo->ckpt, bo->data, bo->device, mr, sst, &all, &tr, &dv);
    if (mr) row("mr", &all, &none, o, ckpt_target("mr", all.d, o));
    if (sst) row("sst2", &tr, &dv, o, ckpt_target("sst2", tr.d, o));
    return mr + sst;
}

// The generated rows (the one named `only`, or all); returns how many ran.
static int generated_rows(const BenchProbeOpts *bo, ProbeOpts *o) {
    int ran = 0;
    for (int s = 0; s < bench_n_probe_shapes; s++) {
        const ProbeShape *sh = &bench_probe_shapes[s];
        if (bo->only && strcmp(bo->only, sh->name)) continue;
        Owned tr = generated(sh->n_train, sh->d, 1), dv = sh->n_dev ? generated(sh->n_dev, sh->d, 2) : (Owned){0};
        o->penalties = bo->penalties ? bo->penalties : sh->penalties;
        row(sh->name, &tr, &dv, o, sh->target_s);
        ran++;
    }
    return ran;
}

void bench_probe(const BenchProbeOpts *bo) {
    ProbeOpts o = {.penalties = bo->penalties ? bo->penalties : 1 << PEN_L2 | 1 << PEN_L1, .folds = bo->folds, .seed = 1,
                   .device = bo->device};
    table_head("probe", "| task | train rows | d | select | penalties | wall s | target s | sel. acc | chosen | C | non-zero | converged fits |");
    const char *const *f = bo->feat;
    if (f[0]) {
        if (!f[1] || !f[2] != !f[3]) die("bench --probe: --features-file needs --labels, --dev-features needs --dev-labels");
        Owned tr = loaded(f[0], f[1]), dv = f[2] ? loaded(f[2], f[3]) : (Owned){0};
        row("files", &tr, &dv, &o, 0);
        return;
    }
    int with_ckpt = bo->ckpt && (!bo->only || !strcmp(bo->only, "mr") || !strcmp(bo->only, "sst2"));
    int ran = with_ckpt ? ckpt_rows(bo, &o) : 0;
    if (!with_ckpt || !bo->only) ran += generated_rows(bo, &o);
    if (!ran)
        die("bench --probe --only '%s': expected mr or sst2 (with --checkpoint), sst2-l2, sst2-both, mr-l2 or mr256-both",
            bo->only);
}
