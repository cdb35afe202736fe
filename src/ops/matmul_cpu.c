// matmul_cpu.c: dense matmul (nn.Linear), W is [R, C] row-major. CPU reference.
#include "ops/backend.h"
#include "ops/gemm_cpu.h"
#include <stdlib.h>

// y[N,R] (=|+=) x[N,C] W^T + bias. W is transposed first so the kernel's vector lanes
// run along R (contiguous in y and in W^T).
void matmul_fwd_cpu(real *y, const real *x, const real *W, const real *bias, int N, int C, int R, int acc) {
    real *wt = xmalloc(sizeof(real) * ((size_t)R * C + 1));
    #pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++) wt[(long)c * R + r] = W[(long)r * C + c];
    const real *a = x, *b = wt;
    GemmTerms t = {.nseg = 1, .K = C, .a = &a, .b = &b, .lda = C, .ska = 1, .ldb = R};
    #pragma omp parallel for schedule(static)
    for (int ch = 0; ch < gemm_nchunks(N); ch++)
        gemm_rows(y, R, &t, bias, ch * GEMM_CHUNK, gemm_chunk_end(ch, N), R, acc);
    free(wt);
}

// dx[N,C] = dy W (parallel over N); dW[R,C] += dy^T x and dbias[R] += sum_n dy, each
// parallel over R and summed over n in order.
void matmul_bwd_cpu(real *dx, real *dW, real *dbias, const real *dy, const real *x, const real *W,
                    int N, int C, int R) {
    if (dx) {
        const real *a = dy, *b = W;
        GemmTerms t = {.nseg = 1, .K = R, .a = &a, .b = &b, .lda = R, .ska = 1, .ldb = C};
        #pragma omp parallel for schedule(static)
        for (int ch = 0; ch < gemm_nchunks(N); ch++)
            gemm_rows(dx, C, &t, NULL, ch * GEMM_CHUNK, gemm_chunk_end(ch, N), C, 0);
    }
    #pragma omp parallel for schedule(static)
    for (int ch = 0; ch < gemm_nchunks(R); ch++)
        gemm_rows_acc_long_k(dW, C, dy, 1, R, x, C, N, ch * GEMM_CHUNK, gemm_chunk_end(ch, R), C);
    if (dbias) {
        #pragma omp parallel for schedule(static)
        for (int ch = 0; ch < gemm_nchunks(R); ch++)
            for (int n = 0; n < N; n++)
                for (int r = ch * GEMM_CHUNK; r < gemm_chunk_end(ch, R); r++) dbias[r] += dy[(long)n * R + r];
    }
}
