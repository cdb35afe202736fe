// test_gpu_probe.c: the probe solver with its products on the GPU (cuda/probe/logreg.cu)
// against the CPU twin: each product, then whole fits (L2 and L1) and whole probe sweeps.
#include <string.h>
#include "probe/logreg_cuda.h"
#include "probe/probe.h"
#include "../probe_fixture.h"
#include "gpu_check.h"

enum { N = 700, D = 300 };

static double max_diff(const double *a, const double *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

TEST(gpu_logreg_products_match_cpu) {
    float *X = malloc(sizeof(float) * N * D);
    int y[N], idx[N];
    correlated_rows(X, y, N, D, 31);
    for (int i = 0; i < N; i++) idx[i] = i;
    LrSolver *s = lr_solver_new(&(LrSet){X, D, y, idx, N});
    LrCuda *g = lr_cuda_new(s);
    unsigned long long r = 5;
    double w[D], z[N], want[N], ref;
    for (int j = 0; j < D; j++) w[j] = 2 * test_rand(&r) - 1;
    lr_cuda_margins(g, s, w, 0.5, z);
    for (int i = 0; i < N; i++) {  // E w + b from the solver's own row-major matrix
        want[i] = 0.5;
        for (int j = 0; j < D; j++) want[i] += (double)s->xr[(size_t)i * D + j] * w[j];
    }
    ref = max_diff(z, want, N);
    CHECK_MSG(ref < 1e-9, "margins differ by %g", ref);
    real *V = h_rand((size_t)D * 8, &r, 1), *Y = malloc(sizeof(real) * D * 8), *Yc = malloc(sizeof(real) * D * 8);
    real *T = malloc(sizeof(real) * N * 8), *Tc = malloc(sizeof(real) * N * 8);
    gram_times(s, g, V, 8, T, Y);
    gram_times(s, NULL, V, 8, Tc, Yc);
    double big = 0, err = 0, tbig = 0, terr = 0;
    for (int i = 0; i < D * 8; i++) big = fmax(big, fabs(Yc[i])), err = fmax(err, fabs(Y[i] - Yc[i]));
    for (int i = 0; i < N * 8; i++) tbig = fmax(tbig, fabs(Tc[i])), terr = fmax(terr, fabs(T[i] - Tc[i]));
    CHECK_MSG(err < 1e-5 * big && terr < 1e-5 * tbig, "gram products differ by %g (scale %g), %g (scale %g)", err, big, terr, tbig);
    lr_cuda_free(g);
    lr_solver_free(s);
    free(X); free(V); free(Y); free(Yc); free(T); free(Tc);
}

// The Hessian block on a column subset (L1's working set) against gram_block.
TEST(gpu_logreg_gram_block_matches_cpu) {
    float *X = malloc(sizeof(float) * N * D);
    int y[N], idx[N], cols[D];
    correlated_rows(X, y, N, D, 31);
    for (int i = 0; i < N; i++) idx[i] = i;
    LrSolver *s = lr_solver_new(&(LrSet){X, D, y, idx, N});
    LrCuda *g = lr_cuda_new(s);
    unsigned long long r = 9;
    double Dv[N];
    for (int i = 0; i < N; i++) Dv[i] = 0.25 * test_rand(&r);
    int m = 0;
    for (int j = 0; j < D; j += 3) cols[m++] = j;
    for (int pass = 0; pass < 2; pass++, m = D / 2 + 7) {  // the second, larger set regrows the buffers
        if (pass) for (int a = 0; a < m; a++) cols[a] = a;
        size_t m1 = m + 1;
        double *Hg = malloc(sizeof(double) * m1 * m1), *Hc = malloc(sizeof(double) * m1 * m1);
        lr_cuda_gram(g, s, cols, m, Dv, Hg);
        gram_block(s, cols, m, Dv, Hc);
        double big = 0, err = 0;
        for (size_t i = 0; i < m1 * m1; i++) big = fmax(big, fabs(Hc[i])), err = fmax(err, fabs(Hg[i] - Hc[i]));
        CHECK_MSG(err < 1e-10 * big, "m = %d: Hessian blocks differ by %g (scale %g)", m, err, big);
        free(Hg);
        free(Hc);
    }
    lr_cuda_free(g);
    lr_solver_free(s);
    free(X);
}

// One problem set up twice: a CPU solver, and one whose products run on the GPU.
typedef struct {
    float *X;
    int y[N], idx[N];
    LrSet t;
    LrSolver *cpu, *gs;
    LrCuda *g;
} Twins;

static void twins_open(Twins *w) {
    w->X = malloc(sizeof(float) * N * D);
    correlated_rows(w->X, w->y, N, D, 31);
    for (int i = 0; i < N; i++) w->idx[i] = i;
    w->t = (LrSet){w->X, D, w->y, w->idx, N};
    w->cpu = lr_solver_new(&w->t);
    w->gs = lr_solver_new(&w->t);
    w->g = lr_cuda_new(w->gs);
}

static void twins_close(Twins *w) {
    lr_cuda_free(w->g);
    lr_solver_free(w->cpu);
    lr_solver_free(w->gs);
    free(w->X);
}

TEST(gpu_logreg_l1_path_matches_cpu) {
    Twins w;
    twins_open(&w);
    LogReg a, b;
    logreg_init(&a, w.cpu);
    logreg_init(&b, w.gs);
    for (int k = PROBE_K0; k < PROBE_K0 + PROBE_NC; k++) {
        double va = logreg_fit_on(w.cpu, NULL, PEN_L1, probe_C(k), &a), vb = logreg_fit_on(w.gs, w.g, PEN_L1, probe_C(k), &b);
        double tol = logreg_tol(w.cpu, PEN_L1, probe_C(k));
        CHECK_MSG(va <= tol && vb <= tol, "C=2^%d: KKT violations %g, %g (tol %g)", k - 8, va, vb, tol);
        // Both meet the tolerance; on columns this correlated, the optima they reach may
        // differ in a weight or two near zero, not in what they predict.
        long na = logreg_nonzero(&a, PEN_L1), nb = logreg_nonzero(&b, PEN_L1);
        int ca = logreg_correct(&a, &w.t), cb = logreg_correct(&b, &w.t);
        CHECK_MSG(labs(na - nb) <= 2 && abs(ca - cb) <= 2, "C=2^%d: non-zero %ld vs %ld, correct %d vs %d", k - 8, na, nb, ca, cb);
    }
    logreg_free(&a);
    logreg_free(&b);
    twins_close(&w);
}

TEST(gpu_logreg_l2_path_matches_cpu) {
    Twins w;
    twins_open(&w);
    lr_solver_precondition(w.cpu, NULL);
    lr_solver_precondition(w.gs, w.g);
    LogReg a, b;
    logreg_init(&a, w.cpu);
    logreg_init(&b, w.gs);
    for (int k = PROBE_K0; k < PROBE_K0 + PROBE_NC; k++) {
        double va = logreg_fit_on(w.cpu, NULL, PEN_L2, probe_C(k), &a), vb = logreg_fit_on(w.gs, w.g, PEN_L2, probe_C(k), &b);
        double dw = fmax(max_diff(a.w, b.w, D), fabs(a.b - b.b));
        CHECK_MSG(dw < 1e-6, "C=2^%d: weights differ by %g (KKT violations %g, %g)", k - 8, dw, va, vb);
        CHECK_EQ(logreg_correct(&a, &w.t), logreg_correct(&b, &w.t));
    }
    logreg_free(&a);
    logreg_free(&b);
    twins_close(&w);
}

TEST(gpu_probe_sweep_same_answers) {
    float *X = malloc(sizeof(float) * N * D);
    int y[N];
    correlated_rows(X, y, N, D, 31);
    ProbeSet s = {X, y, N, D};
    ProbeOpts o = {.penalties = 1 << PEN_L2, .folds = 5, .seed = 1, .device = PROBE_CPU};
    ProbeResult rc, rg;
    probe_run(&s, NULL, NULL, &o, &rc);
    o.device = PROBE_CUDA;
    probe_run(&s, NULL, NULL, &o, &rg);
    CHECK(rc.C == rg.C && rc.penalty == rg.penalty && rc.dev_accuracy == rg.dev_accuracy);
    CHECK(rc.c_interior == rg.c_interior && rc.k_lo[PEN_L2] == rg.k_lo[PEN_L2] && rc.k_hi[PEN_L2] == rg.k_hi[PEN_L2]);
    for (int k = 0; k < PROBE_NK; k++) CHECK_NEAR(rc.sweep[PEN_L2][k], rg.sweep[PEN_L2][k], 0);
    free(X);
}
