// gen_dev.cuh: the device pieces both sampling loops are made of (gen_loop.cu, the plain
// cell; gen_mlstm.cu, the mLSTM): the grid barrier, a 16-byte dot with h, the draw (as
// sample_byte), the cell's units and the fixed-order sums of the layer norms' statistics.
#pragma once
#include "engine/gen_loop.cuh"
#include "ops/reduce.cuh"
#include "base/rng.h"

// The draw's shared scratch: logits, then the candidates in the CPU's order (probability
// descending, ties in byte order: the sort's exchange, each place's byte) and their running sums.
struct GenScratch {
    __align__(16) float logit[256];
    unsigned long long key[256];
    double cp[256], wsum[GEN_WARPS];
    double wst[GEN_WARPS][8], tot[8];  // the layer norms' sums: each warp's, then the grid's
    int sid[256], first, pick;
    float wmax[GEN_WARPS];
    int warg[GEN_WARPS];
};

// Every CTA arrives, then waits until all have: a monotone counter (reset per launch), so
// no sense to flip. The release/acquire pair orders each CTA's writes before every other's reads.
__device__ inline void grid_barrier(unsigned long long *bar, unsigned long long target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(bar) : "memory");
        unsigned long long v;
        do asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(bar) : "memory");
        while (v < target);
    }
    __syncthreads();
}

// A loop kernel's CTAs an SM holds with smem bytes of shared memory, and its cooperative launch.
template <typename K>
static int loop_ctas_per_sm(K kernel, size_t smem) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int n = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, GEN_THREADS, smem));
    return n;
}
template <typename K>
static void loop_launch(K kernel, const GenLaunch &a, int grid, size_t smem) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    launch_attr(attr_cooperative(), kernel, dim3(grid), dim3(GEN_THREADS), smem, g_cuda.stream, a);
}

__device__ inline void grid_sync(const GenLaunch &a, unsigned long long &nbar) { grid_barrier(a.bar, ++nbar * gridDim.x); }

// n 16-byte words from global src to shared dst, by the whole CTA (no barrier): 8 loads a
// thread in flight before their stores, through L2 (src may hold other CTAs' last writes).
__device__ inline void copy16(void *dst, const void *src, size_t n) {
    enum { U = 8 };
    for (size_t q0 = threadIdx.x; q0 < n; q0 += U * blockDim.x) {
        uint4 x[U];
#pragma unroll
        for (int u = 0; u < U && q0 + u * blockDim.x < n; u++) x[u] = __ldcg((const uint4 *)src + q0 + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < U && q0 + u * blockDim.x < n; u++) ((uint4 *)dst)[q0 + u * blockDim.x] = x[u];
    }
}

// How a warp reads a 32 x 32 block of W: 16 bytes a lane a load, V values of row
// (it*32 + lane) / LPR, LPR lanes a row, NL loads a lane.
template <typename W>
struct Lanes {
    enum { V = 16 / sizeof(W), LPR = 32 / V, NL = GEN_BLOCK / V / 32 };
};

// 16 bytes of weights (8 bf16 or 4 floats) dotted with h[0..V) (16-byte aligned: read as float4).
template <typename W>
__device__ inline float dot16(uint4 u, const float *h);
template <>
__device__ inline float dot16<bf16>(uint4 u, const float *h) {
    const __nv_bfloat162 *p = (const __nv_bfloat162 *)&u;
    const float4 a = *(const float4 *)h, b = *(const float4 *)(h + 4);
    const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    float s = 0;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        float2 f = __bfloat1622float2(p[q]);
        s = fmaf(f.x, x[2 * q], s);
        s = fmaf(f.y, x[2 * q + 1], s);
    }
    return s;
}
template <>
__device__ inline float dot16<float>(uint4 u, const float *h) {
    const float4 f = *(const float4 *)&u, x = *(const float4 *)h;
    return f.x * x.x + f.y * x.y + f.z * x.z + f.w * x.w;
}

// A lane's row sums reduced over its LPR lanes into the 32 sums dst, then zeroed.
template <typename W>
__device__ inline void put_sums(float *acc, float *dst) {
    using L = Lanes<W>;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int it = 0; it < L::NL; it++) {
        float s = acc[it];
        for (int o = 1; o < L::LPR; o <<= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane % L::LPR == 0) dst[it * L::V + lane / L::LPR] = s;
        acc[it] = 0;
    }
}

// The block's threads' inclusive prefix sums of v (thread order).
static __device__ double block_scan(double v, GenScratch *sc) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 1; o < 32; o <<= 1) {
        double u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    if (lane == 31) sc->wsum[warp] = v;
    __syncthreads();
    for (int w = 0; w < warp; w++) v += sc->wsum[w];
    return v;
}

// The first index of the largest logit (sampler.c argmax), in every thread.
static __device__ int block_argmax(float l, GenScratch *sc) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int i = threadIdx.x;
    for (int o = 16; o; o >>= 1) {
        float l2 = __shfl_xor_sync(0xffffffffu, l, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (l2 > l || (l2 == l && i2 < i)) l = l2, i = i2;
    }
    if (lane == 0) sc->wmax[warp] = l, sc->warg[warp] = i;
    __syncthreads();
    int best = sc->warg[0];
    for (int w = 1; w < GEN_WARPS; w++)
        if (sc->wmax[w] > sc->logit[best] || (sc->wmax[w] == sc->logit[best] && sc->warg[w] < best)) best = sc->warg[w];
    return best;
}

// Sorts the 256 candidates as sample_byte does (logit descending, as exp keeps their order;
// ties in byte order; logits whose p underflows to 0 may order otherwise, and add nothing to
// any sum): thread i ends holding the key of place i. Bitonic, on unique 40-bit keys
// (the logit's bits made orderable, then 255 - byte); strides under 32 within a warp by shuffle.
static __device__ unsigned long long sort_candidates(float l, GenScratch *sc) {
    const int i = threadIdx.x;
    const unsigned b = __float_as_uint(l + 0.f);  // -0 as +0: they tie on the CPU
    unsigned long long k = ((unsigned long long)(b & 0x80000000u ? ~b : b | 0x80000000u) << 8) | (unsigned)(255 - i);
    for (int size = 2; size <= 256; size <<= 1)
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            unsigned long long o;
            if (stride < 32) o = __shfl_xor_sync(0xffffffffu, k, stride);
            else {
                sc->key[i] = k;
                __syncthreads();
                o = sc->key[i ^ stride];
                __syncthreads();
            }
            // Descending within blocks whose bit `size` is clear: the lower place keeps the larger.
            const bool lower = (i & stride) == 0, desc = (i & size) == 0;
            k = lower == desc ? (k > o ? k : o) : (k < o ? k : o);
        }
    return k;
}

// sample_byte over sc->logit (thread i: byte i, then place i of the sorted candidates); every
// thread draws from its own copy of the generator, so all copies (in every CTA) stay equal. The sums run in another order
// than the CPU's: a draw can differ only where u falls within rounding of a boundary.
static __device__ int gen_draw(GenScratch *sc, const GenLaunch &a, uint64_t *rs) {
    const int i = threadIdx.x;
    if (a.temperature <= 0) return block_argmax(sc->logit[i], sc);
    const int id = 255 - (int)(sort_candidates(sc->logit[i], sc) & 0xff);  // place i's byte
    sc->sid[i] = id;
    if (i == 0) sc->first = 256, sc->pick = 256;
    __syncthreads();
    const double p = exp(((double)sc->logit[id] - (double)sc->logit[sc->sid[0]]) / a.temperature);
    const double cp = block_scan(p, sc);
    sc->cp[i] = cp;
    __syncthreads();
    const double sum = sc->cp[255];
    int keep = a.top_k > 0 && a.top_k < 256 ? a.top_k : 256;
    if (a.top_p < 1 && i < keep && cp / sum >= a.top_p) atomicMin(&sc->first, i);
    __syncthreads();
    if (sc->first < keep) keep = sc->first + 1;
    const double u = xoshiro_uniform(rs) * sc->cp[keep - 1];
    if (i < keep && cp > u) atomicMin(&sc->pick, i);
    __syncthreads();
    return sc->sid[sc->pick < keep ? sc->pick : keep - 1];
}

// A warp runs 8 units, lane g*8 + u holding gate g of unit u; j < 0: none (gen_max_units).
__device__ inline int cell_unit(int H) {
    const int j = (blockIdx.x * GEN_WARPS + threadIdx.x / 32) * 8 + threadIdx.x % 8;
    return j < H ? j : -1;
}

// The cell from each lane's gate pre-activation z: the gates meet in lanes u; c and h as
// lstm_fwd (its fast activations).
static __device__ void lstm_units(const GenLaunch &a, int j, float z, float *h_out) {
    const int lane = threadIdx.x % 32, u = lane % 8;
    const float zi = __shfl_sync(0xffffffffu, z, u), zf = __shfl_sync(0xffffffffu, z, 8 + u);
    const float zg = __shfl_sync(0xffffffffu, z, 16 + u), zo = __shfl_sync(0xffffffffu, z, 24 + u);
    if (j < 0 || lane >= 8) return;
    const float c = sigm(zf) * a.c[j] + sigm(zi) * tnh(zg);
    a.c[j] = c;
    h_out[j] = sigm(zo) * tnh(c);
}

// The block's sums of v[0..n) (n <= 8), in a fixed order (a shuffle tree, then the warps in
// turn), written by thread 0 to out. Every thread takes part.
static __device__ void block_sums(double *v, int n, GenScratch *sc, double *out) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (k >= n) break;
        v[k] = warp_sum(v[k]);
        if (lane == 0) sc->wst[warp][k] = v[k];
    }
    __syncthreads();
    if (threadIdx.x < n) {
        double t = 0;
        for (int w = 0; w < GEN_WARPS; w++) t += sc->wst[w][threadIdx.x];
        out[threadIdx.x] = t;
    }
}

// The norm sums of G runs of R block rows each (stage.stat; G = 1: an internal norm, 4: the
// gates'): thread b loads row b of each run (one round trip for all); grid_sums adds them in
// block_sums' fixed order, the same in every CTA, into sc->tot (run g: tot[2g], tot[2g + 1]).
// Split in two so that other loads can fly between.
__device__ inline void row_stat_loads(const double2 *stat, int R, int G, double *v) {
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = 0;
    for (int b = threadIdx.x; b < R; b += blockDim.x)
#pragma unroll
        for (int g = 0; g < 4; g++)
            if (g < G) {
                const double2 t = __ldcg(stat + (size_t)g * R + b);
                v[2 * g] += t.x, v[2 * g + 1] += t.y;
            }
}
static __device__ void grid_sums(double *v, int n, GenScratch *sc) {
    block_sums(v, n, sc, sc->tot);
    __syncthreads();
}

// Mean and 1 / sqrt(biased variance + eps) of H values from their sum and sum of squares
// (in double: the subtraction keeps float's accuracy for the rows a cell sees).
__device__ inline float2 norm_stats(double sum, double sq, int H) {
    const double mean = sum / H, var = fmax(sq / H - mean * mean, 0.0);
    return make_float2((float)mean, (float)(1 / sqrt(var + 1e-5)));
}

