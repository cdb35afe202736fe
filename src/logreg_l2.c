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
#include "gemm_cpu.h"
#include "logreg_cuda.h"
#include "rng.h"

#define PARTS 16        // fixed row parts of E^T u: the sum's order never depends on threads
#define SKETCH 64       // random directions of the range finder
#define KEEP 48         // eigenpairs kept (the leading ones of the sketch are accurate)
#define SPECTRUM_MIN_D 128
#define MAX_CG 500

// ---- the spectrum of E^T E / n ----

// Y [d][l] = E^T (E V) for V [d][l]; T [n][l] is scratch. Each output sums in a fixed order.
void gram_times(const LrSolver *s, LrCuda *gpu, const real *V, int l, real *T, real *Y) {
#ifdef SW_CUDA
    if (gpu) return lr_cuda_gram_times(gpu, s, V, l, Y);
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

// Eigen-decomposition of the symmetric A [l][l] by cyclic Jacobi rotations: A becomes
// diagonal, column k of V [l][l] its k-th eigenvector.
static void jacobi_eigen(double *A, double *V, int l) {
    for (int i = 0; i < l * l; i++) V[i] = i % (l + 1) == 0;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = 0, diag = 0;
        for (int i = 0; i < l; i++)
            for (int j = 0; j < l; j++) *(i == j ? &diag : &off) += A[i * l + j] * A[i * l + j];
        if (off <= 1e-24 * diag) break;
        for (int p = 0; p < l; p++)
            for (int q = p + 1; q < l; q++) {
                double apq = A[p * l + q];
                if (apq == 0) continue;
                double th = (A[q * l + q] - A[p * l + p]) / (2 * apq);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1)), c = 1 / sqrt(t * t + 1), sn = t * c;
                for (int k = 0; k < l; k++) {  // A <- A J, then J^T A
                    double akp = A[k * l + p], akq = A[k * l + q];
                    A[k * l + p] = c * akp - sn * akq, A[k * l + q] = sn * akp + c * akq;
                }
                for (int k = 0; k < l; k++) {
                    double apk = A[p * l + k], aqk = A[q * l + k];
                    A[p * l + k] = c * apk - sn * aqk, A[q * l + k] = sn * apk + c * aqk;
                }
                for (int k = 0; k < l; k++) {
                    double vkp = V[k * l + p], vkq = V[k * l + q];
                    V[k * l + p] = c * vkp - sn * vkq, V[k * l + q] = sn * vkp + c * vkq;
                }
            }
    }
}

void lr_solver_precondition(LrSolver *s, LrCuda *gpu) {
    int d = s->d, n = s->n, l = SKETCH;
    if (s->sp.l || d < SPECTRUM_MIN_D) return;
    real *V = xmalloc((size_t)d * l * sizeof(real)), *Y = xmalloc((size_t)d * l * sizeof(real));
    real *T = xmalloc((size_t)n * l * sizeof(real));
    double *Q = xmalloc((size_t)l * d * sizeof(double)), *A = xmalloc(l * l * sizeof(double)), *E = xmalloc(l * l * sizeof(double));
    Rng r;
    rng_seed(&r, 12345);
    for (size_t i = 0; i < (size_t)d * l; i++) V[i] = (real)rng_normal(&r);
    gram_times(s, gpu, V, l, T, Y);              // range of E^T E
    orthonormalise(Y, d, l, Q);
    for (int k = 0; k < l; k++)
        for (int j = 0; j < d; j++) V[(size_t)j * l + k] = (real)Q[(size_t)k * d + j];
    gram_times(s, gpu, V, l, T, Y);              // E^T E Q, then A = Q^T E^T E Q / n
    for (int a = 0; a < l; a++)
        for (int b = 0; b < l; b++) {
            double acc = 0;
            for (int j = 0; j < d; j++) acc += Q[(size_t)a * d + j] * Y[(size_t)j * l + b];
            A[a * l + b] = acc / n;
        }
    for (int a = 0; a < l; a++)
        for (int b = 0; b < a; b++) A[a * l + b] = A[b * l + a] = 0.5 * (A[a * l + b] + A[b * l + a]);
    jacobi_eigen(A, E, l);
    Spectrum *sp = &s->sp;
    sp->l = KEEP;
    sp->U = xcalloc((size_t)KEEP * d, sizeof(double));
    sp->s = xmalloc(KEEP * sizeof(double));
    double trace = 0, kept = 0;
    for (size_t i = 0; i < (size_t)n * d; i++) trace += (double)s->xr[i] * s->xr[i];
    unsigned char *taken = xcalloc(l, 1);
    for (int k = 0; k < KEEP; k++) {        // the k-th largest eigenpair: U_k = Q^T (column of E)
        int best = -1;
        for (int m = 0; m < l; m++)
            if (!taken[m] && (best < 0 || A[m * l + m] > A[best * l + best])) best = m;
        taken[best] = 1;
        sp->s[k] = fmax(A[best * l + best], 0);
        kept += sp->s[k];
        for (int m = 0; m < l; m++)
            for (int j = 0; j < d; j++) sp->U[(size_t)k * d + j] += E[m * l + best] * Q[(size_t)m * d + j];
    }
    free(taken);
    free(V); free(Y); free(T); free(Q); free(A); free(E);
    sp->bulk = fmax(trace / n - kept, 0) / (d - KEEP);
}

void lr_spectrum_free(Spectrum *sp) {
    free(sp->U);
    free(sp->s);
    memset(sp, 0, sizeof *sp);
}

// ---- the Newton step ----

#define RB 4            // rows per pass of the Hessian product: p and q are read once per 4 rows

// xp[r] = p[d] + e_r . p for the RB rows e_0.. (stride d), then q += sum_r D[r] xp[r] e_r.
__attribute__((target_clones("avx2", "default")))
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

// q = H p; xp = E p + p[d] (the change of the margins along p), u = D xp.
// One pass over E: part t of the rows sums E^T u into its own row of `part` [PARTS][d],
// then the parts are added in order, so the result does not depend on the threads.
static void hess_vec(const LrSolver *s, Work *k, double *part) {
#ifdef SW_CUDA
    if (k->gpu) return lr_cuda_hess_vec(k->gpu, s, k);
#endif
    int n = s->n, d = s->d;
    #pragma omp parallel if ((long)n * d >= 1 << 18)
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

// pz = M^-1 res, returns res . pz. M models H with D replaced by its mean over rows:
// I + sum(D) (U S U^T + bulk (I - U U^T)), inverted exactly. Without a spectrum (narrow
// problems), M = diag(H) (Jacobi). The intercept always takes its diagonal.
static double precondition(const LrSolver *s, Work *k) {
    const Spectrum *sp = &s->sp;
    int d = s->d;
    k->pz[d] = k->res[d] / k->h[d];
    if (!sp->l) {
        for (int j = 0; j < d; j++) k->pz[j] = k->res[j] / k->h[j];
        return dot(k->res, k->pz, d + 1);
    }
    double c = 0;
    for (int i = 0; i < s->n; i++) c += k->D[i];
    double rest = 1 / (1 + c * sp->bulk);
    for (int j = 0; j < d; j++) k->pz[j] = rest * k->res[j];
    for (int m = 0; m < sp->l; m++) {
        const double *u = sp->U + (size_t)m * d;
        double a = (1 / (1 + c * sp->s[m]) - rest) * dot(u, k->res, d);
        for (int j = 0; j < d; j++) k->pz[j] += a * u[j];
    }
    return dot(k->res, k->pz, d + 1);
}

void newton_cg(const LrSolver *s, Work *k, double tol) {
    int m = s->d + 1;
    double *part = xmalloc((size_t)PARTS * s->d * sizeof(double));
    for (int j = 0; j < m; j++) k->res[j] = -k->pg[j];
    memset(k->dw, 0, m * sizeof(double));
    memset(k->dz, 0, s->n * sizeof(double));
    double rz = precondition(s, k);
    memcpy(k->p, k->pz, m * sizeof(double));
    for (int it = 0; it < MAX_CG; it++) {
        double rmax = 0;
        for (int j = 0; j < m; j++) rmax = fmax(rmax, fabs(k->res[j]));
        if (rmax <= tol) break;
        hess_vec(s, k, part);
        double alpha = rz / dot(k->p, k->q, m);
        for (int j = 0; j < m; j++) k->dw[j] += alpha * k->p[j], k->res[j] -= alpha * k->q[j];
        for (int i = 0; i < s->n; i++) k->dz[i] += alpha * k->xp[i];
        double rz1 = precondition(s, k), beta = rz1 / rz;
        for (int j = 0; j < m; j++) k->p[j] = k->pz[j] + beta * k->p[j];
        rz = rz1;
    }
    free(part);
}
