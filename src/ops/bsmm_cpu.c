// bsmm_cpu.c: block-sparse matmul, W is w->rows x w->cols with stored bs x bs blocks
// (see bsmat.h). CPU reference. Every output block is owned by one loop iteration, so
// there are no races and the sums run in a fixed order.
#include "ops/backend.h"
#include "ops/gemm_cpu.h"
#include <stdlib.h>
#include <string.h>

static const real **ptr_array(int n) { return xmalloc(sizeof(real *) * ((size_t)n + 1)); }

// out[N, ngroups*bs] (=|+=): block column g of out sums the segments seg_ptr[g] ..
// seg_ptr[g+1]-1, each an [N, bs] slice a[s] of a matrix with row length lda times a bs x bs
// block b[s]. One kernel call per (chunk of N, group); each owns its piece of out.
static void bsmm_groups(real *out, const int *seg_ptr, int ngroups, const real **a, const real **b,
                        long lda, int bs, int N, int acc) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (int ch = 0; ch < gemm_nchunks(N); ch++)
        for (int g = 0; g < ngroups; g++) {
            int s0 = seg_ptr[g];
            GemmTerms t = {.nseg = seg_ptr[g + 1] - s0, .K = bs, .a = a + s0, .b = b + s0,
                           .lda = lda, .ska = 1, .ldb = bs};
            gemm_rows(out + (long)g * bs, (long)ngroups * bs, &t, NULL, ch * GEMM_CHUNK,
                      gemm_chunk_end(ch, N), bs, acc);
        }
}

// y[N,rows] (=|+=) x[N,cols] W^T, a group per block row (CSR). The blocks are transposed
// first so the vector lanes run along the block's output rows (contiguous in y).
void bsmm_fwd_cpu(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc) {
    int bs = w->bs;
    long bb = (long)bs * bs;
    real *wt = xmalloc(sizeof(real) * (size_t)(bsmat_nvals(w) + 1));
    const real **a = ptr_array(w->nnzb), **b = ptr_array(w->nnzb);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < w->nnzb; k++) {
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < bs; j++) wt[k * bb + j * bs + i] = vals[k * bb + i * bs + j];
        a[k] = x + (long)w->col_idx[k] * bs;
        b[k] = wt + k * bb;
    }
    bsmm_groups(y, w->row_ptr, w->nbr, a, b, w->cols, bs, N, acc);
    free(wt); free(a); free(b);
}

// dx[N,cols] (=|+=) dy[N,rows] W, a group per block column (the CSC view); the blocks are
// used as stored.
void bsmm_bwd_data_cpu(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc) {
    const real **a = ptr_array(w->nnzb), **b = ptr_array(w->nnzb);
    for (int p = 0; p < w->nnzb; p++) {
        a[p] = dy + (long)w->csc_row[p] * w->bs;
        b[p] = vals + (long)w->csc_blk[p] * w->bs * w->bs;
    }
    bsmm_groups(dx, w->col_ptr, w->nbc, a, b, w->rows, w->bs, N, acc);
    free(a); free(b);
}

// Rows [n0, n0+len) of src [N, nb*bs] as dst [nb][len][bs]: each block column's slice of
// the chunk becomes contiguous. (Strided rows of a power-of-two width would all land in
// the same few L1 sets.)
static void pack_block_cols(real *dst, const real *src, int n0, int len, int nb, int bs) {
    #pragma omp parallel for schedule(static)
    for (int c = 0; c < nb; c++)
        for (int n = 0; n < len; n++)
            memcpy(dst + ((long)c * len + n) * bs, src + (long)(n0 + n) * nb * bs + (long)c * bs, sizeof(real) * (size_t)bs);
}

// dvals[k] += dy[:, block-row rows]^T x[:, block-col cols]. N is taken in chunks (packed
// first); within a chunk one kernel call per block, in CSC order so that neighbours share
// their x columns. Each element sums its n in order across chunks.
#define BWD_WEIGHT_CHUNK 256
void bsmm_bwd_weight_cpu(real *dvals, const real *dy, const real *x, const BsMat *w, int N) {
    int bs = w->bs;
    long bb = (long)bs * bs;
    real *dyp = xmalloc(sizeof(real) * BWD_WEIGHT_CHUNK * (size_t)w->rows);
    real *xp = xmalloc(sizeof(real) * BWD_WEIGHT_CHUNK * (size_t)w->cols);
    for (int n0 = 0; n0 < N; n0 += BWD_WEIGHT_CHUNK) {
        int len = N - n0 < BWD_WEIGHT_CHUNK ? N - n0 : BWD_WEIGHT_CHUNK;
        pack_block_cols(dyp, dy, n0, len, w->nbr, bs);
        pack_block_cols(xp, x, n0, len, w->nbc, bs);
        #pragma omp parallel for schedule(static)
        for (int p = 0; p < w->nnzb; p++) {
            int k = w->csc_blk[p];
            gemm_rows_acc_long_k(dvals + k * bb, bs, dyp + (long)w->csc_row[p] * len * bs, 1, bs,
                                 xp + (long)w->col_idx[k] * len * bs, bs, len, 0, bs, bs);
        }
    }
    free(dyp); free(xp);
}
