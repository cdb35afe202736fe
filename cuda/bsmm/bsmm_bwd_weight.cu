// bsmm_bwd_weight.cu: the weight gradient of the block-sparse matmul (CPU twin:
// src/ops/bsmm_cpu.c), dvals += dy^T x over the stored blocks, summed over all N rows of the
// window. One CTA per group of blocks of a block row (DevBsMat's groups): its dy slab is read
// once for all of them. Each output element is owned by one CTA: no atomics, the same bits
// every run. bf16 block-32 matrices over a window's rows (W_h and the mlstm's W_hj in
// training) take the bulk tensor copy engine's ring (bwd_weight_tma_kernel); the rest (fp32,
// blocks 8 and 16, few rows) a cp.async ring.
// M = the group's blocks' columns stacked (256 rows), N = BS (times 4 gates), K = N rows.
#include "bsmm/bsmm_tile.cuh"
#include "bsmm/bulk.cuh"

// ---- the cp.async ring over KC rows of N per stage (bf16 mode: bf16 copies of dy and x) ----
// Each group's K loop is long (all T*B rows), so the ring stays full.
#define BW_M 256        // x columns per group (the blocks' columns stacked): one thread each

template <typename T, int BS, int NG>
struct Bw {
    // bf16 4 gates: two halves of 2 gates each; fp32 4 gates a thread, so A is split into TF32
    // parts once per 4 products
    static constexpr int NT = NG == 4 && sizeof(T) == 2 ? 2 * BW_M : BW_M;
    static constexpr int GP = NG * BW_M / NT;              // gates per thread
    static constexpr int E = 16 / sizeof(T);      // elements per 16-byte copy
    // Rows of N per stage (bf16 block 32 measured before the bulk-copy kernel took windows):
    // bf16 4 gates 64 (half the barriers), one gate 32 (a 58 KB CTA, two an SM, and no empty
    // half stage at N = 32); fp32 32, but 24 for one gate, where 32 k-major padded rows (117 KB
    // a CTA) would leave one CTA an SM instead of two. (bf16 4 gates as two CTAs of 2 gates at
    // 32 rows, two an SM, was slower: each x slab is then read by two CTAs.)
    static constexpr int KC = sizeof(T) == 2 ? (NG == 4 ? 64 : 32) : NG == 1 ? 24 : 32;
    static constexpr int LDD = sm_ld<T, true>(NG * BS), LDX = sm_ld<T, true>(BW_M);
    static constexpr int D_CPR = NG * BS / E, D_TOTAL = KC * D_CPR, D_CH = cdiv_c(D_TOTAL, NT);
    static constexpr int X_CPR = BW_M / E, X_CH = KC * X_CPR / NT;
    static constexpr size_t D_BYTES = (size_t)KC * LDD * sizeof(T);
    static constexpr size_t STAGE = D_BYTES + (size_t)KC * LDX * sizeof(T);
    // Ring depth: bf16 4 gates 4 (one CTA an SM by its registers anyway, so 200 KB costs no
    // occupancy), else 3
    static constexpr int S = sizeof(T) == 2 && NG == 4 ? 4 : 3;
    static constexpr size_t SMEM = S * STAGE;
    static_assert(D_BYTES % 16 == 0 && STAGE % 16 == 0, "ring layout");
};

typedef struct {
    real *dvals;
    const void *dy, *x;           // bf16 or float, like the kernel's T
    const int *col_idx;
    BwGroups g;                   // the kernel's list of groups
    int N, ld_dy, ld_x;
    int nr;                       // gate-stacked (NG = 4): block rows of one gate
    long gstride;                 // ... and stored blocks from one gate's copy of a block to the next
    int g0;                       // the launch's first group (bwd_weight_tma's waves)
} BwArgs;

// dvals += acc of gates g0.. of the group's blocks k0..k0+cnt-1: every load before any store,
// so the loads fly together (the compiler cannot tell that the stores do not alias them).
template <int BS, int GP>
__device__ inline void bw_store(float (&acc)[GP][BS], const BwArgs &p, int k0, int cnt, int g0, int lt) {
    auto at = [&](int q, int e) -> real * {
        int m, i;
        acc_coord<BS>(e, lt, m, i);
        return m / BS < cnt ? p.dvals + (k0 + m / BS + (g0 + q) * p.gstride) * BS * BS + i * BS + m % BS : NULL;
    };
#pragma unroll
    for (int q = 0; q < GP; q++)
#pragma unroll
        for (int e = 0; e < BS; e++)
            if (real *d = at(q, e)) acc[q][e] += *d;
#pragma unroll
    for (int q = 0; q < GP; q++)
#pragma unroll
        for (int e = 0; e < BS; e++)
            if (real *d = at(q, e)) *d = acc[q][e];
}

// NG = 4 on gate-stacked matrices (the 4 gates' block rows share one mask): a group is blocks
// of one row of the mask and all 4 gates' copies of them, so each x slab read serves 4x the
// products (M = the blocks' x columns, N = 4 gates' dy columns).
template <typename T, int BS, int NG>
__global__ void __launch_bounds__(Bw<T, BS, NG>::NT) bsmm_bwd_weight_kernel(BwArgs p) {
    using C = Bw<T, BS, NG>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, gi = p.g0 + blockIdx.x, lt = tid % BW_M, g0 = tid / BW_M * C::GP;
    const int br = p.g.row[gi], k0 = p.g.k0[gi], cnt = p.g.cnt[gi];
    const T *dy = (const T *)p.dy, *x = (const T *)p.x;
    float acc[C::GP][BS] = {};
    // This thread's copies: x column xc of rows tid / X_CPR + i * (NT / X_CPR); dy chunks.
    const int xc = tid % C::X_CPR * C::E, gb = xc / BS;
    const T *x_src = gb < cnt ? x + (long)p.col_idx[k0 + gb] * BS + xc % BS : NULL;
    auto d_at = [&](int slot) { return (T *)(smem + slot * C::STAGE); };
    auto x_at = [&](int slot) { return (T *)(smem + slot * C::STAGE + C::D_BYTES); };
    const int nst = (p.N + C::KC - 1) / C::KC;

    auto issue = [&](int st) {
        T *Ds = d_at(st % C::S), *Xs = x_at(st % C::S);
        const int n0 = st * C::KC;
#pragma unroll
        for (int i = 0; i < C::D_CH; i++) {
            int id = tid + i * C::NT, r = id / C::D_CPR, c = id % C::D_CPR * C::E;
            if (id >= C::D_TOTAL) break;
            bool ok = n0 + r < p.N;
            long col = (long)(c / BS * p.nr + br) * BS + c % BS;  // gate c / BS of row br
            cp_async16(Ds + r * C::LDD + c, ok ? dy + (long)(n0 + r) * p.ld_dy + col : dy, ok);
        }
#pragma unroll
        for (int i = 0; i < C::X_CH; i++) {
            int r = tid / C::X_CPR + i * (C::NT / C::X_CPR);
            bool ok = x_src && n0 + r < p.N;
            cp_async16(Xs + r * C::LDX + xc, ok ? x_src + (long)(n0 + r) * p.ld_x : x, ok);
        }
    };
#pragma unroll
    for (int st = 0; st < C::S - 1; st++) {
        if (st < nst) issue(st);
        cp_commit();
    }
    for (int st = 0; st < nst; st++) {
        cp_wait<C::S - 2>();
        __syncthreads();
        if (st + C::S - 1 < nst) issue(st + C::S - 1);
        cp_commit();
        const int slot = st % C::S;
        // Warp w owns the group's x columns 32w..32w+31 (acc_coord): in a row's last group,
        // warps past its blocks have only zeros to multiply. fp32 (3xTF32, bound by the tensor
        // pipe) skips them; bf16 does not (its products are not what bounds it).
        if (sizeof(T) == 2 || lt / 32 * 32 < cnt * BS)
            tile_product<BS, C::KC, true, true, C::GP>(acc, x_at(slot), C::LDX, d_at(slot) + g0 * BS, C::LDD, BS, lt);
    }
    cp_wait<0>();
    bw_store<BS, C::GP>(acc, p, k0, cnt, g0, lt);
}

// ---- bf16, block 32: every copy one bulk tensor copy ----
// A stage is the dy boxes of the row's NG gates and the x boxes of the group's blocks, each KC
// rows x 32 columns (in sm_at's swizzled layout), all issued by one thread and landing on one
// mbarrier: the cp.async ring spent 6 copies, their addresses and a wait a thread a stage
// (several instructions an mma, and register spills). Warps whose block the group
// lacks (groups of fewer than 8) skip their products, as nothing was copied for them.
// Gate-stacked (NG = 4): two halves of 2 gates, 96 rows x 3 stages (216 KB), the most rows a
// stage with 2 stages in flight (faster than shallower stages in a deeper ring). One gate: 256
// threads, 64 rows x 3 stages (109 KB, two CTAs an SM).
template <int NG>
struct Bt {
    static constexpr int GP = NG == 4 ? 2 : 1, NT = BW_M * NG / GP;  // gates a thread, threads
    static constexpr int KC = NG == 4 ? 96 : 64, S = 3;              // rows of N a stage, ring depth
    static constexpr int BOX = KC * 32;                               // elements of a box
    static constexpr size_t STAGE = (size_t)(NG + BW_M / 32) * BOX * 2;
    static constexpr size_t SMEM = 1024 + S * STAGE + S * 8;          // 1024: the ring's alignment
};

template <int NG>
__global__ void __launch_bounds__(Bt<NG>::NT) bwd_weight_tma_kernel(const __grid_constant__ CUtensorMap dymap,
                                                                    const __grid_constant__ CUtensorMap xmap, BwArgs p) {
    using C = Bt<NG>;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
    uint64_t *bar = (uint64_t *)(smem + C::S * C::STAGE);
    const int tid = threadIdx.x, gi = p.g0 + blockIdx.x, lt = tid % BW_M, g0 = tid / BW_M * C::GP, j = lt / 32;
    const int br = p.g.row[gi], k0 = p.g.k0[gi], cnt = p.g.cnt[gi], nst = (p.N + C::KC - 1) / C::KC;
    auto box = [&](int st, int b) { return (bf16 *)(smem + st % C::S * C::STAGE) + b * C::BOX; };  // b: NG gates, then x
    mbar_init_all(bar, C::S);
    int col[BW_M / 32];  // thread 0's: the blocks' x columns
    auto issue = [&](int st) {
        uint64_t *b = bar + st % C::S;
        mbar_expect(b, (NG + cnt) * C::BOX * 2);
        for (int g = 0; g < NG; g++) tensor_load_2d(box(st, g), &dymap, (g * p.nr + br) * 32, st * C::KC, b);
#pragma unroll
        for (int k = 0; k < BW_M / 32; k++)
            if (k < cnt) tensor_load_2d(box(st, NG + k), &xmap, col[k] * 32, st * C::KC, b);
    };
    if (tid == 0) {
#pragma unroll
        for (int k = 0; k < BW_M / 32; k++) col[k] = k < cnt ? p.col_idx[k0 + k] : 0;
        for (int st = 0; st < C::S - 1 && st < nst; st++) issue(st);
    }
    float acc[C::GP][32] = {};
    ring_walk<C::S>(bar, nst, issue, [&](int st) {
        if (j < cnt)
            tile_mma<32, C::KC, true, true, C::GP, true>(acc, box(st, NG + j), 32, box(st, g0), 32, C::BOX, lt % 32);
    });
    bw_store<32, C::GP>(acc, p, k0, cnt, g0, lt);
}

// The groups go as launches of one wave each (as many CTAs as are resident at once): the CTAs of a
// wave start together and walk their rows of N side by side, so the x and dy slabs they share
// are still in L2 when the others read them; in one launch they drift apart as CTAs of
// different lengths end and others start. Not for the cp.async kernel, which the products
// bound: there a CTA that ends early is better followed at once.
template <int NG>
static void bwd_weight_tma(BwArgs a, const BwGroups &g) {
    using C = Bt<NG>;
    static thread_local int wave;  // CTAs resident at once; per device, so one per rank thread
    if (!wave) {
        int per_sm = 0;
        allow_smem(bwd_weight_tma_kernel<NG>, C::SMEM);
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bwd_weight_tma_kernel<NG>, C::NT, C::SMEM));
        if (per_sm < 1) die("internal: bwd_weight_tma_kernel<%d> (%zu bytes of shared memory) fits no SM", NG, C::SMEM);
        wave = per_sm * g_cuda.nsm;
    }
    const CUtensorMap dy = tensor_map_2d(a.dy, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a.N, a.ld_dy, a.ld_dy, 32, C::KC,
                                         CU_TENSOR_MAP_SWIZZLE_64B);
    const CUtensorMap x = tensor_map_2d(a.x, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a.N, a.ld_x, a.ld_x, 32, C::KC,
                                        CU_TENSOR_MAP_SWIZZLE_64B);
    a.g = g;
    for (a.g0 = 0; a.g0 < g.n; a.g0 += wave) {
        bwd_weight_tma_kernel<NG><<<g.n - a.g0 < wave ? g.n - a.g0 : wave, C::NT, C::SMEM, g_cuda.stream>>>(dy, x, a);
        LAUNCH_CHECK();
    }
}

template <typename T, int BS, int NG>
static void launch_bwd_weight_ng(const BwArgs &a) {
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(bsmm_bwd_weight_kernel<T, BS, NG>, Bw<T, BS, NG>::SMEM), ready = true;
    bsmm_bwd_weight_kernel<T, BS, NG><<<a.g.n, Bw<T, BS, NG>::NT, Bw<T, BS, NG>::SMEM, g_cuda.stream>>>(a);
    LAUNCH_CHECK();
}

template <typename T, int BS>
static void launch_bwd_weight(const BwArgs &a) {
    if (a.nr) launch_bwd_weight_ng<T, BS, 4>(a);
    else launch_bwd_weight_ng<T, BS, 1>(a);
}

void bsmm_bwd_weight_typed(real *dvals, const void *dy, const void *x, const BsMat *w, int N, int bf) {
    const DevBsMat *d = dev_of(w);
    if (N <= 0 || d->grp.n == 0) return;
    check_aligned(dy, "dy");
    check_aligned(x, "x");
    BwArgs a = {dvals, dy, x, d->col_idx, d->grp, N, w->rows, w->cols,
                d->grp_gates == 4 ? w->nbr / 4 : 0, w->nnzb / 4};
    switch (w->bs * 2 + bf) {
    case 16: launch_bwd_weight<float, 8>(a); break;
    case 17: launch_bwd_weight<bf16, 8>(a); break;
    case 32: launch_bwd_weight<float, 16>(a); break;
    case 33: launch_bwd_weight<bf16, 16>(a); break;
    case 64: launch_bwd_weight<float, 32>(a); break;
    default:  // few rows (the kernel table's 32) stay on one cp.async launch: waves of one-stage
              // groups cost more than they save
        if (N < 4 * (a.nr ? Bt<4>::KC : Bt<1>::KC)) launch_bwd_weight<bf16, 32>(a);
        else if (a.nr) bwd_weight_tma<4>(a, d->wgrp);
        else bwd_weight_tma<1>(a, d->wgrp);
        break;
    }
}

template <bool BF>
void bsmm_bwd_weight_cuda(real *dvals, const real *dy, const real *x, const BsMat *w, int N) {
    if (N <= 0) return;
    bsmm_bwd_weight_typed(dvals, act_operand<BF>(dy, (size_t)N * w->rows, SCRATCH_DYBF16),
                          act_operand<BF>(x, (size_t)N * w->cols, SCRATCH_XBF16), w, N, BF);
}


template void bsmm_bwd_weight_cuda<false>(real *, const real *, const real *, const BsMat *, int);
template void bsmm_bwd_weight_cuda<true>(real *, const real *, const real *, const BsMat *, int);
