// logreg_gram.c: the Hessian of the loss on a set of columns, E_W^T D E_W with the
// intercept's column of ones, formed explicitly in double. Features of a char-LM are so
// strongly correlated (MR cell states: eigenvalues of the correlation matrix from 185 down to
// 2.5e-5) that coordinate descent and conjugate gradients crawl, while one Cholesky solve
// with this block is an exact Newton step. It costs n m^2 / 2 multiply-adds, done in cache-
// sized blocks of the output, eight rows at a time.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "probe/logreg_cuda.h"

#define GB 8                 // rows of R per pass over a block of H
#define BLOCK_DOUBLES 32768  // a block of H rows fits in L2 (256 KB)
#define PAR_MIN (1L << 24)   // smaller blocks are formed on one thread

// h[a][0..a] += sum_r x_r[a] x_r[0..a] for the GB rows x_r (stride ld), a in [a0, a1).
SW_AVX2_CLONES
static void rank8_update(const double *x, long ld, int a0, int a1, double *H, int m1) {
    const double *x0 = x, *x1 = x + ld, *x2 = x + 2 * ld, *x3 = x + 3 * ld, *x4 = x + 4 * ld, *x5 = x + 5 * ld,
                 *x6 = x + 6 * ld, *x7 = x + 7 * ld;
    for (int a = a0; a < a1; a++) {
        double t0 = x0[a], t1 = x1[a], t2 = x2[a], t3 = x3[a], t4 = x4[a], t5 = x5[a], t6 = x6[a], t7 = x7[a];
        double *h = H + (size_t)a * m1;
        #pragma omp simd
        for (int b = 0; b <= a; b++)
            h[b] += ((t0 * x0[b] + t1 * x1[b]) + (t2 * x2[b] + t3 * x3[b])) +
                    ((t4 * x4[b] + t5 * x5[b]) + (t6 * x6[b] + t7 * x7[b]));
    }
}

static void rank1_update(const double *x, int a0, int a1, double *H, int m1) {
    for (int a = a0; a < a1; a++)
        for (int b = 0; b <= a; b++) H[(size_t)a * m1 + b] += x[a] * x[b];
}

// R [n][m + 1]: row i of E on cols times sqrt(D_i), then sqrt(D_i) (the intercept's column).
static double *scaled_rows(const LrSolver *s, const int *cols, int m, const double *D) {
    double *R = xmalloc((size_t)s->n * (m + 1) * sizeof(double));
    #pragma omp parallel for schedule(static) if ((long)s->n * m >= PAR_MIN)
    for (int i = 0; i < s->n; i++) {
        double sd = sqrt(D[i]), *r = R + (size_t)i * (m + 1);
        const real *e = s->xr + (size_t)i * s->d;
        for (int a = 0; a < m; a++) r[a] = sd * e[cols[a]];
        r[m] = sd;
    }
    return R;
}

// Blocks of H rows [edge(k), edge(k + 1)) of equal area: row a holds a + 1 entries.
static int block_edge(int k, int nblk, int m1) { return k == nblk ? m1 : (int)(m1 * sqrt((double)k / nblk)); }

void gram_block(const LrSolver *s, const int *cols, int m, const double *D, double *H) {
    int m1 = m + 1, n = s->n, nblk = (int)((long)m1 * m1 / 2 / BLOCK_DOUBLES) + 2;
    double *R = scaled_rows(s, cols, m, D);
    memset(H, 0, (size_t)m1 * m1 * sizeof(double));
    // Each block of H rows sums over all rows of R in the same order: threads never change bits.
    #pragma omp parallel for schedule(dynamic, 1) if ((long)n * m1 * m1 >= 2 * PAR_MIN)
    for (int blk = 0; blk < nblk; blk++) {
        int a0 = block_edge(blk, nblk, m1), a1 = block_edge(blk + 1, nblk, m1), i = 0;
        for (; i + GB <= n; i += GB) rank8_update(R + (size_t)i * m1, m1, a0, a1, H, m1);
        for (; i < n; i++) rank1_update(R + (size_t)i * m1, a0, a1, H, m1);
    }
    free(R);
    for (int a = 0; a < m1; a++)
        for (int b = a + 1; b < m1; b++) H[(size_t)a * m1 + b] = H[(size_t)b * m1 + a];
}

// ---- the model a fit keeps (LrHess) ----

void hess_reserve(LrHess *hm, int m) {
    if (hm->G && m <= hm->cap) return;
    size_t m1 = m + 1;
    hm->cols = xrealloc(hm->cols, m1 * sizeof(int));
    hm->G = xrealloc(hm->G, m1 * m1 * sizeof(double));
    hm->L = xrealloc(hm->L, (m1 * m1 + 7 * m1) * sizeof(double));
    hm->cap = m;
}

void hess_form(const LrSolver *s, Work *k) {
    LrHess *hm = k->hm;
#ifdef SW_CUDA
    if (k->gpu) lr_cuda_gram(k->gpu, s, hm->cols, hm->m, k->D, hm->G);
    else
#endif
        gram_block(s, hm->cols, hm->m, k->D, hm->G);
    hm->Cg = k->C;
    hm->refresh = hm->factored = 0;
}
