// matmul.cu: dense matmul through cuBLAS (CPU twin: src/ops/matmul_cpu.c). W is [R, C] row-major.
//   fwd  y[N,R] (=|+=) x[N,C] W^T + bias
//   bwd  dx[N,C] = dy W; dW[R,C] += dy^T x; dbias[R] += sum_n dy
// Row-major X[a,b] is column-major X^T, so each product is written for cuBLAS on the
// transposes. fp32 mode computes in plain fp32 (no TF32); bf16 mode multiplies bf16 operands
// (the weights' shadow, activations' twins or copies) on the tensor cores, fp32 accumulate.
#include "ops/ops.cuh"

template <bool BF>
void blas_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, float beta, real *Cm, int ldc) {
    const float one = 1.0f;
    const cudaDataType_t in = BF ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasGemmEx(g_cuda.blas, ta, tb, m, n, k, &one, A, in, lda, B, in, ldb, &beta, Cm, CUDA_R_32F, ldc,
                              BF ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
}

// y[n][r] = (acc ? y[n][r] : 0) + bias[r]
__global__ void bias_rows_kernel(real *y, const real *bias, long N, int R, int acc) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N * R; i += (long)gridDim.x * blockDim.x)
        y[i] = (acc ? y[i] : 0.f) + bias[i % R];
}

template <bool BF>
void matmul_fwd_cuda(real *y, const real *x, const real *W, const real *bias, int N, int C, int R, int acc) {
    if (N <= 0) return;
    twin_none(y, (size_t)N * R, "matmul_fwd");
    if (bias) {
        bias_rows_kernel<<<grid_for((size_t)N * R, 256), 256, 0, g_cuda.stream>>>(y, bias, N, R, acc);
        LAUNCH_CHECK();
    }
    // y^T[R,N] = W[R,C] x^T[C,N]; W^T is W's column-major view (ld C), x^T is x's (ld C).
    blas_gemm<BF>(CUBLAS_OP_T, CUBLAS_OP_N, R, N, C, weight_operand<BF>(W, (size_t)R * C), C,
                  act_operand<BF>(x, (size_t)N * C, SCRATCH_XBF16), C, bias || acc ? 1.f : 0.f, y, R);
}

template <bool BF>
void matmul_bwd_cuda(real *dx, real *dW, real *dbias, const real *dy, const real *x, const real *W,
                     int N, int C, int R) {
    if (N <= 0) return;
    if (dx) twin_none(dx, (size_t)N * C, "matmul_bwd");
    const void *dyo = act_operand<BF>(dy, (size_t)N * R, SCRATCH_DYBF16);
    // dx^T[C,N] = W^T[C,R] dy^T[R,N]
    if (dx) blas_gemm<BF>(CUBLAS_OP_N, CUBLAS_OP_N, C, N, R, weight_operand<BF>(W, (size_t)R * C), C, dyo, R, 0.f, dx, C);
    // dW^T[C,R] += x^T[C,N] dy[N,R]
    blas_gemm<BF>(CUBLAS_OP_N, CUBLAS_OP_T, C, R, N, act_operand<BF>(x, (size_t)N * C, SCRATCH_XBF16), C, dyo, R, 1.f, dW, C);
    if (dbias) colsum_acc(dbias, dy, N, R);
}

template void blas_gemm<false>(cublasOperation_t, cublasOperation_t, int, int, int, const void *, int, const void *, int,
                               float, real *, int);
template void blas_gemm<true>(cublasOperation_t, cublasOperation_t, int, int, int, const void *, int, const void *, int,
                              float, real *, int);
template void matmul_fwd_cuda<false>(real *, const real *, const real *, const real *, int, int, int, int);
template void matmul_fwd_cuda<true>(real *, const real *, const real *, const real *, int, int, int, int);
template void matmul_bwd_cuda<false>(real *, real *, real *, const real *, const real *, const real *, int, int, int);
template void matmul_bwd_cuda<true>(real *, real *, real *, const real *, const real *, const real *, int, int, int);
