// lstm_seq_dense.cu: the recurrent engine's path for a dense mask (every block of W_h
// present; the dense baseline model). The step kernels gather a 32-column activation slab per
// stored block, which for a dense W_h is the same slab 64 times per step (H = 2048); a GEMM
// reads each activation row once. So each step here is one cuBLAS product on a row-major copy
// of W_h (gathered from the blocked layout once per window), then the cell kernels of lstm.cu,
// all captured into the engine's graphs; dW_h is one product over the window, scattered back
// into the blocked gradient. CPU twin: the per-step loop of src/model/model_step.c.
#include <type_traits>
#include "engine/lstm_seq_host.cuh"

// Element (r, c) of a dense block-32 matrix [R, C] in its blocked layout: block (r/32, c/32)
// at row-major block index r/32 * C/32 + c/32, each block 32 x 32 row-major (bsmat.h).
__device__ inline long blocked_at(long r, long c, int C) {
    return (r / SQ_BS * (C / SQ_BS) + c / SQ_BS) * SQ_BS * SQ_BS + r % SQ_BS * SQ_BS + c % SQ_BS;
}

template <typename T>
__global__ void blocked_to_rows_kernel(T *dst, const T *src, int R, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)R * C; i += (long)gridDim.x * blockDim.x)
        dst[i] = src[blocked_at(i / C, i % C, C)];
}

__global__ void rows_add_to_blocked_kernel(real *dst, const float *src, int R, int C) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)R * C; i += (long)gridDim.x * blockDim.x)
        dst[blocked_at(i / C, i % C, C)] += src[i];
}

void seq_dense_alloc(Seq *s) {
    size_t n = 4 * (size_t)s->a.H * s->a.H;
    CUDA_CHECK(cudaMalloc(&s->wd, n * (s->bf ? sizeof(bf16) : sizeof(float))));
    CUDA_CHECK(cudaMalloc(&s->dwd, n * sizeof(float)));
}

// The products are written, as in matmul.cu, on the column-major views (the transposes) of
// the row-major buffers.
template <bool BF>
void seq_dense_record_fwd(const Seq *s, const void *w, int T) {
    typedef typename std::conditional<BF, bf16, float>::type W;
    const SeqArgs &a = s->a;
    const int G = 4 * a.H;
    size_t BH = (size_t)a.B * a.H, BG = (size_t)a.B * G;
    CUBLAS_CHECK(cublasSetStream(g_cuda.blas, s->stream));
    blocked_to_rows_kernel<W><<<grid_for((size_t)G * a.H, 256), 256, 0, s->stream>>>((W *)s->wd, (const W *)w, G, a.H);
    LAUNCH_CHECK();
    if (BF) to_bf16(s->hb, a.h, BH, s->stream);
    if (a.xtab) embed_fwd_cuda(a.z, a.xtab, a.tok, T * a.B, G, s->stream);  // z = the bytes' table rows
    for (int t = 0; t < T; t++) {
        real *z = a.z + t * BG, *h1 = a.h + (t + 1) * BH;
        // z_t^T [4H, B] += W_h [4H, H] h_t^T [H, B]
        blas_gemm<BF>(CUBLAS_OP_T, CUBLAS_OP_N, G, a.B, a.H, s->wd, a.H, seq_h_operand(s, t), a.H, 1.f, z, G);
        lstm_fwd_on(s->stream, h1, a.c + (t + 1) * BH, a.act + t * BG, a.ln_gain ? a.lnstat + t * (size_t)a.B * 8 : NULL,
                    z, a.c + t * BH, a.bias, a.ln_gain, a.B, a.H, BF ? s->hb + (t + 1) * BH : NULL);
    }
    CUBLAS_CHECK(cublasSetStream(g_cuda.blas, 0));
}

template <bool BF>
void seq_dense_record_bwd(const Seq *s, int T) {
    const SeqArgs &a = s->a;
    const int G = 4 * a.H;
    size_t BH = (size_t)a.B * a.H, BG = (size_t)a.B * G;
    // dh^T [H, B] += W_h^T [H, 4H] dz^T [4H, B]
    auto dh_add = [&](real *dh, int t) {
        blas_gemm<BF>(CUBLAS_OP_N, CUBLAS_OP_N, a.H, a.B, G, s->wd, a.H, seq_dz_operand(s, t), G, 1.f, dh, a.H);
    };
    CUBLAS_CHECK(cublasSetStream(g_cuda.blas, s->stream));
    CUDA_CHECK(cudaMemsetAsync(a.dh, 0, BH * sizeof(real), s->stream));
    CUDA_CHECK(cudaMemsetAsync(a.dc, 0, BH * sizeof(real), s->stream));
    for (int t = T - 1; t >= 0; t--) {
        real *dh = a.dh + (t + 1) * BH, *dz = a.dz + t * BG;
        if (t < T - 1) dh_add(dh, t + 1);
        // dbias: per step under layer norm (before dz passes through it), else once after the window
        lstm_bwd_on(s->stream, dz, a.dc, a.ln_gain ? a.dbias : NULL, a.dln_gain, dh, a.dc, a.act + t * BG, a.c + (t + 1) * BH,
                    a.c + t * BH, a.z + t * BG, a.ln_gain ? a.lnstat + t * (size_t)a.B * 8 : NULL, a.ln_gain, a.B, a.H,
                    BF ? s->dzb + t * BG : NULL);
    }
    dh_add(a.dh, 0);  // the carried h's gradient
    CUBLAS_CHECK(cublasSetStream(g_cuda.blas, 0));
}

// dW_h [4H, H] = dz^T h over the window's T*B rows (dW_h^T [H, 4H] = h^T [H, N] dz [N, 4H]),
// added into the blocked gradient; without layer norm, dbias too.
template <bool BF>
void seq_dense_bwd_weight(const Seq *s, int T) {
    const SeqArgs &a = s->a;
    const int G = 4 * a.H;
    if (!a.ln_gain) colsum_acc(a.dbias, a.dz, T * a.B, G);
    blas_gemm<BF>(CUBLAS_OP_N, CUBLAS_OP_T, a.H, G, T * a.B, seq_h_operand(s, 0), a.H, seq_dz_operand(s, 0), G, 0.f,
                  s->dwd, a.H);
    rows_add_to_blocked_kernel<<<grid_for((size_t)G * a.H, 256), 256>>>(a.dwh, s->dwd, G, a.H);
    LAUNCH_CHECK();
}

template void seq_dense_record_fwd<false>(const Seq *, const void *, int);
template void seq_dense_record_fwd<true>(const Seq *, const void *, int);
template void seq_dense_record_bwd<false>(const Seq *, int);
template void seq_dense_record_bwd<true>(const Seq *, int);
template void seq_dense_bwd_weight<false>(const Seq *, int);
template void seq_dense_bwd_weight<true>(const Seq *, int);
