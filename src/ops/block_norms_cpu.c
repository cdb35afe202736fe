// block_norms_cpu.c: RigL's grow scores, the block norms of a dense weight gradient. CPU
// reference (CUDA twin: cuda/ops/block_norms.cu).
#include "ops/backend.h"
#include "ops/gemm_cpu.h"
#include <string.h>

// dW[R,C] = dy[:, c0 : c0+R]^T x, parallel over R and summed over n in order.
void dense_grad_cpu(real *dW, const real *dy, int ldy, int c0, const real *x, int N, int C, int R) {
    memset(dW, 0, sizeof(real) * (size_t)R * C);
    #pragma omp parallel for schedule(static)
    for (int ch = 0; ch < gemm_nchunks(R); ch++)
        gemm_rows_acc_long_k(dW, C, dy + c0, 1, ldy, x, C, N, ch * GEMM_CHUNK, gemm_chunk_end(ch, R), C);
}

void block_sumsq_cpu(real *sq, const real *W, int R, int C, int bs) {
    int nbc = C / bs;
    #pragma omp parallel for schedule(static)
    for (int br = 0; br < R / bs; br++)
        for (int bc = 0; bc < nbc; bc++) {
            double s = 0;
            for (int i = 0; i < bs; i++)
                for (int j = 0; j < bs; j++) {
                    double v = W[(long)(br * bs + i) * C + bc * bs + j];
                    s += v * v;
                }
            sq[(long)br * nbc + bc] = (real)s;
        }
}
