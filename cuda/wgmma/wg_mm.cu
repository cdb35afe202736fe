// wg_mm.cu: bsmm.cu's products on wgmma (wg_mm.h). One persistent CTA an SM walks the pieces
// of the output block columns' lists dealt to it (bsmat_dev.cuh WgPlan), each over every 128
// rows: the input in 8 KB slabs (base/slab.cuh: the image its writer left, else packed first by
// wg_pack_slabs), a producer warp brings each entry's slab (128 rows x 32) and its block by
// tensor map into a ring of stages on mbarriers, which never drains between pieces; two
// consumer warpgroups (64 rows each) multiply every stage as it lands and store their tile
// from registers. A gate-stacked matrix's entry is a block of its first gate with the other
// three: in the forward one slab feeds the four gates' blocks (N = 128 outputs), in bwd_data
// the four gates' slabs of dy and their blocks are K = 128 of the entry's 32 outputs. A
// one-gate matrix's stage holds four entries (K = 128 too: a quarter of the stages, each
// barrier's wait paying for four blocks' products), the last of a piece fewer. A list
// cut into pieces is finished by its last piece, adding the pieces' partial tiles in piece
// order: the same bits every run.
#include "backend/backend_cuda.cuh"
#include "bsmm/bsmm_tile.cuh"
#include "wgmma/wg_dw.h"
#include "wgmma/wg_fwd.h"
#include "wgmma/wg_lists.cuh"
#include "wgmma/wg_mm.h"
#include "wgmma/wgmma.cuh"

namespace {

constexpr int TM = SLAB_ROWS;     // rows a tile
constexpr int SLAB = SLAB_BYTES;  // an input slab: 128 rows x 32 columns, bf16
constexpr int WB = 32 * 32 * 2;   // a block
constexpr int THREADS = 3 * 128;

// G blocks an entry (4: a gate-stacked matrix's four gates); in the forward they share one
// slab and make N = 32 G outputs, in bwd_data each has its slab and N = 32. E entries a
// stage: their slabs, then their blocks.
template <int G, bool FWD>
struct Wm {
    static constexpr int SLABS = FWD ? 1 : G, N = FWD ? 32 * G : 32, ACC = N / 2;  // ACC: a consumer thread's accumulators
    static constexpr int E = G == 1 ? 4 : 1, ENTRY = SLABS * SLAB + G * WB, STAGE = E * ENTRY;
    static constexpr int S = 200 * 1024 / STAGE;  // stages
    static constexpr int ZERO = E > 1 ? WB : 0;   // after the ring: a block of zeros, the B operand of a stage's missing entries
    static constexpr size_t SMEM = 1024 + (size_t)S * STAGE + ZERO + 2 * S * 8 + 2 * 4;
};

struct Args {
    float *out;
    const MmPiece *pieces;
    const int *first, *slot0;  // WgPlan's
    const unsigned char *xpk;  // the input packed: slab (k, tile) at (k * ntiles + tile) * SLAB (wg_pack_slabs)
    const int *idx, *blk;      // entry p: input slab idx[p], block blk[p] (NULL: p)
    float *part;               // [slot][tile][consumer][ACC / 4][128] float4s: cut lists' partial tiles
    int *count;                // [list][tile][consumer] pieces finished (back to 0 when done)
    int N, ld_out, acc, ntiles;
    long gstride;  // G = 4: stored blocks from one gate's copy of a block to the next
    long gcols;    // G = 4, forward: output columns from one gate to the next
    int gslab;     // G = 4, bwd_data: input slab columns from one gate to the next
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // wgmma exists in sm_90a code alone
// The producer warp: each piece's entries over each tile, 32 entries' indices loaded at once
// (a lane each, so a stage's E entries never straddle two loads), lane 0 issuing the copies.
template <int G, bool FWD>
__device__ inline void produce(const CUtensorMap *wmap, const Args &a, unsigned char *ring,
                               uint64_t *full, uint64_t *empty) {
    using C = Wm<G, FWD>;
    const int lane = threadIdx.x % 32;
    int q = 0;
    for (int t = a.first[blockIdx.x]; t < a.first[blockIdx.x + 1]; t++) {
        const MmPiece pc = a.pieces[t];
        for (int ty = 0; ty < a.ntiles; ty++)
            for (int c0 = pc.beg; c0 < pc.end; c0 += 32) {
                const int e = c0 + lane < pc.end ? c0 + lane : c0;
                const int ix = a.idx[e], bk = a.blk ? a.blk[e] : e, n = min(32, pc.end - c0);
                for (int i = 0; i < n; i += C::E, q++) {
                    int x[C::E], b[C::E];
#pragma unroll
                    for (int u = 0; u < C::E; u++)
                        x[u] = __shfl_sync(0xffffffffu, ix, min(i + u, n - 1)), b[u] = __shfl_sync(0xffffffffu, bk, min(i + u, n - 1));
                    const int s = q % C::S, ne = min(C::E, n - i);
                    if (lane) continue;
                    if (q >= C::S) mbar_wait(empty + s, (q / C::S - 1) & 1);
                    unsigned char *st = ring + s * C::STAGE;
                    mbar_expect(full + s, ne * C::ENTRY);
#pragma unroll
                    for (int u = 0; u < C::E; u++) {
                        if (u >= ne) break;
#pragma unroll
                        for (int k = 0; k < C::SLABS; k++)
                            bulk_load(st + (u * C::SLABS + k) * SLAB, a.xpk + (((long)x[u] + k * a.gslab) * a.ntiles + ty) * SLAB,
                                      SLAB, full + s);
#pragma unroll
                        for (int g = 0; g < G; g++)
                            tensor_load_2d(st + C::E * C::SLABS * SLAB + (u * G + g) * WB, wmap, 0,
                                           (int)((b[u] + g * a.gstride) * 32), full + s);
                    }
                }
            }
    }
}

// Consumer warpgroup wg's products over a piece's next n entries into d (rows 64 wg .. of the
// tile): the forward's B operand is the blocks as stored (K-major), bwd_data's their
// transpose (each block row a k: MN-major).
template <int G, bool FWD>
__device__ inline void products(float (&d)[Wm<G, FWD>::ACC], int wg, int n, int &q, unsigned char *ring, uint64_t *full,
                                uint64_t *empty) {
    using C = Wm<G, FWD>;
#pragma unroll
    for (int k = 0; k < C::ACC; k++) d[k] = 0.f;
    int left = n;  // entries not yet multiplied
    const uint32_t zero = smem_addr(ring + C::S * C::STAGE);
    ring_consume<C::S, true>((n + C::E - 1) / C::E, q, ring, C::STAGE, full, empty, [&](unsigned char *st) {
        const uint32_t aa = smem_addr(st + wg * (SLAB / 2)), bb = smem_addr(st + C::E * C::SLABS * SLAB);
        if constexpr (C::E > 1) {
            // every slot multiplied (a branch around wgmma serialises the groups): a missing
            // entry as the first one's slab times zeros
#pragma unroll
            for (int e = 0; e < C::E; e++) {
                const uint32_t ae = e < left ? aa + e * SLAB : aa, be = e < left ? bb + e * WB : zero;
                if constexpr (FWD) {
                    wg_mma_n32(d, wg_desc(ae), wg_desc(be));
                    wg_mma_n32(d, wg_desc(ae + 32), wg_desc(be + 32));
                } else {
                    wg_mma_n32<0, 1>(d, wg_desc(ae), wg_desc_mn(be, WB));
                    wg_mma_n32<0, 1>(d, wg_desc(ae + 32), wg_desc_mn(be + 1024, WB));
                }
            }
            left -= C::E;
        } else if constexpr (!FWD) {
#pragma unroll
            for (int g = 0; g < G; g++) {
                wg_mma_n32<0, 1>(d, wg_desc(aa + g * SLAB), wg_desc_mn(bb + g * WB, WB));
                wg_mma_n32<0, 1>(d, wg_desc(aa + g * SLAB + 32), wg_desc_mn(bb + g * WB + 1024, WB));
            }
        } else {
            wg_mma_n128(d, wg_desc(aa), wg_desc(bb));
            wg_mma_n128(d, wg_desc(aa + 32), wg_desc(bb + 32));
        }
    });
}

// The tile's rows of this thread (d's layout: wgmma.cuh) to out, = or +=.
template <int G, bool FWD>
__device__ inline void put_tile(const Args &a, const MmPiece &pc, int ty, int wg, const float (&d)[Wm<G, FWD>::ACC]) {
    const int e = threadIdx.x % 128, row = ty * TM + wg * 64 + (e / 32) * 16 + (e % 32) / 4, c2 = (e % 4) * 2;
#pragma unroll
    for (int c8 = 0; c8 < Wm<G, FWD>::N / 8; c8++) {
        const int c = c8 * 8 + c2;
        const long col = Wm<G, FWD>::N > 32 ? (c / 32) * a.gcols + pc.ob * 32L + c % 32 : pc.ob * 32L + c;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (row + 8 * h >= a.N) continue;
            float2 *o = (float2 *)(a.out + (long)(row + 8 * h) * a.ld_out + col);
            float2 v = make_float2(d[c8 * 4 + 2 * h], d[c8 * 4 + 2 * h + 1]);
            if (a.acc) v.x += o->x, v.y += o->y;
            *o = v;
        }
    }
}

// A cut list's piece: its partial tile published; the last of the list's pieces to get here
// adds them all in piece order and stores the sum.
template <int G, bool FWD>
__device__ inline void finish_cut(const Args &a, const MmPiece &pc, int ty, int wg, float (&d)[Wm<G, FWD>::ACC], int *s_last) {
    constexpr int V = Wm<G, FWD>::ACC / 4;
    const int e = threadIdx.x % 128;
    const long tile = (long)ty * 2 + wg, stride = (long)a.ntiles * 2 * V * 128;
    float4 *base = (float4 *)a.part + (a.slot0[pc.ob] * (long)a.ntiles * 2 + tile) * V * 128;
#pragma unroll
    for (int v = 0; v < V; v++) __stcg(base + pc.rank * stride + v * 128 + e, make_float4(d[4 * v], d[4 * v + 1], d[4 * v + 2], d[4 * v + 3]));
    __threadfence();
    asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
    if (e == 0) {
        int *c = a.count + ((long)pc.ob * a.ntiles) * 2 + tile;
        s_last[wg] = atomicAdd(c, 1) == pc.nparts - 1;
        if (s_last[wg]) *c = 0;  // ready for the next call
    }
    asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
    if (!s_last[wg]) return;
    __threadfence();
    for (int r = 0; r < pc.nparts; r++)
#pragma unroll
        for (int v = 0; v < V; v++) {
            const float4 x = __ldcg(base + r * stride + v * 128 + e);
            float *o = d + 4 * v;
            if (r) o[0] += x.x, o[1] += x.y, o[2] += x.z, o[3] += x.w;
            else o[0] = x.x, o[1] = x.y, o[2] = x.z, o[3] = x.w;
        }
    put_tile<G, FWD>(a, pc, ty, wg, d);
}

template <int G, bool FWD>
__device__ inline void consume(const Args &a, int wg, unsigned char *ring, uint64_t *full, uint64_t *empty, int *s_last) {
    int q = 0;
    for (int t = a.first[blockIdx.x]; t < a.first[blockIdx.x + 1]; t++) {
        const MmPiece pc = a.pieces[t];
        for (int ty = 0; ty < a.ntiles; ty++) {
            float d[Wm<G, FWD>::ACC];
            products<G, FWD>(d, wg, pc.end - pc.beg, q, ring, full, empty);
            if (pc.nparts == 1) put_tile<G, FWD>(a, pc, ty, wg, d);
            else finish_cut<G, FWD>(a, pc, ty, wg, d, s_last);
        }
    }
}
#endif

template <int G, bool FWD>
__global__ void __launch_bounds__(THREADS, 1) wg_mm_kernel(const __grid_constant__ CUtensorMap wmap, Args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using C = Wm<G, FWD>;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *ring = smem_aligned(smem_raw);
    uint64_t *full = (uint64_t *)(ring + C::S * C::STAGE + C::ZERO), *empty = full + C::S;
    int *s_last = (int *)(empty + C::S);
    ring_init<C::S>(full, empty);
    for (int i = threadIdx.x; i < C::ZERO / 16; i += THREADS) ((uint4 *)(ring + C::S * C::STAGE))[i] = make_uint4(0, 0, 0, 0);
    fence_async_shared();  // the zeros, before wgmma reads them
    __syncthreads();
    pdl_enter();  // the input and the weights may come from the op before
    const int wg = threadIdx.x / 128;
    if (wg == 2) {
        if (threadIdx.x < 2 * 128 + 32) produce<G, FWD>(&wmap, a, ring, full, empty);
    } else {
        consume<G, FWD>(a, wg, ring, full, empty, s_last);
    }
#endif
}

template <int G, bool FWD>
void launch(Args a, const WgPlan &pl, const real *in, long ld_in, const bf16 *w, long nnzb, int nlists) {
    using C = Wm<G, FWD>;
    static_assert(C::ACC % 4 == 0, "float4 partial tiles");
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(wg_mm_kernel<G, FWD>, C::SMEM), ready = true;
    a.part = (float *)cuda_scratch(SCRATCH_PART, sizeof(float) * (size_t)pl.nslots * a.ntiles * TM * C::N);
    a.count = (int *)cuda_scratch(SCRATCH_COUNT, sizeof(int) * (size_t)nlists * a.ntiles * 2);
    a.xpk = (const unsigned char *)twin_slab_in(in, a.N, (int)ld_in);
    if (!a.xpk) {
        const void *x = act_operand<true>(in, (size_t)a.N * ld_in, SCRATCH_XBF16);
        check_aligned(x, "input");
        unsigned char *pk = (unsigned char *)cuda_scratch(SCRATCH_XPK, (size_t)a.ntiles * TM * ld_in * 2);
        wg_pack_slabs(pk, (const bf16 *)x, a.N, (int)ld_in, NULL);
        a.xpk = pk;
    }
    launch_pdl(wg_mm_kernel<G, FWD>, dim3(pl.nctas), THREADS, C::SMEM, tensor_map_blocks(w, nnzb), a);
}

bool takes(const BsMat *w, int N) { return w->bs == 32 && N >= TM && wg_fwd_runs_here(); }

template <bool FWD>
void product(real *out, const real *in, const BsMat *w, const real *vals, int N, int acc) {
    const DevBsMat *d = dev_of(w);
    const size_t nout = (size_t)N * (FWD ? w->rows : w->cols);
    twin_none(out, nout, FWD ? "bsmm_fwd" : "bsmm_bwd_data");
    const bool gates = w->ngates == 4;
    const WgPlan &pl = FWD ? d->wg_fwd : d->wg_bwd;
    const long ld_in = FWD ? w->cols : w->rows;
    Args a = {};
    a.out = out, a.pieces = pl.pieces, a.first = pl.first, a.slot0 = pl.slot0;
    a.idx = FWD ? d->col_idx : gates ? d->g0_row : d->csc_row;
    a.blk = FWD ? NULL : gates ? d->g0_blk : d->csc_blk;
    a.N = N, a.ld_out = FWD ? w->rows : w->cols, a.acc = acc, a.ntiles = cdiv(N, TM);
    a.gstride = w->nnzb / 4, a.gcols = w->rows / 4, a.gslab = w->nbr / 4;
    const bf16 *wb = (const bf16 *)weight_operand<true>(vals, (size_t)bsmat_nvals(w));
    check_aligned(wb, "weight");
    if (pl.empty && !acc) CUDA_CHECK(cudaMemsetAsync(out, 0, nout * sizeof(real), g_cuda.stream));  // lists with no piece
    const int nlists = FWD ? (gates ? w->nbr / 4 : w->nbr) : w->nbc;
    if (FWD && gates) launch<4, true>(a, pl, in, ld_in, wb, w->nnzb, nlists);
    else if (FWD) launch<1, true>(a, pl, in, ld_in, wb, w->nnzb, nlists);
    else if (gates) launch<4, false>(a, pl, in, ld_in, wb, w->nnzb, nlists);
    else launch<1, false>(a, pl, in, ld_in, wb, w->nnzb, nlists);
}

}  // namespace

template <bool BF>
void wg_mm_fwd(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc) {
    if (BF && takes(w, N)) product<true>(y, x, w, vals, N, acc);
    else bsmm_fwd_cuda<BF>(y, x, w, vals, N, acc);
}
template <bool BF>
void wg_mm_bwd_data(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc) {
    if (BF && takes(w, N)) product<false>(dx, dy, w, vals, N, acc);
    else bsmm_bwd_data_cuda<BF>(dx, dy, w, vals, N, acc);
}

template <bool BF>
void wg_mm_bwd_weight(real *dvals, const real *dy, const real *x, const BsMat *w, int N) {
    if (BF && wg_dw_takes(w))
        wg_dw(dvals, act_operand<true>(dy, (size_t)N * w->rows, SCRATCH_DYBF16), act_operand<true>(x, (size_t)N * w->cols, SCRATCH_XBF16),
              w, N, NULL);
    else bsmm_bwd_weight_cuda<BF>(dvals, dy, x, w, N);
}

template void wg_mm_fwd<false>(real *, const real *, const BsMat *, const real *, int, int);
template void wg_mm_fwd<true>(real *, const real *, const BsMat *, const real *, int, int);
template void wg_mm_bwd_data<false>(real *, const real *, const BsMat *, const real *, int, int);
template void wg_mm_bwd_data<true>(real *, const real *, const BsMat *, const real *, int, int);
template void wg_mm_bwd_weight<false>(real *, const real *, const real *, const BsMat *, int);
template void wg_mm_bwd_weight<true>(real *, const real *, const real *, const BsMat *, int);
