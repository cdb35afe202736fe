// gemm_cpu.h: the one register-tiled kernel behind the CPU dense and block-sparse matmuls.
//
//   C[i][j] (=|+=) bias[j] + sum over segments s, k < K of A_s(i, k) * B_s[k][j]
//
// A dense matmul is one segment; a block row (or block column) of a block-sparse matrix
// is one segment per stored block. Each output element is summed in one fixed order
// (its start value, bias, then s and k ascending) and the vector lanes run along j
// (independent outputs), so the bits do not depend on tiling, SIMD width or threads
// (-std=c11 keeps a*b + c as two roundings; no FMA contraction).
#pragma once
#include "base/common.h"

typedef struct {
    int nseg, K;
    const real *const *a;  // A_s(i, k) = a[s][i*lda + k*ska]
    const real *const *b;  // B_s[k][j] = b[s][k*ldb + j]
    long lda, ska, ldb;
} GemmTerms;

// A tile is GEMM_MR rows by one 64-byte row of columns, held in registers; a half-width
// tile (8x8 blocks in float) takes twice the rows so that it still fills the registers.
#define GEMM_MR 4
#define GEMM_NR (64 / (int)sizeof(real))
// Rows per chunk when the callers split N: a chunk of activations stays in L2.
#define GEMM_CHUNK 64
static inline int gemm_nchunks(int n) { return (n + GEMM_CHUNK - 1) / GEMM_CHUNK; }
static inline int gemm_chunk_end(int ch, int n) { return ch < n / GEMM_CHUNK ? (ch + 1) * GEMM_CHUNK : n; }

static inline __attribute__((always_inline)) void gemm_tile_n(
    real *restrict c, long ldc, const GemmTerms *t, const real *bias,
    int i0, int j0, int mr, int nr, int accumulate) {
    real acc[2 * GEMM_MR][GEMM_NR];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            acc[i][j] = (accumulate ? c[(long)(i0 + i) * ldc + j0 + j] : 0) + (bias ? bias[j0 + j] : 0);
    for (int s = 0; s < t->nseg; s++) {
        const real *a = t->a[s] + (long)i0 * t->lda, *b = t->b[s] + j0;
        for (int k = 0; k < t->K; k++) {
            const real *bk = b + (long)k * t->ldb;
            for (int i = 0; i < mr; i++) {
                real aik = a[(long)i * t->lda + (long)k * t->ska];
                _Pragma("omp simd") for (int j = 0; j < nr; j++) acc[i][j] += aik * bk[j];
            }
        }
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) c[(long)(i0 + i) * ldc + j0 + j] = acc[i][j];
}

// Rows [m0, m1) and columns [0, ncols) of C. The full-size tiles get compile-time shapes
// so that `acc` lives in vector registers; the edges take the general path.
// Compiled for AVX2 too and picked at load time: same operations, so the same bits.
SW_AVX2_CLONES __attribute__((unused))
static void gemm_rows(real *c, long ldc, const GemmTerms *t, const real *bias,
                      int m0, int m1, int ncols, int accumulate) {
    for (int j0 = 0; j0 < ncols; j0 += GEMM_NR) {
        int nr = ncols - j0 < GEMM_NR ? ncols - j0 : GEMM_NR;
        int rows = nr <= GEMM_NR / 2 ? 2 * GEMM_MR : GEMM_MR;
        for (int i0 = m0; i0 < m1; i0 += rows) {
            int mr = m1 - i0 < rows ? m1 - i0 : rows;
            if (mr == GEMM_MR && nr == GEMM_NR)
                gemm_tile_n(c, ldc, t, bias, i0, j0, GEMM_MR, GEMM_NR, accumulate);
            else if (mr == 2 * GEMM_MR && nr == GEMM_NR / 2)
                gemm_tile_n(c, ldc, t, bias, i0, j0, 2 * GEMM_MR, GEMM_NR / 2, accumulate);
            else
                gemm_tile_n(c, ldc, t, bias, i0, j0, mr, nr, accumulate);
        }
    }
}

// C[m0:m1, 0:ncols] += A B with one segment and a long K (a sum over the N rows of a
// weight gradient). K is cut into chunks summed into C one after another so that a chunk
// of A and B stays in L1 across the tiles; each element still adds its terms k = 0, 1, ...
// in order (C is real, like the registers), so the bits equal those of a single pass.
#define GEMM_KCHUNK 128
__attribute__((unused))
static void gemm_rows_acc_long_k(real *c, long ldc, const real *a, long lda, long ska,
                                 const real *b, long ldb, int K, int m0, int m1, int ncols) {
    for (int k0 = 0; k0 < K; k0 += GEMM_KCHUNK) {
        const real *ak = a + (long)k0 * ska, *bk = b + (long)k0 * ldb;
        GemmTerms t = {.nseg = 1, .K = K - k0 < GEMM_KCHUNK ? K - k0 : GEMM_KCHUNK, .a = &ak, .b = &bk,
                       .lda = lda, .ska = ska, .ldb = ldb};
        gemm_rows(c, ldc, &t, NULL, m0, m1, ncols, 1);
    }
}
