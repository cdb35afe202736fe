// reduce.cuh: warp and block sums in a fixed order (butterfly, then warps in order), so a
// reduction gives the same bits every run.
#pragma once
#include "ops/ops.cuh"

__device__ inline float vadd(float a, float b) { return a + b; }
__device__ inline double vadd(double a, double b) { return a + b; }
__device__ inline float2 vadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ inline float shfl_xor(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ inline double shfl_xor(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ inline float2 shfl_xor(float2 v, int o) { return make_float2(shfl_xor(v.x, o), shfl_xor(v.y, o)); }

// A butterfly: every lane ends with the same bits (each step adds the same two values).
template <typename F>
__device__ inline F warp_sum(F v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = vadd(v, shfl_xor(v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it: the
// warps' sums, then one butterfly over them (the barrier and 5 shuffles, where a loop over
// the 32 sums took 32 dependent shared-memory reads). `buf` is shared scratch of 32
// elements; the call ends with a barrier so it can be reused.
template <typename F>
__device__ inline F block_sum(F v, F *buf) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    F s = warp_sum(lane < nw ? buf[lane] : F{});
    __syncthreads();
    return s;
}

// Threads of a CTA that takes one layer-norm row (layernorm.cu; lstm.cu, a row and gate): B = 128
// rows a step, so as many as fit.
#define ROW_THREADS 1024

// A layer norm's (mean, 1 / sqrt(variance + LN_EPS)) of x[0..C) over the block: the mean, then
// the variance summed around it, as the CPU does. buf: block_sum's scratch.
#define LN_EPS 1e-5f
__device__ inline float2 row_stats(const float *x, int C, float *buf) {
    float s = 0, ss = 0;
#pragma unroll 4
    for (int j = threadIdx.x; j < C; j += blockDim.x) s += x[j];
    const float mean = block_sum(s, buf) / C;
#pragma unroll 4
    for (int j = threadIdx.x; j < C; j += blockDim.x) ss += (x[j] - mean) * (x[j] - mean);
    return make_float2(mean, 1 / sqrtf(block_sum(ss, buf) / C + LN_EPS));
}
// A layer norm's backward over x[0..C) with st = (mean, rstd): dx = rstd * (dxh - mean(dxh) -
// xhat * mean(dxh * xhat)), dxh = dy * gain, and dxb (may be NULL) its bf16 twin, dx[j] also
// element (row, col0 + j) of the slab image so. Both sums are taken before any dx is written,
// so dx may alias dy.
__device__ inline void row_norm_bwd(real *dx, bf16 *dxb, const real *dy, const real *x, const real *gain, float2 st, int C,
                                    SlabOut so, long row, int col0) {
    __shared__ float2 buf[32];
    float2 s = {};
#pragma unroll 4
    for (int j = threadIdx.x; j < C; j += blockDim.x) {
        float dxh = dy[j] * gain[j];
        s = vadd(s, make_float2(dxh, dxh * (x[j] - st.x) * st.y));
    }
    s = block_sum(s, buf);  // both sums in one reduction
    const float m1 = s.x / C, m2 = s.y / C;
#pragma unroll 4
    for (int j = threadIdx.x; j < C; j += blockDim.x) {
        const float v = st.y * (dy[j] * gain[j] - m1 - (x[j] - st.x) * st.y * m2);
        put(dx, dxb, j, v);
        so.put(row, col0 + j, v);
    }
}

// (mean, rstd) stored at st[0], st[1] by thread 0.
__device__ inline void put_stats(real *st, float2 v) {
    if (threadIdx.x) return;
    st[0] = v.x;
    st[1] = v.y;
}

// Column sums of an [N, R] matrix given element by element as f(n, r), over rows [n0, n1),
// for the CTA's 32 columns: blockDim (32, L); lane y sums rows n0 + y, n0 + y + L, ... in
// order, then the lanes are added in order (one fixed order for a given shape). Thread
// (x, 0) gets the sum of column r; r past R sums nothing.
// f may return a float2: two sums at once (a layer norm's dbias and dgain from one read).
#define COL_LANES 32
template <int L = COL_LANES, typename F>
__device__ inline auto col_sum(F f, long n0, long n1, int r, int R) {
    using V = decltype(f(0L, 0));
    __shared__ V part[L][33];
    V s = {};
    if (r < R) {
#pragma unroll 4
        for (long n = n0 + threadIdx.y; n < n1; n += L) s = vadd(s, f(n, r));
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    V t = {};
    if (threadIdx.y == 0)
        for (int y = 0; y < L; y++) t = vadd(t, part[y][threadIdx.x]);
    return t;
}
static inline dim3 col_threads(int lanes = COL_LANES) { return dim3(32, lanes); }

// A layer norm's parameter gradients over N rows of dy, x [N, C]: dbias[c] += sum_n dy[n][c],
// dgain[c] += sum_n dy[n][c] * xhat[n][c] (either may be NULL), in col_sum's order. Columns
// are normed in groups of `group` (the LSTM's 4 gates: H; a plain layer norm: C), group k of
// row n by stat[n * SS + 2k] = (mean, rstd). A CTA of col_threads(L) per 32 columns.
template <int SS, int L>
__global__ void norm_param_grad_kernel(real *dgain, real *dbias, const real *dy, const real *x, const real *stat, int N, int C,
                                       int group) {
    pdl_enter();
    const int j = blockIdx.x * 32 + threadIdx.x, k = 2 * (j / group);
    float2 s = col_sum<L>([&](long n, int c) {
        float d = dy[n * C + c];
        return make_float2(d, d * (x[n * C + c] - stat[n * SS + k]) * stat[n * SS + k + 1]);
    }, 0, N, j, C);
    if (threadIdx.y || j >= C) return;
    if (dbias) dbias[j] += s.x;
    if (dgain) dgain[j] += s.y;
}
