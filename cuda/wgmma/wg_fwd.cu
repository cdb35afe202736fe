// wg_fwd.cu: the wgmma forward step (wg_fwd.h). A persistent CTA an SM walks its items, each
// the 128 x 128 tile of one hidden block j (its four gates' 32 units side by side) and 128
// batch rows, or half of it (16 units' four gates) where the list is long enough to hold the
// step back, dealt to the CTAs longest first. Five warpgroups share the SM: a producer streams
// each list entry's h slab and four gate blocks, 16 KB, into a ring of shared-memory stages
// from their packed images by one thread's bulk copies; two consumer
// warpgroups (64 rows each) run wgmma on every stage; two epilogue warpgroups take the
// accumulators over through shared memory and apply the cell while the consumers go on with
// the next item. docs/PERF.md has its figures against the floors.
#include "base/state.cuh"
#include "base/vec4.cuh"
#include "bsmm/bsmm_tile.cuh"
#include "ops/ops.cuh"
#include "wgmma/wg_fwd.h"
#include "wgmma/wg_lists.cuh"
#include "wgmma/wgmma.cuh"

namespace {

constexpr int RING = 8;                     // stages of the ring
constexpr int SLAB = 128 * 32 * 2;          // a stage's h slab: 128 rows x 32 columns, bf16
constexpr int WBLK = 128 * 32 * 2;          // a stage's weights: 4 gates x 32 rows x 32
constexpr int STAGE = SLAB + WBLK;
constexpr int ACC_PITCH = 136;              // floats a row of the accumulators' tile (no bank conflicts)
constexpr int ACC = 128 * ACC_PITCH * 4;    // the accumulators handed to the epilogue, row-major
constexpr int THREADS = 5 * 128;
constexpr size_t SMEM = RING * STAGE + ACC + 1024 + (2 * RING + 2) * 8;

// An item: hidden block j's whole list over 128-row tile m, for all 32 units of the block
// (half < 0) or for units 16 half .. 16 half + 15. The weights' image holds a block's units
// by halves, each half's four gates side by side (rows 64 half + 16 g + u % 16), so a half
// item's weights are 4 KB in one piece and its accumulators the first 64 columns.
typedef WgItem Item;

struct Args {
    WgStep s;
    WgLists l;  // W_h's block rows: entry p reads h's block column l.idx[p]
    int B, H;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // wgmma and setmaxnreg exist in sm_90a code alone
__device__ inline void produce(const Args &a, unsigned char *ring, uint64_t *full, uint64_t *empty, int t0, int t1) {
    const int nmt = a.B / 128;
    int q = 0;
    for (int t = t0; t < t1; t++) {
        const Item it = a.l.items[t];
        const int p0 = a.l.ptr[it.j], n = a.l.ptr[it.j + 1] - p0;
        for (int i = 0; i < n; i++, q++) {
            const int s = q % RING;
            if (q >= RING) mbar_wait(empty + s, (q / RING - 1) & 1);
            unsigned char *st = ring + s * STAGE;
            const int wbytes = it.half < 0 ? WBLK : WBLK / 2;
            mbar_expect(full + s, SLAB + wbytes);
            bulk_load(st, (const bf16 *)a.s.hpk + ((long)a.l.idx[p0 + i] * nmt + it.m) * (SLAB / 2), SLAB, full + s);
            bulk_load(st + SLAB, a.l.wpk + (long)(p0 + i) * (WBLK / 2) + (it.half < 0 ? 0 : it.half * (WBLK / 4)), wbytes, full + s);
        }
    }
}

// One item's products into d for consumer warpgroup wg, stage q onwards (ring_consume): N =
// 128 (a whole item) or 64 (a half), each its own loop so that the compiler sees no branch
// between wgmmas.
template <bool WHOLE>
__device__ inline void products(float (&d)[64], int wg, int n, int &q, unsigned char *ring, uint64_t *full, uint64_t *empty) {
#pragma unroll
    for (int k = 0; k < 64; k++) d[k] = 0.f;
    ring_consume<RING, true>(n, q, ring, STAGE, full, empty, [&](unsigned char *st) {
        const uint32_t aa = smem_addr(st + wg * (SLAB / 2)), bb = smem_addr(st + SLAB);
        if (WHOLE) {
            wg_mma_n128(d, wg_desc(aa), wg_desc(bb));
            wg_mma_n128(d, wg_desc(aa + 32), wg_desc(bb + 32));
        } else {
            wg_mma_n64(d, wg_desc(aa), wg_desc(bb));
            wg_mma_n64(d, wg_desc(aa + 32), wg_desc(bb + 32));
        }
    });
}

// Consumer warpgroup wg: rows 64 wg .. 64 wg + 63 of each item.
__device__ inline void consume(const Args &a, int wg, unsigned char *ring, uint64_t *full, uint64_t *empty, float *acc,
                               uint64_t *accfull, uint64_t *accempty, int t0, int t1) {
    const int e = threadIdx.x % 256;
    int q = 0;
    for (int t = t0, u = 0; t < t1; t++, u++) {
        const int j = a.l.items[t].j, n = a.l.ptr[j + 1] - a.l.ptr[j], whole = a.l.items[t].half < 0;
        float d[64];
        if (whole)
            products<true>(d, wg, n, q, ring, full, empty);
        else
            products<false>(d, wg, n, q, ring, full, empty);
        if (u > 0) mbar_wait(accempty, (u - 1) & 1);
        // row-major, so that the epilogue can read whole runs of units (d's layout: wgmma.cuh)
        const int row = (e / 128) * 64 + (e / 32 % 4) * 16 + (e % 32) / 4, c2 = (e % 4) * 2;
#pragma unroll
        for (int c8 = 0; c8 < 16; c8++)
            if (whole || c8 < 8) {
                *(float2 *)(acc + row * ACC_PITCH + c8 * 8 + c2) = make_float2(d[c8 * 4], d[c8 * 4 + 1]);
                *(float2 *)(acc + (row + 8) * ACC_PITCH + c8 * 8 + c2) = make_float2(d[c8 * 4 + 2], d[c8 * 4 + 3]);
            }
        mbar_arrive(accfull);
    }
}

// The epilogue's share of an item: thread e takes four consecutive units of a row, all four
// gates, so that a warp's loads and stores cover whole 128-byte runs of a row (where the
// consumers' fragments give 8 rows of 32 bytes an instruction). An item's 32 units (16 a
// half) are 8 (4) threads a row, 32 (64) rows a pass, 4 (2) passes over its 128 rows.
__device__ inline int epi_passes(const Item &it) { return it.half < 0 ? 4 : 2; }
__device__ inline int epi_row(const Item &it, int p) {  // the tile's row of pass p
    const int e = threadIdx.x % 256;
    return it.half < 0 ? p * 32 + e / 8 : p * 64 + e / 4;
}
__device__ inline int epi_unit(const Item &it) {  // the first of the thread's units in the block
    const int e = threadIdx.x % 256;
    return it.half < 0 ? (e % 8) * 4 : 16 * it.half + (e % 4) * 4;
}

// What an epilogue thread holds of one item's inputs for each pass p: the input table's four
// gates and c_t at its four units. They arrive one item ahead: each pass's are reloaded with
// the next item's as soon as they are read, so that their latency overlaps this item's cell
// and stores.
struct EpiIn {
    float4 x[4][4], c[4];
};

// Pass p of item it's inputs, tk the bytes of its rows, pass p's in bits 8p .. 8p + 7
// (ld.global.cg: the compiler sinks read-only loads past the wait that follows).
__device__ inline void load_pass(const Args &a, const Item &it, uint32_t tk, int p, EpiIn &in) {
    if (p >= epi_passes(it)) return;
    const long H = a.H, row = it.m * 128 + epi_row(it, p), col = it.j * 32 + epi_unit(it);
    const float *xr = a.s.xtab + (long)(tk >> 8 * p & 255) * 4 * H;
#pragma unroll
    for (int g = 0; g < 4; g++) in.x[p][g] = __ldcg((const float4 *)(xr + g * H + col));
    in.c[p] = __ldcg((const float4 *)(a.s.c0 + row * H + col));
}

// Epilogue thread e applies the cell to its units of the item's P passes and loads the next
// item nx's inputs (more: there is one) as it frees them; u: the item's place among its CTA's.
// Unit k of the block, gate g, is the accumulators' column 64 (k / 16) + 16 g + k % 16 of a
// whole item and 16 g + k % 16 of a half (the weights' image).
template <int P>
__device__ inline void finish_item(const Args &a, const Item &it, const Item &nx, bool more, uint32_t ntk, EpiIn &in,
                                   const float *acc, uint64_t *accfull, uint64_t *accempty, int u) {
    const int nmt = a.B / 128, k = epi_unit(it), n0 = it.half < 0 ? 64 * (k / 16) + k % 16 : k % 16;
    const long H = a.H, col = it.j * 32 + k;
    mbar_wait(accfull, u & 1);
    unsigned char *hp = (unsigned char *)a.s.hpk1 + ((long)it.j * nmt + it.m) * SLAB;
#pragma unroll
    for (int p = 0; p < P; p++) {
        const int rl = epi_row(it, p);
        const long at = (it.m * 128L + rl) * H + col;
        float4 pre[4];
#pragma unroll
        for (int g = 0; g < 4; g++) pre[g] = add4(*(const float4 *)(acc + rl * ACC_PITCH + n0 + 16 * g), in.x[p][g]);
        if (p == P - 1) mbar_arrive(accempty);  // the last read of acc
        const float4 cin = in.c[p];
        if (more) load_pass(a, nx, ntk, p, in);
        float cn[4], hn[4];
        uint32_t act[8];
#pragma unroll
        for (int v = 0; v < 4; v++) {
            const float gi = sigm(lane4(pre[0], v)), gf = sigm(lane4(pre[1], v)), gg = tnh(lane4(pre[2], v)),
                        go = sigm(lane4(pre[3], v));
            cn[v] = gf * lane4(cin, v) + gi * gg, hn[v] = go * tnh(cn[v]);
            act[2 * v] = bf16x2(gi, gf), act[2 * v + 1] = bf16x2(gg, go);
        }
        const uint2 hv = make_uint2(bf16x2(hn[0], hn[1]), bf16x2(hn[2], hn[3]));
        *(float4 *)(a.s.c1 + at) = make_float4(cn[0], cn[1], cn[2], cn[3]);
        __stcs((float4 *)(a.s.h1 + at), make_float4(hn[0], hn[1], hn[2], hn[3]));
        __stcs((uint4 *)a.s.actb + at / 2, make_uint4(act[0], act[1], act[2], act[3]));
        __stcs((uint4 *)a.s.actb + at / 2 + 1, make_uint4(act[4], act[5], act[6], act[7]));
        *(uint2 *)((bf16 *)a.s.hb1 + at) = hv;
        *(uint2 *)(hp + wg_img_at(rl, k)) = hv;
    }
    if (more && P < 4)  // a half item before a whole one: the passes it did not use
#pragma unroll
        for (int p = P; p < 4; p++) load_pass(a, nx, ntk, p, in);
}

// The bytes of item it's rows, pass p's in bits 8p .. 8p + 7 (those past its passes 0).
__device__ inline uint32_t row_bytes(const Args &a, const Item &it) {
    uint32_t tk = 0;
#pragma unroll
    for (int p = 0; p < 4; p++)
        if (p < epi_passes(it)) tk |= (uint32_t)a.s.tok[it.m * 128 + epi_row(it, p)] << 8 * p;
    return tk;
}

// The CTA's items in order; each round loads the bytes of the item two ahead and the item
// three ahead, so that no load's latency stands between two items.
__device__ inline void finish(const Args &a, const float *acc, uint64_t *accfull, uint64_t *accempty, int t0, int t1) {
    if (t0 >= t1) return;
    EpiIn in;
    Item cur = a.l.items[t0], nx = a.l.items[t0 + 1 < t1 ? t0 + 1 : t0], nn = a.l.items[t0 + 2 < t1 ? t0 + 2 : t0];
    const uint32_t tk = row_bytes(a, cur);
    uint32_t tn = row_bytes(a, nx);
#pragma unroll
    for (int p = 0; p < 4; p++) load_pass(a, cur, tk, p, in);
    for (int t = t0, u = 0; t < t1; t++, u++) {
        const uint32_t tnn = row_bytes(a, nn);
        const Item n3 = a.l.items[t + 3 < t1 ? t + 3 : t0];
        if (cur.half < 0)
            finish_item<4>(a, cur, nx, t + 1 < t1, tn, in, acc, accfull, accempty, u);
        else
            finish_item<2>(a, cur, nx, t + 1 < t1, tn, in, acc, accfull, accempty, u);
        cur = nx, nx = nn, nn = n3, tn = tnn;
    }
}

#endif

__global__ void __launch_bounds__(THREADS, 1) fwd_kernel(Args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char smem_raw[];
    unsigned char *ring = smem_aligned(smem_raw);
    float *acc = (float *)(ring + RING * STAGE);
    uint64_t *full = (uint64_t *)(ring + RING * STAGE + ACC), *empty = full + RING, *accfull = empty + RING,
             *accempty = accfull + 1;
    ring_init<RING>(full, empty);
    if (threadIdx.x == 0) mbar_init(accfull, 256), mbar_init(accempty, 256), mbar_init_fence();
    __syncthreads();
    const int role = threadIdx.x / 128, t0 = a.l.first[blockIdx.x], t1 = a.l.first[blockIdx.x + 1];
    if (role == 4) {
        wg_regs_down<24>();
        if (threadIdx.x == 4 * 128) produce(a, ring, full, empty, t0, t1);
    } else if (role < 2) {
        consume(a, role, ring, full, empty, acc, accfull, accempty, t0, t1);
    } else {
        wg_regs_up<128>();
        finish(a, acc, accfull, accempty, t0, t1);
    }
#endif
}

__global__ void pack_w_kernel(bf16 *wpk, const bf16 *w, const int *blk, long gstride, long n) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;  // entry p, gate g, row r, column pair k2
    if (i >= n * 4 * 32 * 16) return;
    const int k = (int)(i % 16) * 2, r = (int)(i / 16 % 32), g = (int)(i / 512 % 4);
    const long p = i / 2048;
    const uint32_t v = *(const uint32_t *)(w + ((blk[p] + g * gstride) * 32 + r) * 32 + k);
    *(uint32_t *)((unsigned char *)(wpk + p * (WBLK / 2)) + wg_img_at(r / 16 * 64 + g * 16 + r % 16, k)) = v;
}

// xb[r][c] = xtab[r][c] + bias[c], in float4s: rows of g4 of them.
__global__ void fold_bias_kernel(float4 *xb, const float4 *xtab, const float4 *bias, long g4, long n) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    xb[i] = add4(xtab[i], bias[i % g4]);
}

// A stage's cost in 4 KB: the h slab and the weights of a whole item (8 + 8 KB) or a half;
// an item's epilogue in the same units, and lists past 1.5 CTA shares as halves. The
// epilogue's charge is from a measured sweep (docs/PERF.md), below the model's 25 stages.
constexpr WgCosts COSTS = {4, 3, 50, 6};

}  // namespace

struct WgFwd {
    Args a;
};

WgFwd *wg_fwd_create(const int *rowptr, const int *col, const int *blk, long gstride, const void *w, int H, int B) {
    WgFwd *f = wg_step_make<WgFwd>(rowptr, col, blk, gstride, H, B, COSTS, fwd_kernel, SMEM);
    if (f) wg_fwd_pack_w(f, w, NULL);
    return f;
}

int wg_fwd_runs_here(void) {
    int dev, major, minor;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    return major == 9 && minor == 0;
}

void wg_fwd_pack_w(WgFwd *f, const void *w, void *stream) { wg_lists_pack(f->a.l, pack_w_kernel, w, stream); }

void wg_fwd_fold_bias(const WgFwd *f, float *xb, const float *xtab, const float *bias, void *stream) {
    const long n = 256L * 4 * f->a.H;
    fold_bias_kernel<<<(unsigned)((n / 4 + 255) / 256), 256, 0, wg_stream(stream)>>>((float4 *)xb, (const float4 *)xtab,
                                                                                (const float4 *)bias, f->a.H, n / 4);
    LAUNCH_CHECK();
}

size_t wg_fwd_hpk_bytes(const WgFwd *f) { return (size_t)f->a.B * f->a.H * 2; }

void wg_fwd_pack_h(const WgFwd *f, const void *hb, void *hpk, void *stream) {
    wg_pack_slabs(hpk, (const bf16 *)hb, f->a.B, f->a.H, stream);
}

void wg_fwd_step(const WgFwd *f, const WgStep *s, void *stream) { wg_step_launch(f, fwd_kernel, *s, SMEM, stream); }

void wg_fwd_free(WgFwd *f) { wg_step_free(f); }
