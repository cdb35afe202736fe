// logreg_l1_qp.c: the L1 Newton step's subproblem on a dense block, solved exactly by
// feature-sign search (Lee, Battle, Raina and Ng 2007): with the signs of the non-zero
// weights fixed the model is a smooth quadratic, minimised by a Cholesky solve; the step
// walks towards that minimiser and stops at the best point, which may be where a weight
// reaches zero (it leaves the active set); weights that cross zero on the way keep their new
// sign in the next model (without that, the next direction need not descend). Once the
// active weights are optimal, the most violating zero weight joins. Each solve keeps the
// factor of the active block up to date (a row appended or deleted, O(na^2)), so a subproblem
// whose support changes by k weights costs one factorisation plus O(k na^2); the model's
// gradient follows each step through the active rows of H, O(m na). Coordinate descent
// needs thousands of sweeps on blocks as ill-conditioned as the Hessians of LSTM features;
// adding all violators at once (projected Newton) zigzags on them.
#include <math.h>
#include <string.h>
#include "probe/chol.h"
#include "probe/logreg_impl.h"

#define RIDGE 1e-12       // relative ridge of the active block: exactly collinear columns

typedef struct {
    int m, na, *act;      // active coordinates, in the factor's order (the intercept, m, first)
    double *L, *grad, *d, *th, *rhs, *tmp;
    double ridge;
} Qp;

static double *row_of(const Qp *q, const double *H, int a, double *h) {   // H[a][act], H[a][a]
    const double *r = H + (size_t)a * (q->m + 1);
    for (int k = 0; k < q->na; k++) h[k] = r[q->act[k]];
    h[q->na] = r[a] + q->ridge;
    return h;
}

// Adds coordinate a with sign th to the active set; 0 when the block would be singular.
static int join(Qp *q, const double *H, int a, double th) {
    if (!chol_append(q->L, q->na, q->m + 1, row_of(q, H, a, q->tmp))) return 0;
    q->act[q->na++] = a;
    q->th[a] = th;
    return 1;
}

static void leave(Qp *q, int k) {
    chol_delete(q->L, q->na, q->m + 1, k, q->tmp);
    q->th[q->act[k]] = 0;
    memmove(q->act + k, q->act + k + 1, (q->na - k - 1) * sizeof(int));
    q->na--;
}

// The violation on the active set, |grad + th|.
static double violation(const Qp *q) {
    double v = 0;
    for (int k = 0; k < q->na; k++) v = fmax(v, fabs(q->grad[q->act[k]] + q->th[q->act[k]]));
    return v;
}

// grad += H dx for a step dx = t d on the active coordinates: na rows of H (symmetric)
// instead of the whole product, O(m na) rather than O(m^2) per step.
SW_AVX2_CLONES
static void gradient_step(Qp *q, const double *H, double t) {
    int m1 = q->m + 1;
    for (int k = 0; k < q->na; k++) {
        const double *h = H + (size_t)q->act[k] * m1;
        double s = t * q->d[k];
        #pragma omp simd
        for (int a = 0; a < m1; a++) q->grad[a] += s * h[a];
    }
}

// The zero weight whose gradient lies farthest outside [-1, 1] (-1 when none beyond tol).
static int most_violating(const Qp *q, const double *u, const double *x, double tol) {
    int best = -1;
    for (int a = 0; a < q->m; a++)
        if (u[a] + x[a] == 0 && !q->th[a] && fabs(q->grad[a]) - 1 > tol && (best < 0 || fabs(q->grad[a]) > fabs(q->grad[best])))
            best = a;
    return best;
}

// One feature-sign step: d_A solves H_AA d_A = -(grad_A + th_A); x moves to the best of
// x + d and the points where a non-zero weight of the segment reaches zero (such weights
// leave). Returns 0 when no point decreases the model.
static int feature_sign_step(Qp *q, const double *H, const double *u, double *x) {
    int na = q->na;
    for (int k = 0; k < na; k++) q->rhs[k] = -(q->grad[q->act[k]] + q->th[q->act[k]]);
    memcpy(q->tmp, q->rhs, na * sizeof(double));
    chol_solve(q->L, na, q->m + 1, q->tmp);
    double gd = 0, dHd = 0;   // the model along x + t d: t gd + t^2 dHd / 2 + penalty change
    for (int k = 0; k < na; k++) q->d[k] = q->tmp[k], gd += q->grad[q->act[k]] * q->d[k], dHd += q->d[k] * q->rhs[k];
    double best_t = 0, best = 0;
    for (int k = -1; k < na; k++) {   // k = -1: the full step; else where weight act[k] reaches zero
        int a = k < 0 ? 0 : q->act[k];
        double v = k < 0 ? 0 : u[a] + x[a], t = k < 0 ? 1 : -v / q->d[k];
        if (k >= 0 && (a == q->m || !(v * q->d[k] < 0) || t >= 1)) continue;
        double ch = t * gd + 0.5 * t * t * dHd;
        for (int l = 0; l < na; l++) {
            int b = q->act[l];
            if (b != q->m) ch += fabs(u[b] + x[b] + t * q->d[l]) - fabs(u[b] + x[b]);
        }
        if (ch < best) best = ch, best_t = t;
    }
    if (best_t == 0) return 0;
    gradient_step(q, H, best_t);
    for (int k = na - 1; k >= 0; k--) {
        int a = q->act[k];
        double v = u[a] + x[a];
        x[a] += best_t * q->d[k];
        if (a == q->m) continue;
        if (v * q->d[k] < 0 && -v / q->d[k] == best_t) x[a] = -u[a], leave(q, k);
        else if ((u[a] + x[a]) * q->th[a] < 0) q->th[a] = -q->th[a];  // crossed zero: the next model takes its new sign
    }
    return 1;
}

// The active set of the non-zero weights u (and the intercept, first), factored at once
// (chol_factor's blocked rows, not one append per weight); ridge grows until the block is
// positive definite.
static void start(Qp *q, const double *H, const double *u) {
    int m1 = q->m + 1;
    double maxdiag = HMIN;
    for (int a = 0; a < m1; a++) maxdiag = fmax(maxdiag, H[(size_t)a * m1 + a]);
    memset(q->th, 0, m1 * sizeof(double));
    q->act[0] = q->m;
    q->na = 1;
    for (int a = 0; a < q->m; a++)
        if (u[a] != 0) q->act[q->na++] = a, q->th[a] = u[a] > 0 ? 1 : -1;
    for (q->ridge = 0;; q->ridge = q->ridge ? 100 * q->ridge : RIDGE * maxdiag) {
        for (int k = 0; k < q->na; k++) {
            double *l = q->L + (size_t)k * m1;
            const double *h = H + (size_t)q->act[k] * m1;
            for (int i = 0; i <= k; i++) l[i] = h[q->act[i]];
            l[k] += q->ridge;
        }
        if (chol_factor(q->L, q->na, m1)) return;
    }
}

void l1_quadratic(const double *H, const double *c, const double *u, int m, double tol, double *x, double *scratch) {
    int m1 = m + 1;
    Qp q = {.m = m, .L = scratch, .grad = scratch + (size_t)m1 * m1};
    q.d = q.grad + m1;
    q.th = q.d + m1;
    q.rhs = q.th + m1;
    q.tmp = q.rhs + m1;
    q.act = (int *)(q.tmp + m1 + 1);
    memset(x, 0, m1 * sizeof(double));
    memcpy(q.grad, c, m1 * sizeof(double));   // the model's gradient c + H x at x = 0
    start(&q, H, u);
    // Each pass either completes a sign-fixed solve, removes a weight or adds one, and the
    // model decreases strictly: the loop ends (the cap only guards against rounding).
    for (int it = 0; it < 8 * m1 + 100; it++) {
        if (violation(&q) <= tol) {
            int a = most_violating(&q, u, x, tol);
            if (a < 0 || !join(&q, H, a, q.grad[a] > 0 ? -1 : 1)) return;
        }
        if (!feature_sign_step(&q, H, u, x)) return;
    }
}
