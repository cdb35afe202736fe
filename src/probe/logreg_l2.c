// logreg_l2.c: the L2 Newton step, H dw = -grad, by preconditioned conjugate gradients.
// Features of a char-LM are dense and strongly correlated (a few directions carry most of
// the variance), so H = I + E^T D E is badly conditioned and Jacobi preconditioning needs
// hundreds of iterations per step. The preconditioner instead uses the leading eigenvectors
// of E^T E / n (a randomized range finder: two blocked matrix products per training set,
// as in Halko, Martinsson and Tropp 2011) with D replaced by its mean, and inverts that
// model exactly. Hessian-vector products read the row-major matrix once, by row parts.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/gemm_cpu.h"
#include "probe/logreg_cuda.h"
#include "base/rng.h"
#include "probe/chol.h"

#define PARTS 16        // fixed row parts of E^T u: the sum's order never depends on threads
#define SKETCH 128      // random directions of the range finder
#define DENSE_MAX 512   // up to this many columns, the explicit Hessian (n d^2 / 2 per
                        // refresh) beats tens of CG iterations (2 n d each) per Newton step
#define MAX_CG 500
#define PAR_MIN (1L << 22)  // products smaller than this run on one thread: on a loaded machine
                            // a barrier can cost more than the product

// ---- the spectrum of E^T E / n ----

// T [n][l] = E V and Y [d][l] = E^T T for V [d][l]. Each output sums in a fixed order.
void gram_times(const LrSolver *s, LrCuda *gpu, const real *V, int l, real *T, real *Y) {
#ifdef SW_CUDA
    if (gpu) { lr_cuda_gram_times(gpu, s, V, l, T, Y); return; }
#endif
    const real *a = s->xr;
    GemmTerms t = {.nseg = 1, .K = s->d, .a = &a, .b = &V, .lda = s->d, .ska = 1, .ldb = l};
    #pragma omp parallel for schedule(static)
    for (int ch = 0; ch < gemm_nchunks(s->n); ch++)
        gemm_rows(T, l, &t, NULL, ch * GEMM_CHUNK, gemm_chunk_end(ch, s->n), l, 0);
    memset(Y, 0, (size_t)s->d * l * sizeof(real));
    #pragma omp parallel for schedule(static)
    for (int ch = 0; ch < gemm_nchunks(s->d); ch++)
        gemm_rows_acc_long_k(Y, l, s->xr, 1, s->d, T, l, s->n, ch * GEMM_CHUNK, gemm_chunk_end(ch, s->d), l);
}

// Columns of Y [d][l] -> orthonormal rows of Q [l][d] (Gram-Schmidt, twice for accuracy).
static void orthonormalise(const real *Y, int d, int l, double *Q) {
    for (int k = 0; k < l; k++) {
        double *q = Q + (size_t)k * d;
        for (int j = 0; j < d; j++) q[j] = Y[(size_t)j * l + k];
        for (int pass = 0; pass < 2; pass++)
            for (int m = 0; m < k; m++) {
                double c = dot(q, Q + (size_t)m * d, d);
                for (int j = 0; j < d; j++) q[j] -= c * Q[(size_t)m * d + j];
            }
        double nrm = sqrt(dot(q, q, d));
        for (int j = 0; j < d; j++) q[j] = nrm > 0 ? q[j] / nrm : 0;
    }
}

void lr_solver_precondition(LrSolver *s, LrCuda *gpu) {
    int d = s->d, n = s->n, l = d / 4 < SKETCH ? d / 4 : SKETCH;  // the block costs n l^2 / 2 per step
    // Sparse columns (byte bigrams) keep Jacobi: their products cost only the non-zeros, and
    // the spectral model, uncentred, would drop the intercept's large coupling.
    if (s->sparse || s->sp.l) return;
    if (d <= DENSE_MAX) { s->dense = 1; return; }
    Spectrum *sp = &s->sp;
    real *V = xmalloc((size_t)d * l * sizeof(real)), *Y = xmalloc((size_t)d * l * sizeof(real));
    sp->P = xmalloc((size_t)n * l * sizeof(real));
    sp->U = xmalloc((size_t)l * d * sizeof(double));
    Rng r;
    rng_seed(&r, 12345);
    for (size_t i = 0; i < (size_t)d * l; i++) V[i] = (real)rng_normal(&r);
    gram_times(s, gpu, V, l, sp->P, Y);     // the range of E^T E
    orthonormalise(Y, d, l, sp->U);
    for (int k = 0; k < l; k++)
        for (int j = 0; j < d; j++) V[(size_t)j * l + k] = (real)sp->U[(size_t)k * d + j];
    gram_times(s, gpu, V, l, sp->P, Y);     // P = E U^T; Y = E^T P, for the trace it keeps
    double trace = 0, kept = 0;
    for (size_t i = 0; i < (size_t)n * d; i++) trace += (double)s->xr[i] * s->xr[i];
    for (int k = 0; k < l; k++)
        for (int j = 0; j < d; j++) kept += sp->U[(size_t)k * d + j] * Y[(size_t)j * l + k];
    sp->l = l;
    sp->bulk = fmax(trace - kept, 0) / n / (d - l);
    free(V);
    free(Y);
}

void lr_spectrum_free(Spectrum *sp) {
    free(sp->U);
    free(sp->P);
    memset(sp, 0, sizeof *sp);
}

// ---- the Newton step ----

#define RB 4            // rows per pass of the Hessian product: p and q are read once per 4 rows

// xp[r] = p[d] + e_r . p for the RB rows e_0.. (stride d), then q += sum_r D[r] xp[r] e_r.
SW_AVX2_CLONES
static void rows_hess(const real *e, const double *p, const double *D, double *xp, double *u, double *q, int d) {
    const real *e0 = e, *e1 = e + d, *e2 = e + 2 * d, *e3 = e + 3 * d;
    double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    #pragma omp simd reduction(+ : t0, t1, t2, t3)
    for (int j = 0; j < d; j++) t0 += e0[j] * p[j], t1 += e1[j] * p[j], t2 += e2[j] * p[j], t3 += e3[j] * p[j];
    double t[RB] = {t0, t1, t2, t3};
    for (int r = 0; r < RB; r++) xp[r] = p[d] + t[r], u[r] = D[r] * xp[r];
    double u0 = u[0], u1 = u[1], u2 = u[2], u3 = u[3];
    #pragma omp simd
    for (int j = 0; j < d; j++) q[j] += u0 * e0[j] + u1 * e1[j] + u2 * e2[j] + u3 * e3[j];
}

// The same for one row (the tail of a part).
static void row_hess(const real *e, const double *p, const double *D, double *xp, double *u, double *q, int d) {
    double t = p[d];
    for (int j = 0; j < d; j++) t += e[j] * p[j];
    *xp = t;
    *u = *D * t;
    for (int j = 0; j < d; j++) q[j] += *u * e[j];
}

// hess_vec for solvers with sparse columns (byte bigrams): column by column, in proportion
// to the non-zeros; too little work per product to gain from threads.
static void hess_vec_cols(const LrSolver *s, Work *k) {
    int d = s->d;
    for (int i = 0; i < s->n; i++) k->xp[i] = k->p[d];
    for (int j = 0; j < d; j++)
        if (k->p[j] != 0) col_axpy(s, j, k->p[j], k->xp);
    k->q[d] = HMIN * k->p[d];
    for (int i = 0; i < s->n; i++) k->q[d] += k->u[i] = k->D[i] * k->xp[i];
    for (int j = 0; j < d; j++) k->q[j] = k->p[j] + col_dot(s, j, k->u);
}

// q = H p; xp = E p + p[d] (the change of the margins along p), u = D xp.
// One pass over E: part t of the rows sums E^T u into its own row of `part` [PARTS][d],
// then the parts are added in order, so the result does not depend on the threads.
static void hess_vec(const LrSolver *s, Work *k, double *part) {
#ifdef SW_CUDA
    if (k->gpu) { lr_cuda_hess_vec(k->gpu, s, k); return; }
#endif
    if (s->sparse) { hess_vec_cols(s, k); return; }
    int n = s->n, d = s->d;
    #pragma omp parallel if ((long)n * d >= PAR_MIN)
    {
        #pragma omp for schedule(static)
        for (int t = 0; t < PARTS; t++) {
            double *qt = part + (size_t)t * d;
            memset(qt, 0, d * sizeof(double));
            int i = (int)((long)n * t / PARTS), i1 = (int)((long)n * (t + 1) / PARTS);
            for (; i + RB <= i1; i += RB) rows_hess(s->xr + (size_t)i * d, k->p, k->D + i, k->xp + i, k->u + i, qt, d);
            for (; i < i1; i++) row_hess(s->xr + (size_t)i * d, k->p, k->D + i, k->xp + i, k->u + i, qt, d);
        }
        #pragma omp for schedule(static)
        for (int j = 0; j < d; j++) {
            double acc = k->p[j];
            for (int t = 0; t < PARTS; t++) acc += part[(size_t)t * d + j];
            k->q[j] = acc;
        }
    }
    k->q[d] = HMIN * k->p[d];
    for (int i = 0; i < n; i++) k->q[d] += k->u[i];
}

// L [l][l]: the Cholesky factor of I + P^T D P, the Hessian's block in the spectrum's
// subspace at this Newton step (D changes only between steps).
static void subspace_block(const LrSolver *s, const Work *k, double *L) {
    int l = s->sp.l;
    const real *P = s->sp.P;
    memset(L, 0, (size_t)l * l * sizeof(double));
    for (int i = 0; i < s->n; i++)
        for (int a = 0; a < l; a++) {
            double pa = P[(size_t)i * l + a] * k->D[i];
            for (int b = 0; b <= a; b++) L[a * l + b] += pa * P[(size_t)i * l + b];
        }
    for (int a = 0; a < l; a++) L[a * l + a] += 1;
    chol_factor(L, l, l);
}

// The explicit model of narrow problems (every column and the intercept): the Cholesky
// factor of I + G, formed again when the last one went stale.
static void dense_model(const LrSolver *s, Work *k) {
    LrHess *hm = k->hm;
    int m1 = s->d + 1;
    if (hm->refresh) hess_form(s, k);
    if (hm->factored) return;
    memcpy(hm->L, hm->G, (size_t)m1 * m1 * sizeof(double));
    for (int a = 0; a < s->d; a++) hm->L[(size_t)a * m1 + a] += 1;
    hm->L[(size_t)s->d * m1 + s->d] += HMIN;
    if (!chol_factor(hm->L, m1, m1)) die("internal: the L2 Hessian is not positive definite");
    hm->factored = 1;
}

// pz = M^-1 res, returns res . pz. Narrow problems: M is the explicit Hessian (exact when
// fresh). Else M is H in the spectrum's subspace (exact, factor L) and
// (1 + sum(D) bulk) I on the rest, the cross terms dropped:
// M^-1 = U^T (I + P^T D P)^-1 U + (I - U^T U) / (1 + sum(D) bulk). Without a spectrum
// (narrow sparse problems), M = diag(H) (Jacobi). The intercept always takes its diagonal.
static double precondition(const LrSolver *s, Work *k, const double *L) {
    const Spectrum *sp = &s->sp;
    int d = s->d, l = sp->l;
    if (k->hm->m) {
        memcpy(k->pz, k->res, (d + 1) * sizeof(double));
        chol_solve(k->hm->L, d + 1, d + 1, k->pz);
        return dot(k->res, k->pz, d + 1);
    }
    k->pz[d] = k->res[d] / k->h[d];
    if (!l) {
        for (int j = 0; j < d; j++) k->pz[j] = k->res[j] / k->h[j];
        return dot(k->res, k->pz, d + 1);
    }
    double c = 0, a[SKETCH], x[SKETCH];
    for (int i = 0; i < s->n; i++) c += k->D[i];
    double rest = 1 / (1 + c * sp->bulk);
    for (int m = 0; m < l; m++) x[m] = a[m] = dot(sp->U + (size_t)m * d, k->res, d);
    chol_solve(L, l, l, x);
    for (int j = 0; j < d; j++) k->pz[j] = rest * k->res[j];
    for (int m = 0; m < l; m++) {
        const double *u = sp->U + (size_t)m * d;
        double w = x[m] - rest * a[m];
        for (int j = 0; j < d; j++) k->pz[j] += w * u[j];
    }
    return dot(k->res, k->pz, d + 1);
}

int newton_cg(const LrSolver *s, Work *k, double tol) {
    int m = s->d + 1, it = 0;
    double *part = xmalloc((size_t)PARTS * s->d * sizeof(double)), *L = xmalloc(SKETCH * SKETCH * sizeof(double));
    if (k->hm->m) dense_model(s, k);
    else if (s->sp.l) subspace_block(s, k, L);
    for (int j = 0; j < m; j++) k->res[j] = -k->pg[j];
    memset(k->dw, 0, m * sizeof(double));
    memset(k->dz, 0, s->n * sizeof(double));
    double rz = precondition(s, k, L);
    memcpy(k->p, k->pz, m * sizeof(double));
    for (; it < MAX_CG; it++) {
        double rmax = 0;
        for (int j = 0; j < m; j++) rmax = fmax(rmax, fabs(k->res[j]));
        if (rmax <= tol) break;
        hess_vec(s, k, part);
        double alpha = rz / dot(k->p, k->q, m);
        for (int j = 0; j < m; j++) k->dw[j] += alpha * k->p[j], k->res[j] -= alpha * k->q[j];
        for (int i = 0; i < s->n; i++) k->dz[i] += alpha * k->xp[i];
        double rz1 = precondition(s, k, L), beta = rz1 / rz;
        for (int j = 0; j < m; j++) k->p[j] = k->pz[j] + beta * k->p[j];
        rz = rz1;
    }
    // The CPU products read the rows in float: the margins' change is recomputed in double
    // (else the KKT violation stalls near 1e-8 of the gradient on raw LSTM states).
    if (!k->gpu) margins_change(s, k->dw, k->dz);
    free(part);
    free(L);
    return it;
}
