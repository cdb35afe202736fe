// block_norms.cu: RigL's grow scores, the block norms of a dense weight gradient (CPU twin:
// src/ops/block_norms_cpu.c). The gradient is a score, not a step: fp32 mode multiplies on
// the TF32 tensor cores, bf16 mode takes the operands' bf16 twins, fp32 accumulate either way.
#include "ops/reduce.cuh"

// dW^T[C,R] = x^T[C,N] dy[N, c0 : c0+R] (column-major views, as in matmul.cu).
template <bool BF>
void dense_grad_cuda(real *dW, const real *dy, int ldy, int c0, const real *x, int N, int C, int R) {
    const float one = 1.f, zero = 0.f;
    const size_t esz = BF ? sizeof(bf16) : sizeof(real);
    const char *dyo = (const char *)act_operand<BF>(dy, (size_t)N * ldy, SCRATCH_DYBF16);
    const cudaDataType_t in = BF ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasGemmEx(g_cuda.blas, CUBLAS_OP_N, CUBLAS_OP_T, C, R, N, &one,
                              act_operand<BF>(x, (size_t)N * C, SCRATCH_XBF16), in, C, dyo + (size_t)c0 * esz, in, ldy,
                              &zero, dW, CUDA_R_32F, C, BF ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32,
                              CUBLAS_GEMM_DEFAULT));
}

// One warp a block: its lanes read bs-wide rows, then a butterfly.
__global__ void block_sumsq_kernel(real *sq, const real *W, int R, int C, int bs) {
    const int lane = threadIdx.x % 32, nbc = C / bs, warps = blockDim.x / 32;
    const long nblk = (long)(R / bs) * nbc;
    for (long b = (long)blockIdx.x * warps + threadIdx.x / 32; b < nblk; b += (long)gridDim.x * warps) {
        const real *w = W + (b / nbc) * bs * (long)C + (b % nbc) * bs;
        float s = 0;
        for (int i = lane; i < bs * bs; i += 32) {
            float v = w[(long)(i / bs) * C + i % bs];
            s += v * v;
        }
        s = warp_sum(s);
        if (!lane) sq[b] = s;
    }
}

void block_sumsq_cuda(real *sq, const real *W, int R, int C, int bs) {
    size_t nblk = (size_t)(R / bs) * (C / bs);
    if (!nblk) return;
    block_sumsq_kernel<<<grid_for(nblk * 32, 256), 256, 0, g_cuda.stream>>>(sq, W, R, C, bs);
    LAUNCH_CHECK();
}

template void dense_grad_cuda<false>(real *, const real *, int, int, const real *, int, int, int);
template void dense_grad_cuda<true>(real *, const real *, int, int, const real *, int, int, int);
