// wg_bwd.cu: the wgmma backward data step (wg_bwd.h), on wg_fwd.cu's design. A persistent CTA
// an SM walks its items, each hidden block j's column list over 128 batch rows (or 64 of them
// where the list is long enough to hold the step back), dealt longest first (wg_lists.cuh).
// A list entry (block row i) brings dz_{t+1}'s four gate slabs of block i (128 rows x 32, 32 KB)
// and the four gates' blocks W[g][i][j] (8 KB): dh[:, j] += sum over g of dz_g[:, i] W[g][i][j],
// the gates along K, N = the block's 32 units. Five warpgroups: a producer's bulk copies into
// a ring of stages, two consumer warpgroups (64 rows each) on wgmma, two epilogue warpgroups
// that apply the cell's gradient while the consumers go on with the next item.
#include "base/state.cuh"
#include "base/vec4.cuh"
#include "ops/ops.cuh"
#include "wgmma/wg_bwd.h"
#include "wgmma/wg_lists.cuh"
#include "wgmma/wgmma.cuh"

namespace {

constexpr int RING = 5;                   // stages of the ring (5 x 40 KB: 230 KB in all, the most that fits)
constexpr int SLAB = 128 * 32 * 2;        // one gate's dz slab: 128 rows x 32 units, bf16
constexpr int DZ = 4 * SLAB;              // an entry's four gate slabs (the packed image keeps them together)
constexpr int WT = 32 * 32 * 2;           // one gate's block as the B operand: W[g][i][j] transposed
constexpr int STAGE = DZ + 4 * WT;
constexpr int ACC_PITCH = 40;             // floats a row of the accumulators' tile (no bank conflicts)
constexpr int ACC = 128 * ACC_PITCH * 4;  // the accumulators handed to the epilogue, row-major
constexpr int RED = 8 * 8 * 16 * 4;       // the bias sums' partials: a warp's 8 unit groups x 16
constexpr int THREADS = 5 * 128;
constexpr size_t SMEM = RING * STAGE + ACC + RED + 1024 + (2 * RING + 2) * 8;

typedef WgItem Item;

struct Args {
    WgBwdStep s;
    WgLists l;  // W_h's block columns: entry p reads dz's block row l.idx[p]
    int B, H;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // wgmma and setmaxnreg exist in sm_90a code alone
// The list's length, or 0 where the step has no product (the window's last).
__device__ inline int entries(const Args &a, const Item &it) { return a.s.dzpk ? a.l.ptr[it.j + 1] - a.l.ptr[it.j] : 0; }

// A whole item's entry is one copy of its four slabs; a half's the half's rows of each slab,
// landing where they lie in a whole stage, so that consumer `half` reads them in place.
__device__ inline void produce(const Args &a, unsigned char *ring, uint64_t *full, uint64_t *empty, int t0, int t1) {
    const int nmt = a.B / 128;
    int q = 0;
    for (int t = t0; t < t1; t++) {
        const Item it = a.l.items[t];
        const int p0 = a.l.ptr[it.j], n = entries(a, it);
        for (int i = 0; i < n; i++, q++) {
            const int s = q % RING;
            if (q >= RING) mbar_wait(empty + s, (q / RING - 1) & 1);
            unsigned char *st = ring + s * STAGE;
            const unsigned char *dz = (const unsigned char *)a.s.dzpk + ((long)a.l.idx[p0 + i] * nmt + it.m) * DZ;
            if (it.half < 0) {
                mbar_expect(full + s, STAGE);
                bulk_load(st, dz, DZ, full + s);
            } else {
                mbar_expect(full + s, DZ / 2 + 4 * WT);
                const int off = it.half * (SLAB / 2);
                for (int g = 0; g < 4; g++) bulk_load(st + g * SLAB + off, dz + g * SLAB + off, SLAB / 2, full + s);
            }
            bulk_load(st + DZ, a.l.wpk + (long)(p0 + i) * (4 * WT / 2), 4 * WT, full + s);
        }
    }
}

// One item's products into d for consumer warpgroup wg, stage q onwards (ring_consume; the
// other consumer of a half item, ACTIVE false, frees the stages).
template <bool ACTIVE>
__device__ inline void products(float (&d)[16], int wg, int n, int &q, unsigned char *ring, uint64_t *full, uint64_t *empty) {
#pragma unroll
    for (int k = 0; k < 16; k++) d[k] = 0.f;
    ring_consume<RING, ACTIVE>(n, q, ring, STAGE, full, empty, [&](unsigned char *st) {
        const uint32_t aa = smem_addr(st + wg * (SLAB / 2)), bb = smem_addr(st + DZ);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            wg_mma_n32(d, wg_desc(aa + g * SLAB), wg_desc(bb + g * WT));
            wg_mma_n32(d, wg_desc(aa + g * SLAB + 32), wg_desc(bb + g * WT + 32));
        }
    });
}

// Consumer warpgroup wg: rows 64 wg .. 64 wg + 63 of each item (of a half item, if its own).
__device__ inline void consume(const Args &a, int wg, unsigned char *ring, uint64_t *full, uint64_t *empty, float *acc,
                               uint64_t *accfull, uint64_t *accempty, int t0, int t1) {
    const int e = threadIdx.x % 256;
    int q = 0;
    for (int t = t0, u = 0; t < t1; t++, u++) {
        const Item it = a.l.items[t];
        const int n = entries(a, it);
        const bool active = it.half < 0 || it.half == wg;
        float d[16];
        if (active)
            products<true>(d, wg, n, q, ring, full, empty);
        else
            products<false>(d, wg, n, q, ring, full, empty);
        if (u > 0) mbar_wait(accempty, (u - 1) & 1);
        if (active) {  // row-major (d's layout: wgmma.cuh)
            const int row = wg * 64 + (e / 32 % 4) * 16 + (e % 32) / 4, c2 = (e % 4) * 2;
#pragma unroll
            for (int c8 = 0; c8 < 4; c8++) {
                *(float2 *)(acc + row * ACC_PITCH + c8 * 8 + c2) = make_float2(d[c8 * 4], d[c8 * 4 + 1]);
                *(float2 *)(acc + (row + 8) * ACC_PITCH + c8 * 8 + c2) = make_float2(d[c8 * 4 + 2], d[c8 * 4 + 3]);
            }
        }
        mbar_arrive(accfull);
    }
}

// The epilogue's 256 threads: bar.sync 1 among them alone.
__device__ inline void epi_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

// dbias's share of 64 rows (half h of tile m): each thread's sums over its rows, over the
// four lanes of a warp that share its units, then the 8 warps' in order: the same bits
// every run.
__device__ inline void bias_sums(const Args &a, const Item &it, int h, float (&dbs)[16], float *red) {
    const int e = threadIdx.x % 256, lane = e % 32, w = e / 32;
#pragma unroll
    for (int v = 0; v < 16; v++) {
        dbs[v] += __shfl_xor_sync(0xffffffffu, dbs[v], 8);
        dbs[v] += __shfl_xor_sync(0xffffffffu, dbs[v], 16);
    }
    if (lane < 8)
#pragma unroll
        for (int v = 0; v < 16; v++) red[(w * 8 + lane) * 16 + v] = dbs[v];
    epi_sync();
    if (e < 128) {
        const int g = e / 32, un = e % 32;
        float s = 0.f;
        for (int w2 = 0; w2 < 8; w2++) s += red[(w2 * 8 + un / 4) * 16 + g * 4 + un % 4];
        a.s.dbpart[(long)(it.m * 2 + h) * 4 * a.H + (long)g * a.H + it.j * 32 + un] = s;
    }
    epi_sync();
#pragma unroll
    for (int v = 0; v < 16; v++) dbs[v] = 0.f;
}

// Epilogue thread e takes four consecutive units of a row (8 threads a row, 32 rows a pass):
// passes 0-3 of a whole item (rows 32 p + e / 8), 2 h and 2 h + 1 of half h. Its inputs are
// loaded before the products are waited for (they depend on nothing of this step); then the
// cell's gradient as lstm_bwd computes it (engine/lstm_seq_tile.cuh cell_bwd). What is read
// once, and the row-major dz (read after the window), go through L2 evict-first, so that dc,
// c_t (next step's c_{t+1}) and the packed dz stay for the next step (docs/PERF.md).
template <int NP>
__device__ inline void finish_item(const Args &a, const Item &it, float *acc, float *red, uint64_t *accfull, uint64_t *accempty,
                                   int u) {
    const int e = threadIdx.x % 256, k = (e % 8) * 4, p0 = it.half < 0 ? 0 : 2 * it.half, nmt = a.B / 128;
    const long H = a.H, G = 4 * H, col = it.j * 32L + k;
    const bool cell = a.s.dc != NULL;
    auto row_of = [&](int p) { return (p0 + p) * 32 + e / 8; };
    auto at_of = [&](int p) { return (it.m * 128L + row_of(p)) * H + col; };
    float4 dh[NP], dc[NP], c0[NP], c1[NP];
    uint4 act[NP][2];
#pragma unroll
    for (int p = 0; p < NP; p++) {
        const long at = at_of(p);
        dh[p] = __ldcs((const float4 *)(a.s.dh + at));
        if (cell) {
            dc[p] = __ldcg((const float4 *)(a.s.dc + at));
            c0[p] = __ldcg((const float4 *)(a.s.c0 + at));
            c1[p] = __ldcs((const float4 *)(a.s.c1 + at));
            act[p][0] = __ldcs((const uint4 *)a.s.actb + at / 2);
            act[p][1] = __ldcs((const uint4 *)a.s.actb + at / 2 + 1);
        }
    }
    mbar_wait(accfull, u & 1);
    unsigned char *pk = (unsigned char *)a.s.dzpk1 + ((long)it.j * nmt + it.m) * DZ;
    float dbs[16] = {};
#pragma unroll
    for (int p = 0; p < NP; p++) {
        const long at = at_of(p), r = it.m * 128L + row_of(p);
        const float4 d4 = add4(dh[p], *(const float4 *)(acc + row_of(p) * ACC_PITCH + k));
        if (p == NP - 1) mbar_arrive(accempty);  // the last read of acc
        if (!cell) {
            *(float4 *)(a.s.dh + at) = d4;
            continue;
        }
        float dz[4][4], dco[4];
#pragma unroll
        for (int v = 0; v < 4; v++) {
            const uint4 w = act[p][v / 2];
            const float4 g4 = v % 2 ? bf16x4_unpack(w.z, w.w) : bf16x4_unpack(w.x, w.y);
            const float gi = g4.x, gf = g4.y, gg = g4.z, go = g4.w, d = lane4(d4, v), tc = tnh(lane4(c1[p], v));
            const float dct = lane4(dc[p], v) + d * go * (1 - tc * tc);
            dz[0][v] = dct * gg * gi * (1 - gi), dz[1][v] = dct * lane4(c0[p], v) * gf * (1 - gf);
            dz[2][v] = dct * gi * (1 - gg * gg), dz[3][v] = d * tc * go * (1 - go);
            dco[v] = dct * gf;
        }
        *(float4 *)(a.s.dc + at) = make_float4(dco[0], dco[1], dco[2], dco[3]);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint2 zb = make_uint2(bf16x2(dz[g][0], dz[g][1]), bf16x2(dz[g][2], dz[g][3]));
            __stcs((uint2 *)((bf16 *)a.s.dzb + r * G + g * H + col), zb);
            *(uint2 *)(pk + g * SLAB + wg_img_at(row_of(p) % 128, k)) = zb;
#pragma unroll
            for (int v = 0; v < 4; v++) dbs[g * 4 + v] += dz[g][v];
        }
        if (a.s.dbpart && (p0 + p) % 2 == 1) bias_sums(a, it, (p0 + p) / 2, dbs, red);
    }
}

__device__ inline void finish(const Args &a, float *acc, float *red, uint64_t *accfull, uint64_t *accempty, int t0, int t1) {
    for (int t = t0, u = 0; t < t1; t++, u++) {
        const Item it = a.l.items[t];
        if (it.half < 0)
            finish_item<4>(a, it, acc, red, accfull, accempty, u);
        else
            finish_item<2>(a, it, acc, red, accfull, accempty, u);
    }
}
#endif

__global__ void __launch_bounds__(THREADS, 1) bwd_kernel(Args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char smem_raw[];
    unsigned char *ring = smem_aligned(smem_raw);
    float *acc = (float *)(ring + RING * STAGE), *red = acc + ACC / 4;
    uint64_t *full = (uint64_t *)(ring + RING * STAGE + ACC + RED), *empty = full + RING, *accfull = empty + RING,
             *accempty = accfull + 1;
    ring_init<RING>(full, empty);
    if (threadIdx.x == 0) mbar_init(accfull, 256), mbar_init(accempty, 256), mbar_init_fence();
    __syncthreads();
    const int role = threadIdx.x / 128, t0 = a.l.first[blockIdx.x], t1 = a.l.first[blockIdx.x + 1];
    if (role == 4) {  // 24 + 2 x 48 + 2 x 176 registers: the launch's 5 x 96
        wg_regs_down<24>();
        if (threadIdx.x == 4 * 128) produce(a, ring, full, empty, t0, t1);
    } else if (role < 2) {
        wg_regs_down<48>();
        consume(a, role, ring, full, empty, acc, accfull, accempty, t0, t1);
    } else {
        wg_regs_up<176>();
        finish(a, acc, red, accfull, accempty, t0, t1);
    }
#endif
}

// Entry p's gate g as the B operand (N = the block column's 32 units, K = the block row's):
// row u, column k of its 2 KB image holds W[g][i][j]'s element (k, u).
__global__ void pack_w_kernel(bf16 *wpk, const bf16 *w, const int *blk, long gstride, long n) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;  // entry p, gate g, row u, column pair k2
    if (i >= n * 4 * 32 * 16) return;
    const int k = (int)(i % 16) * 2, u = (int)(i / 16 % 32), g = (int)(i / 512 % 4);
    const long p = i / 2048;
    const bf16 *b = w + (blk[p] + g * gstride) * 1024;
    bf16 *o = (bf16 *)((unsigned char *)(wpk + p * (4 * WT / 2)) + g * WT + wg_img_at(u, k));
    o[0] = b[k * 32 + u], o[1] = b[(k + 1) * 32 + u];
}

// A stage's cost in 4 KB: the four dz slabs and the weights of a whole item (32 + 8 KB) or of
// a half (16 + 8); an item's epilogue in the same units; lists past one CTA share as halves.
// The epilogue's charge is the best of a measured sweep (docs/PERF.md), below the model's.
constexpr WgCosts COSTS = {10, 6, 40, 4};

}  // namespace

struct WgBwd {
    Args a;
};

WgBwd *wg_bwd_create(const int *colptr, const int *row, const int *blk, long gstride, const void *w, int H, int B) {
    WgBwd *b = wg_step_make<WgBwd>(colptr, row, blk, gstride, H, B, COSTS, bwd_kernel, SMEM);
    if (b) wg_bwd_pack_w(b, w, NULL);
    return b;
}

void wg_bwd_pack_w(WgBwd *b, const void *w, void *stream) { wg_lists_pack(b->a.l, pack_w_kernel, w, stream); }

size_t wg_bwd_dzpk_bytes(const WgBwd *b) { return (size_t)b->a.B * 4 * b->a.H * 2; }

void wg_bwd_step(const WgBwd *b, const WgBwdStep *s, void *stream) { wg_step_launch(b, bwd_kernel, *s, SMEM, stream); }

void wg_bwd_free(WgBwd *b) { wg_step_free(b); }
