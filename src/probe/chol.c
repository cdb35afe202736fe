// chol.c: Cholesky factorisation (row-oriented, so the inner loops run along rows) and the
// two triangular solves.
#include "probe/chol.h"
#include "base/common.h"
#include <math.h>

// The inner products are SIMD reductions (a fixed order for a given build).

// Row a of the factor from column b0 on (its columns before b0 are done); 0 at a pivot <= 0.
static int factor_row(double *A, int a, int b0, int ld) {
    double *ra = A + (long)a * ld;
    for (int b = b0; b <= a; b++) {
        const double *rb = A + (long)b * ld;
        double acc = 0;
        #pragma omp simd reduction(+ : acc)
        for (int c = 0; c < b; c++) acc += ra[c] * rb[c];
        double v = ra[b] - acc;
        if (a == b) {
            if (!(v > 0)) return 0;
            ra[a] = sqrt(v);
        } else ra[b] = v / rb[b];
    }
    return 1;
}

// Four rows at a time: each factored row above them is read once for all four (row by row,
// every row reads the whole triangle above it, which outgrows the caches at m ~ 1000).
SW_AVX2_CLONES
int chol_factor(double *A, int m, int ld) {
    int a0 = 0;
    for (; a0 + 4 <= m; a0 += 4) {
        double *r0 = A + (long)a0 * ld, *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
        for (int b = 0; b < a0; b++) {
            const double *rb = A + (long)b * ld;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            #pragma omp simd reduction(+ : s0, s1, s2, s3)
            for (int c = 0; c < b; c++) s0 += r0[c] * rb[c], s1 += r1[c] * rb[c], s2 += r2[c] * rb[c], s3 += r3[c] * rb[c];
            r0[b] = (r0[b] - s0) / rb[b];
            r1[b] = (r1[b] - s1) / rb[b];
            r2[b] = (r2[b] - s2) / rb[b];
            r3[b] = (r3[b] - s3) / rb[b];
        }
        for (int a = a0; a < a0 + 4; a++)
            if (!factor_row(A, a, a0, ld)) return 0;
    }
    for (; a0 < m; a0++)
        if (!factor_row(A, a0, 0, ld)) return 0;
    return 1;
}

SW_AVX2_CLONES
void chol_solve(const double *L, int m, int ld, double *x) {
    for (int a = 0; a < m; a++) {  // L y = x
        const double *r = L + (long)a * ld;
        double acc = 0;
        #pragma omp simd reduction(+ : acc)
        for (int c = 0; c < a; c++) acc += r[c] * x[c];
        x[a] = (x[a] - acc) / r[a];
    }
    for (int a = m - 1; a >= 0; a--) {  // L^T x = y, by rows of L (its columns are strided)
        const double *r = L + (long)a * ld;
        double v = x[a] /= r[a];
        #pragma omp simd
        for (int c = 0; c < a; c++) x[c] -= r[c] * v;
    }
}

// Appends row h [m + 1] (the new column of A, its diagonal last) to the factor of A [m][m].
int chol_append(double *L, int m, int ld, const double *h) {
    double *r = L + (long)m * ld, acc = 0;
    for (int a = 0; a < m; a++) {   // L y = h[0..m): the new row's off-diagonal part
        const double *la = L + (long)a * ld;
        double s = 0;
        #pragma omp simd reduction(+ : s)
        for (int c = 0; c < a; c++) s += la[c] * r[c];
        r[a] = (h[a] - s) / la[a];
        acc += r[a] * r[a];
    }
    double v = h[m] - acc;
    if (!(v > 0)) return 0;
    r[m] = sqrt(v);
    return 1;
}

// Deletes row and column k of A from its factor L [m][m]: the rows below move up, and the
// trailing block takes the rank-one update with the deleted column (Givens-like sweeps).
void chol_delete(double *L, int m, int ld, int k, double *x) {
    for (int i = k + 1; i < m; i++) x[i] = L[(long)i * ld + k];
    for (int i = k + 1; i < m; i++) {
        double *dst = L + (long)(i - 1) * ld, *src = L + (long)i * ld;
        for (int c = 0; c < k; c++) dst[c] = src[c];
        for (int c = k + 1; c <= i; c++) dst[c - 1] = src[c];
    }
    for (int j = k; j < m - 1; j++) {   // L22 L22^T + x x^T, column j of the moved block
        double *ljj = L + (long)j * ld + j, xj = x[j + 1], r = sqrt(*ljj * *ljj + xj * xj);
        double c = r / *ljj, s = xj / *ljj;
        *ljj = r;
        for (int i = j + 1; i < m - 1; i++) {
            double *lij = L + (long)i * ld + j;
            *lij = (*lij + s * x[i + 1]) / c;
            x[i + 1] = c * x[i + 1] - s * *lij;
        }
    }
}
