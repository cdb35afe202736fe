// wg_dw.cu: the window's weight gradient on wgmma (wg_dw.h). A CTA takes one of the matrix's
// bulk-copy groups (bsmm/bsmat_dev.cuh: up to 8 blocks of one block row, all 4 gates), as
// the mma.sync kernel does, and walks the window's rows 64 at a time: a stage is dz's four
// gate boxes of the block row and h's box of each block column (64 rows x 32 columns, as the
// copy engine lands them in the 64-byte swizzle, MN-major operands). Two consumer warpgroups
// (gates 0-1 and 2-3: M = 64) multiply each stage into all the group's blocks at once (N = 32
// a block), one producer thread issues the copies. Launched a wave at a time, so that the
// CTAs of a wave walk the rows side by side and share h's boxes in L2.
#include "bsmm/bsmm_tile.cuh"
#include "bsmm/bulk.cuh"
#include "wgmma/wg_dw.h"
#include "wgmma/wg_fwd.h"
#include "wgmma/wg_lists.cuh"
#include "wgmma/wgmma.cuh"

namespace {

constexpr int KC = 64;                // rows of the window a stage
constexpr int BOX = KC * 32 * 2;      // one box: KC rows x 32 columns, bf16
constexpr int STAGE = 12 * BOX;       // dz's four gate boxes, then up to 8 blocks' h boxes
constexpr int RING = 4;
constexpr int THREADS = 3 * 128;
constexpr size_t SMEM = 1024 + RING * STAGE + 2 * RING * 8;

struct Args {
    real *dvals;
    const int *col_idx;
    BwGroups g;
    int N, nr;     // rows; block rows of one gate
    long gstride;  // stored blocks from one gate's copy of a block to the next
    int g0;        // the launch's first group
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // wgmma and setmaxnreg exist in sm_90a code alone
__device__ inline void produce(const CUtensorMap *dzmap, const CUtensorMap *hmap, const Args &p, int br, int k0, int cnt,
                               int nst, unsigned char *ring, uint64_t *full, uint64_t *empty) {
    int col[8];
#pragma unroll
    for (int b = 0; b < 8; b++) col[b] = b < cnt ? p.col_idx[k0 + b] : 0;
    for (int st = 0; st < nst; st++) {
        const int s = st % RING;
        if (st >= RING) mbar_wait(empty + s, (st / RING - 1) & 1);
        unsigned char *stg = ring + s * STAGE;
        mbar_expect(full + s, (4 + cnt) * BOX);
        for (int g = 0; g < 4; g++) tensor_load_2d(stg + g * BOX, dzmap, (g * p.nr + br) * 32, st * KC, full + s);
#pragma unroll
        for (int b = 0; b < 8; b++)
            if (b < cnt) tensor_load_2d(stg + (4 + b) * BOX, hmap, col[b] * 32, st * KC, full + s);
    }
}

// N = 32 NB: the group's blocks, rounded up to 1, 2, 4, 6 or 8 (the products' columns past the
// group's blocks multiply whatever the slots hold, and are not stored).
template <int NB>
__device__ inline void mma(float (&d)[128], uint64_t da, uint64_t db) {
    if constexpr (NB == 1) wg_mma_n32<1, 1>(d, da, db);
    else if constexpr (NB == 2) wg_mma_n64<1, 1>(d, da, db);
    else if constexpr (NB == 4) wg_mma_n128<1, 1>(d, da, db);
    else if constexpr (NB == 6) wg_mma_n192<1, 1>(d, da, db);
    else wg_mma_n256<1, 1>(d, da, db);
}

// Consumer warpgroup wg: gates 2 wg and 2 wg + 1 (rows of d: gate 2 wg + m / 32, unit m % 32
// of the block row), each block's 32 columns of h; then dvals += d, each element once.
template <int NB>
__device__ inline void consume(const Args &p, int wg, int k0, int cnt, int nst, unsigned char *ring, uint64_t *full,
                               uint64_t *empty) {
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32 % 4;
    float d[128];
#pragma unroll
    for (int k = 0; k < NB * 16; k++) d[k] = 0.f;
    int q = 0;
    ring_consume<RING, true>(nst, q, ring, STAGE, full, empty, [&](unsigned char *st) {
        const uint32_t base = smem_addr(st);
#pragma unroll
        for (int kk = 0; kk < KC / 16; kk++)
            mma<NB>(d, wg_desc_mn(base + 2 * wg * BOX + kk * 1024, BOX), wg_desc_mn(base + 4 * BOX + kk * 1024, BOX));
    });
#pragma unroll
    for (int c8 = 0; c8 < NB * 4; c8++) {
        const int n = c8 * 8 + (lane % 4) * 2, b = n / 32;
        if (b >= cnt) continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int m = w * 16 + lane / 4 + 8 * h, gate = 2 * wg + m / 32;
            float2 *o = (float2 *)(p.dvals + ((long)(k0 + b + gate * p.gstride) * 32 + m % 32) * 32 + n % 32);
            const float2 v = *o;
            *o = make_float2(v.x + d[c8 * 4 + 2 * h], v.y + d[c8 * 4 + 2 * h + 1]);
        }
    }
}
#endif

__global__ void __launch_bounds__(THREADS, 1)
    dw_kernel(const __grid_constant__ CUtensorMap dzmap, const __grid_constant__ CUtensorMap hmap, Args p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char smem_raw[];
    unsigned char *ring = smem_aligned(smem_raw);
    uint64_t *full = (uint64_t *)(ring + RING * STAGE), *empty = full + RING;
    ring_init<RING>(full, empty);
    __syncthreads();
    const int gi = p.g0 + blockIdx.x, br = p.g.row[gi], k0 = p.g.k0[gi], cnt = p.g.cnt[gi], nst = (p.N + KC - 1) / KC;
    const int role = threadIdx.x / 128;
    if (role == 2) {  // 40 + 2 x 232 registers: the launch's 3 x 168
        wg_regs_down<40>();
        if (threadIdx.x == 256) produce(&dzmap, &hmap, p, br, k0, cnt, nst, ring, full, empty);
        return;
    }
    wg_regs_up<232>();
    if (cnt == 1) consume<1>(p, role, k0, cnt, nst, ring, full, empty);
    else if (cnt == 2) consume<2>(p, role, k0, cnt, nst, ring, full, empty);
    else if (cnt <= 4) consume<4>(p, role, k0, cnt, nst, ring, full, empty);
    else if (cnt <= 6) consume<6>(p, role, k0, cnt, nst, ring, full, empty);
    else consume<8>(p, role, k0, cnt, nst, ring, full, empty);
#endif
}

}  // namespace

int wg_dw_takes(const BsMat *w) { return w->bs == 32 && w->ngates == 4 && w->nbr == 4 * w->nbc && wg_fwd_runs_here(); }

int wg_dw(real *dvals, const void *dz, const void *h, const BsMat *w, int N, void *stream) {
    if (!wg_dw_takes(w)) return 0;
    const DevBsMat *d = dev_of(w);
    if (N <= 0 || d->wgrp.n == 0) return 1;
    check_aligned(dz, "dz");
    check_aligned(h, "h");
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(dw_kernel, SMEM), ready = true;
    const int H = w->cols;
    const CUtensorMap dzmap = tensor_map_2d(dz, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, N, 4 * H, 4 * H, 32, KC, CU_TENSOR_MAP_SWIZZLE_64B);
    const CUtensorMap hmap = tensor_map_2d(h, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, N, H, H, 32, KC, CU_TENSOR_MAP_SWIZZLE_64B);
    Args p = {dvals, d->col_idx, d->wgrp, N, w->nbc, w->nnzb / 4, 0};
    const int wave = g_cuda.nsm;  // one CTA an SM (its shared memory)
    for (p.g0 = 0; p.g0 < p.g.n; p.g0 += wave) {
        dw_kernel<<<p.g.n - p.g0 < wave ? p.g.n - p.g0 : wave, THREADS, SMEM, wg_stream(stream)>>>(dzmap, hmap, p);
        LAUNCH_CHECK();
    }
    return 1;
}
