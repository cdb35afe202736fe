// test_optim.c: learning-rate schedules, clipping, and the CPU Adam / sumsq / axpy ops.
#ifndef SW_DOUBLE
#include "test.h"
#include "ops/backend.h"
#include "train/optim.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

// Hand-computed schedule values: base 1, min 0.1 (constant: base 1e-3, min 1e-5); the cosine
// and linear cases warm up for 100 steps, then decay over 1000 steps ending at step 1100.
TEST(optim_lr_schedules) {
    static const struct { const char *kind; double base, min; long warmup, total, step; double want; } c[] = {
        {"constant", 1e-3, 1e-5, 100, 1000, 50, 5e-4},  // warmup middle
        {"constant", 1e-3, 1e-5, 100, 1000, 1, 1e-5},
        {"constant", 1e-3, 1e-5, 100, 1000, 100, 1e-3},  // end of warmup
        {"constant", 1e-3, 1e-5, 100, 1000, 101, 1e-3},
        {"constant", 1e-3, 1e-5, 100, 1000, 5000, 1e-3},
        {"constant", 1e-3, 1e-5, 0, 1000, 1, 1e-3},
        {"cosine", 1, 0.1, 100, 1100, 50, 0.5},
        {"cosine", 1, 0.1, 100, 1100, 100, 1.0},
        {"cosine", 1, 0.1, 100, 1100, 350, 0.8681980515339464},  // 0.1 + 0.45 * (1 + cos(pi/4))
        {"cosine", 1, 0.1, 100, 1100, 600, 0.55},
        {"cosine", 1, 0.1, 100, 1100, 1100, 0.1},
        {"cosine", 1, 0.1, 100, 1100, 9999, 0.1},
        {"cosine", 1, 0.1, 0, 1000, 1, 0.9999977793408362},  // 0.1 + 0.45 * (1 + cos(pi/1000))
        {"linear", 1, 0.1, 100, 1100, 25, 0.25},
        {"linear", 1, 0.1, 100, 1100, 100, 1.0},
        {"linear", 1, 0.1, 100, 1100, 350, 0.775},
        {"linear", 1, 0.1, 100, 1100, 600, 0.55},
        {"linear", 1, 0.1, 100, 1100, 1100, 0.1},
        {"linear", 1, 0.1, 100, 1100, 1200, 0.1},
        {"linear", 1, 0.1, 0, 10, 5, 0.55},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        double got = lr_at(config_parse_choice("lr_schedule", c[i].kind, "test"), c[i].base, c[i].min, c[i].warmup, c[i].total, c[i].step);
        CHECK_MSG(fabs(got - c[i].want) <= 1e-14, "%s step %ld: %.17g, expected %.17g", c[i].kind, c[i].step,
                  got, c[i].want);
    }
}

static void lr_unknown(void *kind) { config_parse_choice("lr_schedule", kind, "--lr_schedule"); }

TEST(optim_lr_unknown_kind) {
    CHECK_DIES(lr_unknown, (void *)"cosin", "--lr_schedule = 'cosin': expected one of constant, cosine, linear");
}

TEST(optim_clip_scale) {
    CHECK_NEAR(clip_scale(5, 0), 1, 0);
    CHECK_NEAR(clip_scale(5, -1), 1, 0);
    CHECK_NEAR(clip_scale(0.5, 1), 1, 0);
    CHECK_NEAR(clip_scale(1, 1), 1, 0);
    CHECK_NEAR(clip_scale(4, 1), 0.2499999375000156, 1e-15);  // 1 / (4 + 1e-6)
    CHECK_NEAR(clip_scale(1e6, 2), 2e-6, 1e-17);
}

// ---- Adam ----

static AdamArgs args(double lr, double eps, double wd, double scale, long step) {
    return (AdamArgs){.lr = (real)lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = (real)eps,
                      .weight_decay = (real)wd, .grad_scale = (real)scale, .step = step};
}

// One AdamW step on one scalar, in double, written out plainly.
static void adam_ref(double *p, double *m, double *v, double g, AdamArgs a) {
    double b1 = a.beta1, b2 = a.beta2;
    g *= a.grad_scale;
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    double mhat = *m / (1 - pow(b1, (double)a.step));
    double vhat = *v / (1 - pow(b2, (double)a.step));
    *p = *p - a.lr * (mhat / (sqrt(vhat) + a.eps) + a.weight_decay * *p);
}

TEST(adam_first_step_moves_lr_times_sign) {
    real p[4] = {0.5f, -0.25f, 1.0f, 0.0f}, g[4] = {0.1f, -2.0f, 3e-3f, -0.5f}, m[4] = {0}, v[4] = {0};
    backend_cpu()->adam(p, g, m, v, 4, args(0.01, 1e-12, 0, 1, 1));
    CHECK_NEAR(p[0], 0.49, 1e-7);
    CHECK_NEAR(p[1], -0.24, 1e-7);
    CHECK_NEAR(p[2], 0.99, 1e-7);
    CHECK_NEAR(p[3], 0.01, 1e-7);
    CHECK_NEAR(m[1], -0.2, 1e-7);   // (1 - 0.9) * -2
    CHECK_NEAR(v[1], 0.004, 1e-7);  // (1 - 0.999) * 4, up to float beta2
}

TEST(adam_three_steps_match_scalar_reference) {
    real p[4] = {0.5f, -0.25f, 1.0f, 0.0f}, m[4] = {0}, v[4] = {0};
    const real g[3][4] = {{0.1f, -2.0f, 3e-3f, -0.5f}, {-0.3f, -1.0f, 0.02f, 0.5f}, {0.05f, 0.5f, -0.01f, 0.0f}};
    double rp[4], rm[4] = {0}, rv[4] = {0};
    for (int i = 0; i < 4; i++) rp[i] = p[i];
    for (long t = 1; t <= 3; t++) {
        AdamArgs a = args(0.01, 1e-3, 0, 1, t);
        backend_cpu()->adam(p, g[t - 1], m, v, 4, a);
        for (int i = 0; i < 4; i++) {
            adam_ref(&rp[i], &rm[i], &rv[i], g[t - 1][i], a);
            CHECK_NEAR(p[i], rp[i], 1e-6);
            CHECK_NEAR(m[i], rm[i], 1e-7);
            CHECK_NEAR(v[i], rv[i], 1e-9);
        }
    }
    // Element 3 (g = -0.5, 0.5, 0): m = -0.05, then 0.005, then 0.9 * 0.005.
    CHECK_NEAR(m[3], 0.0045, 1e-8);
}

TEST(adam_weight_decay_is_decoupled) {
    // Zero gradient: only decay acts, p *= 1 - lr*wd.
    real p[2] = {0.5f, -2.0f}, g[2] = {0, 0}, m[2] = {0}, v[2] = {0};
    backend_cpu()->adam(p, g, m, v, 2, args(0.01, 1e-8, 0.1, 1, 1));
    CHECK_NEAR(p[0], 0.4995, 1e-7);
    CHECK_NEAR(p[1], -1.998, 1e-7);
    // With a gradient: the Adam step (lr*sign g on step 1) and decay of the old p add up.
    real q[1] = {0.5f}, h[1] = {0.1f}, mq[1] = {0}, vq[1] = {0};
    backend_cpu()->adam(q, h, mq, vq, 1, args(0.01, 1e-12, 0.1, 1, 1));
    CHECK_NEAR(q[0], 0.5 - 0.01 - 0.0005, 1e-7);
}

TEST(adam_grad_scale) {
    // Scaling by a power of two inside or outside gives identical bits; both match the reference.
    real p1[3] = {0.1f, 0.2f, -0.3f}, m1[3] = {0.01f, -0.02f, 0.03f}, v1[3] = {1e-4f, 2e-4f, 3e-4f};
    real p2[3], m2[3], v2[3];
    memcpy(p2, p1, sizeof p1), memcpy(m2, m1, sizeof m1), memcpy(v2, v1, sizeof v1);
    double rp = p1[1], rm = m1[1], rv = v1[1];
    real g[3] = {0.8f, -0.4f, 2.0f}, gq[3] = {0.2f, -0.1f, 0.5f};
    AdamArgs a = args(0.01, 1e-8, 0, 0.25, 2);
    backend_cpu()->adam(p1, g, m1, v1, 3, a);
    backend_cpu()->adam(p2, gq, m2, v2, 3, args(0.01, 1e-8, 0, 1, 2));
    CHECK(memcmp(p1, p2, sizeof p1) == 0 && memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0);
    adam_ref(&rp, &rm, &rv, g[1], a);
    CHECK_NEAR(p1[1], rp, 1e-6);
    CHECK_NEAR(m1[1], -0.028, 1e-8);  // 0.9*-0.02 + 0.1*(-0.1)
}

// ---- reductions ----

enum { NBIG = 100001 };

static real *random_vec(size_t n, unsigned long long seed) {
    real *x = malloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) x[i] = (real)(2 * test_rand(&seed) - 1);
    return x;
}

TEST(sumsq_matches_double_reference_and_thread_count) {
    real *x = random_vec(NBIG, 7);
    double ref = 0;
    for (size_t i = 0; i < NBIG; i++) ref += (double)x[i] * x[i];
    int saved = omp_get_max_threads();
    double s[4];
    const int threads[4] = {1, 2, 3, 8};
    for (int k = 0; k < 4; k++) {
        omp_set_num_threads(threads[k]);
        s[k] = backend_cpu()->sumsq(x, NBIG);
    }
    omp_set_num_threads(saved);
    free(x);
    CHECK_NEAR(s[0], ref, 1e-10 * ref);
    CHECK(ref > NBIG / 3.0 * 0.98 && ref < NBIG / 3.0 * 1.02);  // E[x^2] = 1/3
    for (int k = 1; k < 4; k++) CHECK_MSG(memcmp(&s[0], &s[k], sizeof(double)) == 0,
                                          "%d threads: %.17g vs %.17g", threads[k], s[k], s[0]);
    real small[2] = {3, 4};
    CHECK_NEAR(backend_cpu()->sumsq(small, 2), 25, 0);
    CHECK_NEAR(backend_cpu()->sumsq(small, 0), 0, 0);
}

TEST(adam_large_independent_of_thread_count) {
    real *p[2], *m[2], *v[2], *g = random_vec(NBIG, 3);
    int saved = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        p[k] = random_vec(NBIG, 5), m[k] = calloc(NBIG, sizeof(real)), v[k] = calloc(NBIG, sizeof(real));
        omp_set_num_threads(k ? 4 : 1);
        for (long t = 1; t <= 2; t++) backend_cpu()->adam(p[k], g, m[k], v[k], NBIG, args(1e-3, 1e-8, 0.01, 0.5, t));
    }
    omp_set_num_threads(saved);
    int same = memcmp(p[0], p[1], NBIG * sizeof(real)) == 0 && memcmp(v[0], v[1], NBIG * sizeof(real)) == 0;
    double rp = 0, rm = 0, rv = 0, p0;
    unsigned long long seed = 5;
    p0 = rp = (real)(2 * test_rand(&seed) - 1);
    for (long t = 1; t <= 2; t++) adam_ref(&rp, &rm, &rv, g[0], args(1e-3, 1e-8, 0.01, 0.5, t));
    double got = p[0][0];
    for (int k = 0; k < 2; k++) free(p[k]), free(m[k]), free(v[k]);
    free(g);
    CHECK(same);
    CHECK(got != p0);
    CHECK_NEAR(got, rp, 1e-6);
}

TEST(axpy_small_and_large) {
    real y[3] = {1, 2, 3}, x[3] = {1, -1, 0.5f};
    backend_cpu()->axpy(y, x, 2, 3);
    CHECK_NEAR(y[0], 3, 0);
    CHECK_NEAR(y[1], 0, 0);
    CHECK_NEAR(y[2], 4, 0);
    real *big = malloc(NBIG * sizeof(real)), *ones = malloc(NBIG * sizeof(real));
    for (size_t i = 0; i < NBIG; i++) big[i] = (real)i, ones[i] = 1;
    backend_cpu()->axpy(big, ones, -0.5f, NBIG);
    size_t bad = NBIG;
    for (size_t i = 0; i < NBIG && bad == NBIG; i++)
        if (big[i] != (real)i - 0.5f) bad = i;
    free(big);
    free(ones);
    CHECK_MSG(bad == NBIG, "axpy wrong at element %zu", bad);
}
#endif
