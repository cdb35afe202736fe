// test_probe.c: logistic regression (against an independent Newton solve; KKT conditions for
// L1), standardisation with training statistics, bigram features and the probe verb.
#ifndef SW_DOUBLE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "features/bigram.h"
#include "probe/logreg.h"
#include "io/npy.h"
#include "probe/probe.h"
#include "probe_fixture.h"

// n rows of d features in [-1, 1); y = [x0 + 0.5 x1 + noise * u > 0] (u uniform in [-1, 1)).
static void toy(float *X, int *y, int n, int d, double noise, double margin, unsigned long long seed) {
    for (int i = 0; i < n; i++) {
        double t;
        do {
            for (int j = 0; j < d; j++) X[i * d + j] = (float)(2 * test_rand(&seed) - 1) * (j + 1);
            t = X[i * d] + 0.25 * X[i * d + 1];
        } while (fabs(t) < margin);
        y[i] = t + noise * (2 * test_rand(&seed) - 1) > 0;
    }
}

static int *iota(int n) {
    int *idx = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) idx[i] = i;
    return idx;
}

// Standardised rows Z [n, d+1] (last column 1) with population std, in double.
static double *standardise(const float *X, int n, int d) {
    double *Z = calloc((size_t)n * (d + 1), sizeof(double));
    for (int j = 0; j < d; j++) {
        double mu = 0, ss = 0;
        for (int i = 0; i < n; i++) mu += X[i * d + j];
        mu /= n;
        for (int i = 0; i < n; i++) ss += (X[i * d + j] - mu) * (X[i * d + j] - mu);
        double sd = sqrt(ss / n);
        for (int i = 0; i < n; i++) Z[i * (d + 1) + j] = (X[i * d + j] - mu) / (sd > 0 ? sd : 1);
    }
    for (int i = 0; i < n; i++) Z[i * (d + 1) + d] = 1;
    return Z;
}

// Gradient of C * sum_i logloss_i at theta = (w, b): g [d+1].
static void loss_grad(const double *Z, const int *y, int n, int d, const double *th, double C, double *g) {
    memset(g, 0, (d + 1) * sizeof(double));
    for (int i = 0; i < n; i++) {
        double z = 0;
        for (int j = 0; j <= d; j++) z += th[j] * Z[i * (d + 1) + j];
        double r = C * (1 / (1 + exp(-z)) - y[i]);
        for (int j = 0; j <= d; j++) g[j] += r * Z[i * (d + 1) + j];
    }
}

// The largest KKT violation of m for penalty pen at C, from an independent gradient.
static double kkt_violation(const double *Z, const int *y, int n, int d, const LogReg *m, Penalty pen, double C) {
    double *th = malloc(sizeof(double) * (d + 1)), *g = malloc(sizeof(double) * (d + 1));
    memcpy(th, m->w, d * sizeof(double));
    th[d] = m->b;
    loss_grad(Z, y, n, d, th, C, g);
    double worst = fabs(g[d]);
    for (int j = 0; j < d; j++) {
        double w = m->w[j], v = pen == PEN_L2 ? g[j] + w : w ? g[j] + (w > 0 ? 1 : -1) : fmax(fabs(g[j]) - 1, 0);
        worst = fmax(worst, fabs(v));
    }
    free(th);
    free(g);
    return worst;
}

// Plain Newton on C * sum logloss + |w|^2 / 2 for d = 2 (3 unknowns with the intercept).
static void newton_reference(const double *Z, const int *y, int n, double C, double th[3]) {
    memset(th, 0, 3 * sizeof(double));
    for (int it = 0; it < 100; it++) {
        double g[3], H[3][4] = {{1}, {0, 1}, {0}};
        loss_grad(Z, y, n, 2, th, C, g);
        g[0] += th[0], g[1] += th[1];
        if (sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) < 1e-12) break;
        for (int i = 0; i < n; i++) {
            const double *z = Z + i * 3;
            double p = 1 / (1 + exp(-(th[0] * z[0] + th[1] * z[1] + th[2]))), D = C * p * (1 - p);
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) H[a][b] += D * z[a] * z[b];
        }
        for (int a = 0; a < 3; a++) H[a][3] = -g[a];
        for (int a = 0; a < 3; a++)  // Gauss-Jordan (H is positive definite)
            for (int b = 0; b < 3; b++) {
                if (b == a) continue;
                double f = H[b][a] / H[a][a];
                for (int c = 0; c < 4; c++) H[b][c] -= f * H[a][c];
            }
        for (int a = 0; a < 3; a++) th[a] += H[a][3] / H[a][a];
    }
}

static void fit_once(const float *X, const int *y, int n, int d, Penalty pen, double C, LogReg *m) {
    int *idx = iota(n);
    LrSet t = {X, d, y, idx, n};
    LrSolver *s = lr_solver_new(&t);
    logreg_init(m, s);
    logreg_fit_on(s, NULL, pen, C, m);
    lr_solver_free(s);
    free(idx);
}

TEST(logreg_l2_matches_newton_reference) {
    enum { N = 80 };
    float X[N * 2];
    int y[N];
    toy(X, y, N, 2, 1.5, 0, 3);
    double *Z = standardise(X, N, 2);
    double Cs[3] = {0.01, 0.5, 8};
    for (int k = 0; k < 3; k++) {
        double th[3];
        newton_reference(Z, y, N, Cs[k], th);
        LogReg m;
        fit_once(X, y, N, 2, PEN_L2, Cs[k], &m);
        CHECK_NEAR(m.w[0], th[0], 1e-5);
        CHECK_NEAR(m.w[1], th[1], 1e-5);
        CHECK_NEAR(m.b, th[2], 1e-5);
        logreg_free(&m);
    }
    free(Z);
}

TEST(logreg_l2_separable_finite_and_stationary) {
    enum { N = 60 };
    float X[N * 2];
    int y[N];
    toy(X, y, N, 2, 0, 0.3, 4);
    double *Z = standardise(X, N, 2), g[3];
    LogReg m;
    fit_once(X, y, N, 2, PEN_L2, 1.0, &m);
    double th[3] = {m.w[0], m.w[1], m.b};
    loss_grad(Z, y, N, 2, th, 1.0, g);
    g[0] += m.w[0], g[1] += m.w[1];
    CHECK(isfinite(m.w[0]) && isfinite(m.w[1]) && fabs(m.w[0]) < 100);
    CHECK_MSG(sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) < 1e-6, "gradient norm %g", sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]));
    int *idx = iota(N);
    CHECK_EQ(logreg_correct(&m, &(LrSet){X, 2, y, idx, N}), N);
    free(idx);
    logreg_free(&m);
    free(Z);
}

TEST(logreg_l1_kkt_and_sparsity_path) {
    enum { N = 200, D = 10 };
    float X[N * D];
    int y[N];
    toy(X, y, N, D, 0.8, 0, 5);
    double *Z = standardise(X, N, D), th[D + 1], g[D + 1], g0 = 0;
    for (int j = 0; j < D; j++) {  // the solver's tolerance scale: largest |gradient| / C at w = 0
        double a = 0;
        for (int i = 0; i < N; i++) a += Z[i * (D + 1) + j] * (0.5 - y[i]);  // centred: as with the mean label
        g0 = fmax(g0, fabs(a));
    }
    int *idx = iota(N);
    LrSet t = {X, D, y, idx, N};
    LrSolver *s = lr_solver_new(&t);
    LogReg m;
    logreg_init(&m, s);
    double Cs[6] = {0.002, 0.01, 0.03, 0.1, 1, 10};
    long nz[6];
    for (int k = 0; k < 6; k++) {
        double tol = 1e-6 * fmax(1, Cs[k] * g0) * 1.01;
        CHECK(logreg_fit_on(s, NULL, PEN_L1, Cs[k], &m) <= tol);
        memcpy(th, m.w, D * sizeof(double));
        th[D] = m.b;
        loss_grad(Z, y, N, D, th, Cs[k], g);
        for (int j = 0; j < D; j++) {
            if (m.w[j] == 0) CHECK_MSG(fabs(g[j]) <= 1 + tol, "C=%g: zero w_%d with |grad| %g > 1", Cs[k], j, fabs(g[j]));
            else CHECK_MSG(fabs(g[j] + (m.w[j] > 0 ? 1 : -1)) <= tol, "C=%g: w_%d = %g, grad %g", Cs[k], j, m.w[j], g[j]);
        }
        CHECK_NEAR(g[D], 0, tol);
        nz[k] = logreg_nonzero(&m, PEN_L1);
        if (k) CHECK_MSG(nz[k] >= nz[k - 1], "nonzero weights %ld at C=%g < %ld at C=%g", nz[k], Cs[k], nz[k - 1], Cs[k - 1]);
    }
    CHECK_MSG(nz[0] <= 1 && nz[5] >= 8, "nonzero %ld at the smallest C, %ld at the largest", nz[0], nz[5]);
    CHECK_EQ(logreg_nonzero(&m, PEN_L2), D);
    logreg_free(&m);
    lr_solver_free(s);
    free(idx);
    free(Z);
}

// Fits paths over the whole C grid (penalties: bit mask) on rows(seed) and checks the KKT
// conditions at every returned optimum with an independent gradient in double, and that each
// fit reports meeting its tolerance.
static void check_path_kkt(void (*rows)(float *, int *, int, int, unsigned long long), int n, int d,
                           unsigned long long seed, int pens) {
    float *X = malloc(sizeof(float) * n * d);
    int *y = malloc(sizeof(int) * n), *idx = iota(n);
    rows(X, y, n, d, seed);
    double *Z = standardise(X, n, d);
    LrSolver *s = lr_solver_new(&(LrSet){X, d, y, idx, n});
    lr_solver_precondition(s, NULL);
    for (int p = 0; p < 2; p++) {
        LogReg m;
        logreg_init(&m, s);
        for (int k = PROBE_K0; k < PROBE_K0 + PROBE_NC && pens >> p & 1; k++) {
            double C = probe_C(k), tol = logreg_tol(s, (Penalty)p, C), fit = logreg_fit_on(s, NULL, (Penalty)p, C, &m);
            double v = kkt_violation(Z, y, n, d, &m, (Penalty)p, C);
            CHECK_MSG(fit <= tol && v <= 1.01 * tol, "%s C=%g: KKT violation %g (solver: %g) > tolerance %g",
                      penalty_name((Penalty)p), C, v, fit, tol);
        }
        logreg_free(&m);
    }
    lr_solver_free(s);
    free(X); free(y); free(idx); free(Z);
}

// L1 and L2 on large, strongly correlated columns like raw LSTM cell states (the explicit
// Hessian of narrow problems).
TEST(logreg_kkt_on_raw_correlated_states) { check_path_kkt(raw_state_rows, 400, 24, 17, 3); }

// L2 on wider problems takes the spectral preconditioner.
TEST(logreg_l2_spectral_preconditioner_kkt) { check_path_kkt(correlated_rows, 600, 520, 22, 1 << PEN_L2); }

TEST(logreg_standardises_with_training_rows_only) {
    enum { N = 100, D = 3 };
    float X[N * D];
    int y[N];
    toy(X, y, N, D, 0.5, 0, 6);
    for (int i = 60; i < N; i++)
        for (int j = 0; j < D; j++) X[i * D + j] += 100;  // rows 60.. are "test": far away
    int *idx = iota(60);
    LrSet tr = {X, D, y, idx, 60};
    LrSolver *s = lr_solver_new(&tr);
    LogReg m;
    logreg_init(&m, s);
    logreg_fit_on(s, NULL, PEN_L2, 1, &m);
    for (int j = 0; j < D; j++) {
        double mu = 0, ss = 0;
        for (int i = 0; i < 60; i++) mu += X[i * D + j];
        mu /= 60;
        for (int i = 0; i < 60; i++) ss += (X[i * D + j] - mu) * (X[i * D + j] - mu);
        CHECK_NEAR(m.mu[j], mu, 1e-12);
        CHECK_NEAR(m.isd[j], 1 / sqrt(ss / 60), 1e-9);
    }
    const float *x = X + 70 * D;
    double z = m.b;
    for (int j = 0; j < D; j++) z += m.w[j] * (x[j] - m.mu[j]) * m.isd[j];
    CHECK_NEAR(logreg_decision(&m, x), z, 1e-12);
    logreg_free(&m);
    lr_solver_free(s);
    free(idx);
}

TEST(logreg_constant_column_gets_zero_weight) {
    enum { N = 50 };
    float X[N * 2];
    int y[N];
    toy(X, y, N, 2, 1, 0, 7);
    for (int i = 0; i < N; i++) X[i * 2 + 1] = 3.5f;
    for (int p = 0; p < 2; p++) {
        LogReg m;
        fit_once(X, y, N, 2, (Penalty)p, 1, &m);
        CHECK(m.w[1] == 0 && m.isd[1] == 1 && m.w[0] != 0);
        logreg_free(&m);
    }
}

// Narrow problems (d <= 512) take the explicit Hessian as L2's preconditioner: same optimum
// as Jacobi.
TEST(logreg_l2_explicit_hessian_same_optimum) {
    enum { N = 300, D = 160 };
    float *X = malloc(sizeof(float) * N * D);
    int y[N], *idx = iota(N);
    correlated_rows(X, y, N, D, 21);
    double *Z = standardise(X, N, D), *th = malloc(sizeof(double) * (D + 1)), *g = malloc(sizeof(double) * (D + 1));
    LrSet t = {X, D, y, idx, N};
    LrSolver *plain = lr_solver_new(&t), *pre = lr_solver_new(&t);
    lr_solver_precondition(pre, NULL);
    LogReg a, b;
    logreg_init(&a, plain);
    logreg_init(&b, pre);
    double Cs[3] = {0.01, 1, 8};
    for (int k = 0; k < 3; k++) {
        logreg_fit_on(plain, NULL, PEN_L2, Cs[k], &a);
        logreg_fit_on(pre, NULL, PEN_L2, Cs[k], &b);
        memcpy(th, b.w, D * sizeof(double));
        th[D] = b.b;
        loss_grad(Z, y, N, D, th, Cs[k], g);
        double gmax = fabs(g[D]), dmax = fabs(a.b - b.b);
        for (int j = 0; j < D; j++) gmax = fmax(gmax, fabs(g[j] + b.w[j])), dmax = fmax(dmax, fabs(a.w[j] - b.w[j]));
        CHECK_MSG(gmax < 1e-5 * fmax(1, Cs[k] * N), "C=%g: KKT violation %g", Cs[k], gmax);
        CHECK_MSG(dmax < 1e-5, "C=%g: Jacobi and explicit-Hessian solutions differ by %g", Cs[k], dmax);
    }
    logreg_free(&a);
    logreg_free(&b);
    lr_solver_free(plain);
    lr_solver_free(pre);
    free(X); free(idx); free(Z); free(th); free(g);
}

TEST(probe_single_unit_and_top_l1_units) {
    enum { N = 400, D = 6 };
    float X[N * D];
    int y[N];
    toy(X, y, N, D, 0.2, 0, 12);  // the label follows x0 (+ x1 / 4): unit 0 alone is best
    ProbeSet s = {X, y, N, D};
    SingleUnit u = probe_single_unit(&s);
    CHECK_EQ(u.unit, 0);
    CHECK_EQ(u.sign, 1);
    CHECK_NEAR(single_unit_accuracy(&u, &s), u.train_acc, 1e-12);
    int ok = 0;  // the threshold's accuracy, counted here
    for (int i = 0; i < N; i++) ok += (X[i * D] > u.thr) == (y[i] == 1);
    CHECK_NEAR(u.train_acc, (double)ok / N, 1e-12);
    CHECK_MSG(u.train_acc > 0.75, "training accuracy %g", u.train_acc);
    LogReg m = {.d = D, .w = (double[D]){0.1, -3, 0, 2, -0.5, 0}};
    int unit[3];
    double w[3];
    probe_top_units(&m, unit, w, 3);
    CHECK(unit[0] == 1 && unit[1] == 3 && unit[2] == 4 && w[0] == -3 && w[2] == -0.5);
}

// ---- bigram probes on text where a marker byte decides the label ----

// "LABEL TEXT" lines of random words; label-1 lines carry a " # " somewhere.
static char *marker_text(int n, unsigned long long seed) {
    char *t = malloc((size_t)n * 80 + 1), *p = t;
    for (int i = 0; i < n; i++) {
        int lab = i % 2, len = 20 + (int)(test_rand(&seed) * 40), mark = (int)(test_rand(&seed) * len);
        p += sprintf(p, "%d ", lab);
        for (int k = 0; k < len; k++) {
            if (lab && k == mark) p += sprintf(p, " # ");
            *p++ = test_rand(&seed) < 0.2 ? ' ' : 'a' + (int)(test_rand(&seed) * 26);
        }
        *p++ = '\n';
    }
    *p = 0;
    return t;
}

static const char *marker_file(const char *name, int n, unsigned long long seed) {
    char *t = marker_text(n, seed);
    const char *p = write_file(tmp_path(name), t, strlen(t));
    free(t);
    return p;
}

TEST(probe_bigram_marker_byte_perfect) {
    Docs tr, te;
    docs_read(&tr, marker_file("mtrain.txt", 200, 1), 1, 1, 0);
    docs_read(&te, marker_file("mtest.txt", 100, 2), 1, 1, 0);
    BigramVocab *v = malloc(sizeof *v);
    bigram_vocab_init(v);
    bigram_vocab_add(v, &tr);
    bigram_vocab_add(v, &te);
    float *Xtr = bigram_features(v, &tr), *Xte = bigram_features(v, &te);
    double ss = 0;
    for (int j = 0; j < v->ncol; j++) ss += Xtr[j] * Xtr[j];
    CHECK_NEAR(ss, 1, 1e-6);  // rows are L2-normalised
    ProbeSet a = {Xtr, tr.label, tr.n, v->ncol}, b = {Xte, te.label, te.n, v->ncol};
    ProbeOpts o = {.penalties = 3, .folds = 5, .seed = 1};
    ProbeResult r;
    probe_run(&a, NULL, &b, &o, &r);
    CHECK_NEAR(r.accuracy, 1.0, 0);
    CHECK_EQ(r.folds, 5);
    CHECK_EQ(r.n_test, 100);
    ProbeResult r2;
    probe_run(&a, NULL, &b, &o, &r2);
    CHECK(r2.C == r.C && r2.dev_accuracy == r.dev_accuracy && r2.penalty == r.penalty);  // deterministic
    free(Xtr); free(Xte); free(v);
    docs_free(&tr);
    docs_free(&te);
}

TEST(probe_verb_bigram_json) {
    const char *tr = marker_file("vtrain.txt", 200, 3), *dv = marker_file("vdev.txt", 60, 4), *te = marker_file("vtest.txt", 100, 5);
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "probe --features bigram --train %s --test %s --json", tr, te);
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    const char *json = strstr(out, "{\"accuracy\":1.000000,");  // a line of its own (progress may precede it)
    CHECK_MSG(json && (json == out || json[-1] == '\n'), "output: %s", out);
    CHECK(strstr(out, "\"folds\":10,") && strstr(out, "\"n_train\":200,\"n_test\":100,"));
    snprintf(cmd, sizeof cmd, "probe --features bigram --train %s --dev %s --test %s --penalty l1 --json", tr, dv, te);
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"accuracy\":1.000000") && strstr(out, "\"penalty\":\"l1\"") && strstr(out, "\"folds\":0"), "output: %s", out);
}

// An unconverged fit is never a silent number: with a tolerance no fit can meet, the JSON
// says "converged":false and counts the fits, and the human report warns.
TEST(probe_verb_reports_unconverged_fits) {
    enum { N = 300, D = 12 };
    float *X = malloc(sizeof(float) * N * D);
    int y[N];
    raw_state_rows(X, y, N, D, 23);
    npy_write(tmp_path("rf.npy"), "<f4", X, 2, (size_t[]){N, D});
    npy_write(tmp_path("rl.npy"), "<i4", y, 1, (size_t[]){N});
    char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s --folds 3 --json", tmp_path("rf.npy"), tmp_path("rl.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"converged\":true,") && strstr(out, "\"unconverged_fits\":0,") && strstr(out, "\"scaling\":\"standardized"),
              "output: %s", out);
    snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s --folds 3 --json --tol 1e-300", tmp_path("rf.npy"), tmp_path("rl.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    const char *u = strstr(out, "\"unconverged_fits\":");
    CHECK_MSG(strstr(out, "\"converged\":false,") && u && atoi(u + 19) > 0 && strstr(out, "fits did not converge"), "output: %s", out);
    snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s --folds 3 --penalty l1 --tol 1e-300", tmp_path("rf.npy"), tmp_path("rl.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "WARNING: ") && strstr(out, "fits did not meet their KKT tolerance"), "output: %s", out);
    free(X);
}

TEST(probe_verb_saved_features_and_errors) {
    enum { N = 60 };
    float X[N * 2];
    int y[N];
    toy(X, y, N, 2, 0, 0.2, 8);
    npy_write(tmp_path("pf.npy"), "<f4", X, 2, (size_t[]){N, 2});
    npy_write(tmp_path("pl.npy"), "<i4", y, 1, (size_t[]){N});
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s --folds 4 --penalty l2 --json", tmp_path("pf.npy"), tmp_path("pl.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"accuracy\":1.000000") && strstr(out, "\"nonzero\":2,\"folds\":4"), "output: %s", out);
    y[5] = 2;
    npy_write(tmp_path("pl2.npy"), "<i4", y, 1, (size_t[]){N});
    snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s", tmp_path("pf.npy"), tmp_path("pl2.npy"));
    CHECK(run_swlstm(cmd, out, sizeof out) != 0 && strstr(out, "pl2.npy': label 2 at document 6; the probe is binary"));
    const char *tr = marker_file("etrain.txt", 20, 9);
    snprintf(cmd, sizeof cmd, "probe --features bigram --train %s --dev %s --folds 3", tr, tr);
    CHECK(run_swlstm(cmd, out, sizeof out) != 0 && strstr(out, "drop --dev or --folds"));
#ifndef SW_CUDA
    snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s --device cuda", tmp_path("pf.npy"), tmp_path("pl.npy"));
    CHECK(run_swlstm(cmd, out, sizeof out) != 0 && strstr(out, "probe --device cuda: this swlstm was built without CUDA"));
#endif
}

// ---- the C path past the grid's edges ----

// n rows of d features uniform in [-1, 1); y = [sum_j x_j / sqrt(d) + noise * u + offset > 0]:
// every feature carries a little of the signal, so strong regularisation (their mean
// difference) wins when the labels are noisy; offset unbalances the classes, so that a C
// small enough leaves only the intercept (the majority class).
static void spread_rows(float *X, int *y, int n, int d, double noise, double offset, unsigned long long seed) {
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int j = 0; j < d; j++) t += X[(size_t)i * d + j] = (float)(2 * test_rand(&seed) - 1);
        y[i] = t / sqrt(d) + noise * (2 * test_rand(&seed) - 1) + offset > 0;
    }
}

// An L2 probe on spread_rows, C chosen on ndev dev rows; returns the index of the chosen C.
// With save, the rows are also written to tmp_path: train.npy, train_y.npy, dev.npy, dev_y.npy.
static int spread_probe(int ntr, int ndev, int d, double noise, double offset, unsigned long long seed, ProbeResult *r,
                        int save) {
    float *X = malloc(sizeof(float) * (ntr + ndev) * d);
    int *y = malloc(sizeof(int) * (ntr + ndev)), k = 0;
    spread_rows(X, y, ntr + ndev, d, noise, offset, seed);
    ProbeSet a = {X, y, ntr, d}, b = {X + (size_t)ntr * d, y + ntr, ndev, d};
    if (save) {
        npy_write(tmp_path("train.npy"), "<f4", a.X, 2, (size_t[]){ntr, d});
        npy_write(tmp_path("train_y.npy"), "<i4", a.y, 1, (size_t[]){ntr});
        npy_write(tmp_path("dev.npy"), "<f4", b.X, 2, (size_t[]){ndev, d});
        npy_write(tmp_path("dev_y.npy"), "<i4", b.y, 1, (size_t[]){ndev});
    }
    ProbeOpts o = {.penalties = 1 << PEN_L2, .folds = 5, .seed = 1};
    probe_run(&a, &b, NULL, &o, r);
    while (probe_C(k) < r->C) k++;
    free(X);
    free(y);
    return k;
}

// Every C from k_lo to k_hi - 1 was fitted, and the chosen one is the best (ties: the smaller C).
static void check_sweep_range(const ProbeResult *r, int k) {
    for (int c = 0; c < PROBE_NK; c++) {
        int fitted = c >= r->k_lo[PEN_L2] && c < r->k_hi[PEN_L2];
        CHECK_MSG(fitted == (r->sweep[PEN_L2][c] >= 0), "C index %d: fitted %d, accuracy %g", c, fitted, r->sweep[PEN_L2][c]);
        if (fitted) CHECK_MSG(c < k ? r->sweep[PEN_L2][c] < r->dev_accuracy : r->sweep[PEN_L2][c] <= r->dev_accuracy,
                              "C index %d: accuracy %g against the chosen %g (index %d)", c, r->sweep[PEN_L2][c], r->dev_accuracy, k);
    }
}

// Noisy labels spread over 200 features: the best C lies below the grid's 2^-8. The path goes
// down a factor at a time until the accuracy has peaked inside (seed 4: at 2^-10), or to its
// limit 2^-12 where the choice is still the edge and says so (seed 6).
TEST(probe_path_goes_below_the_grid) {
    ProbeResult r;
    int k = spread_probe(1000, 400, 200, 3, 0.1, 4, &r, 0);
    CHECK_MSG(r.C < probe_C(PROBE_K0) && r.k_lo[PEN_L2] < PROBE_K0 && r.c_interior,
              "C = %g, fitted from index %d, interior %d", r.C, r.k_lo[PEN_L2], r.c_interior);
    CHECK_EQ(r.k_lo[PEN_L2], k - 1);   // one C past the peak, no more
    check_sweep_range(&r, k);
    k = spread_probe(1000, 400, 200, 3, 0.1, 6, &r, 1);
    CHECK_MSG(k == 0 && r.k_lo[PEN_L2] == 0 && !r.c_interior, "C = %g, fitted from index %d, interior %d", r.C,
              r.k_lo[PEN_L2], r.c_interior);
    CHECK_NEAR(r.C, ldexp(1, -8 - PROBE_EXTRA), 0);
    check_sweep_range(&r, k);
    char cmd[2048], out[8192];   // the verb on the same rows says so, in JSON and in one line of text
    int n = snprintf(cmd, sizeof cmd, "probe --features-file %s --labels %s", tmp_path("train.npy"), tmp_path("train_y.npy"));
    snprintf(cmd + n, sizeof cmd - n, " --dev-features %s --dev-labels %s --penalty l2 --json", tmp_path("dev.npy"), tmp_path("dev_y.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"c_interior\":false,\"c_tried\":[0.000244141,0.03125],") && strstr(out, "\"l2\":[{\"C\":0.000244141,\"accuracy\":"),
              "output: %.600s", out);
    cmd[strlen(cmd) - strlen(" --json")] = 0;
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "NOTE: the chosen C = 2^-12 is the edge of the Cs fitted (l2: 2^-12 .. 2^-5, up to 4 past the grid 2^-8 .. 2^3)"),
              "output: %s", out);
}

// Noise-free labels: the accuracy still grows at the grid's 2^3; the path goes up until it
// has peaked (at 2^4; 2^5 ties it, and ties go to the smaller C).
TEST(probe_path_goes_above_the_grid) {
    ProbeResult r;
    int k = spread_probe(500, 400, 20, 0, 0, 2, &r, 0);
    CHECK_MSG(r.C > probe_C(PROBE_K0 + PROBE_NC - 1) && r.k_hi[PEN_L2] == k + 2 && r.c_interior,
              "C = %g, fitted to index %d, interior %d", r.C, r.k_hi[PEN_L2] - 1, r.c_interior);
    CHECK_EQ(r.k_lo[PEN_L2], PROBE_K0);
    check_sweep_range(&r, k);
}
#endif
