// bsmm.cu: block-sparse matmul (CPU twin: src/bsmm_cpu.c). W is w->rows x w->cols with
// stored bs x bs blocks (bsmat.h): vals[k*bs*bs + i*bs + j] = W[br*bs + i][bc*bs + j].
//   fwd         y[N,rows] (=|+=) x[N,cols] W^T   one CTA per (block row, TM rows of N), CSR
//   bwd_data    dx[N,cols] (=|+=) dy[N,rows] W   one CTA per (block column, TM rows), CSC
//               (both: the same kernel, a cp.async pipeline over pieces of the block lists)
//   bwd_weight  dvals += dy^T x, stored blocks    one CTA per group of blocks of a block row
// Each output element is owned by one CTA and summed in a fixed order: no atomics, the
// same bits every run. bf16 mode reads bf16 weights (the shadow) and rounds activations to
// bf16 as they are staged; accumulation is fp32 throughout.
#include <type_traits>
#include "bsmm_tile.cuh"

// ---- fwd and bwd_data: out[:, ob] = sum over the list of ob of in[:, slab] x block ----
// A CTA owns TM rows and one piece of the list of an output block column ob (a block row of
// W in fwd; pieces: common.cuh). Its KG groups of TM threads take KB entries each per stage.
// Stages stream through an S-deep ring of shared memory with cp.async, so S-1 stages of
// weights (from DRAM) and activations (mostly L2) are in flight while one is multiplied:
// with compute this light, bytes in flight are what sets the speed. bf16 mode reads a bf16
// copy of the input (one conversion pass: half the bytes on the hot path). The piece's
// indices are copied to shared memory first, so no copy's address waits on a load; each
// thread's copy addresses are fixed but for the slab and block. A column cut into several
// pieces is finished by the CTA that completes last (pieces_done).
#define MM_LIST 256
static_assert(MM_LIST >= 2048 / 8, "a piece's indices (mm_piece_len) fit in shared memory");

template <typename T, int BS, int TM, bool FWD>
struct Mm {
    static constexpr int S = 3;                    // ring depth (deeper measured slower)
    static constexpr int E = 16 / sizeof(T);      // elements per 16-byte copy
    static constexpr int KS = 32;                 // k per stage: 32 / BS blocks side by side
    static constexpr int KB = KS / BS;            // list entries per group per stage
    // Threads: KG groups of TM. H100: bf16 takes 256 at 64 and 128 rows (mlstm 8192 ba_7 B = 128
    // step 83.3 -> 78.6 ms against 128), 128 at 32 rows (bwd-data N = 32: 26.9 us, 30.8 with 256);
    // fp32 128 (3xTF32, 8192 ba_8 per-step bsmm fwd at 128 rows: 129 us, 192 with 256).
    static constexpr int NT = sizeof(T) == 2 && TM >= 64 ? 256 : 128;
    static constexpr int KG = NT / TM;            // groups: they split the list, summed at the end
    static constexpr int PER = KG * KB;           // list entries per stage
    static constexpr int LDA = sm_ld<T>(KS);      // A: [NT rows][KS], group g's rows g*TM..
    static constexpr int WR = FWD ? BS : KS, WC = FWD ? KS : BS;  // W: [n][k] fwd, [k][n] bwd
    static constexpr int LDW = sm_ld<T, !FWD>(WC);
    static constexpr int A_CPR = KS / E;          // copies per A row
    static constexpr int A_CH = A_CPR;             // A copies per thread and stage (NT rows)
    static constexpr int W_PER_G = WR * WC / E, W_TOTAL = KG * W_PER_G;
    static constexpr int W_CH = cdiv_c(W_TOTAL, NT);
    static constexpr size_t A_BYTES = (size_t)NT * LDA * sizeof(T);
    static constexpr size_t STAGE = A_BYTES + (size_t)KG * WR * LDW * sizeof(T);
    static constexpr size_t RING = S * STAGE;
    static constexpr size_t SMEM = RING + 2 * MM_LIST * sizeof(int);
    static_assert(STAGE % 16 == 0 && (size_t)NT * BS * 4 <= RING, "ring layout");
};

typedef struct {
    real *out;
    const void *in;               // activations: bf16 or float, like the blocks
    const void *w;
    const MmPiece *pieces;        // one per blockIdx.x
    const int *idx, *blk;         // entry p: input slab idx[p], block blk[p] (NULL: p)
    float *part;                  // [piece][gridDim.y][TM * BS] partial tiles of cut columns
    int *count;                   // [ob][gridDim.y] pieces finished (back to 0 when done)
    int N, ld_in, ld_out, acc;
} MmArgs;

template <typename T, int BS, int TM, bool FWD>
__global__ void __launch_bounds__(Mm<T, BS, TM, FWD>::NT) bsmm_mm_kernel(MmArgs p) {
    using C = Mm<T, BS, TM, FWD>;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int s_last;
    int *s_idx = (int *)(smem + C::RING), *s_blk = s_idx + MM_LIST;
    const int tid = threadIdx.x, g = tid / TM, lt = tid % TM;
    const MmPiece pc = p.pieces[blockIdx.x];
    const int n0 = blockIdx.y * TM, cnt = pc.end - pc.beg, nst = (cnt + C::PER - 1) / C::PER;
    const T *in = (const T *)p.in, *w = (const T *)p.w;
    float acc[BS] = {};

    // This thread's copies: A column ac of rows tid / A_CPR + i * (NT / A_CPR).
    const int ac = tid % C::A_CPR * C::E;
    const T *a_src[C::A_CH];
    int a_pos[C::A_CH], a_dst[C::A_CH], w_pos[C::W_CH], w_el[C::W_CH], w_dst[C::W_CH];
#pragma unroll
    for (int i = 0; i < C::A_CH; i++) {
        int row = tid / C::A_CPR + i * (C::NT / C::A_CPR), n = n0 + row % TM;
        a_src[i] = n < p.N ? in + (long)n * p.ld_in + ac % BS : NULL;
        a_pos[i] = row / TM * C::KB + ac / BS;
        a_dst[i] = row * C::LDA + ac;
    }
#pragma unroll
    for (int i = 0; i < C::W_CH; i++) {
        int id = tid + i * C::NT, gw = id / C::W_PER_G, rem = id % C::W_PER_G;
        int wr = rem / (C::WC / C::E), wc = rem % (C::WC / C::E) * C::E;
        w_pos[i] = id < C::W_TOTAL ? gw * C::KB + (FWD ? wc / BS : wr / BS) : -1;
        w_el[i] = FWD ? wr * BS + wc % BS : wr % BS * BS + wc;
        w_dst[i] = (gw * C::WR + wr) * C::LDW + wc;
    }
    auto a_at = [&](int slot) { return (T *)(smem + slot * C::STAGE); };
    auto w_at = [&](int slot) { return (T *)(smem + slot * C::STAGE + C::A_BYTES); };

    for (int i = tid; i < cnt; i += C::NT) {
        s_idx[i] = p.idx[pc.beg + i];
        s_blk[i] = p.blk ? p.blk[pc.beg + i] : pc.beg + i;
    }
    __syncthreads();
    pdl_enter();  // the indices are the mask's (no kernel writes them); the rest may come from the op before
    // Stage st into ring slot st % S: group gg takes entries st*PER + gg*KB + e.
    auto issue = [&](int st) {
        T *As = a_at(st % C::S), *Ws = w_at(st % C::S);
        const int base = st * C::PER;
#pragma unroll
        for (int i = 0; i < C::A_CH; i++) {
            int pos = base + a_pos[i];
            bool ok = pos < cnt && a_src[i];
            cp_async16(As + a_dst[i], ok ? a_src[i] + s_idx[pos] * BS : in, ok);
        }
#pragma unroll
        for (int i = 0; i < C::W_CH; i++) {
            if (w_pos[i] < 0) break;
            int pos = base + w_pos[i];
            bool ok = pos < cnt;
            cp_async16(Ws + w_dst[i], ok ? w + (long)s_blk[pos] * BS * BS + w_el[i] : w, ok);
        }
    };
#pragma unroll
    for (int st = 0; st < C::S - 1; st++) {
        if (st < nst) issue(st);
        cp_commit();
    }
    for (int st = 0; st < nst; st++) {
        cp_wait<C::S - 2>();  // stage st has landed (for this thread's copies)
        __syncthreads();      // ... for everyone's, and slot (st-1) % S is free again
        if (st + C::S - 1 < nst) issue(st + C::S - 1);
        cp_commit();
        const int slot = st % C::S;
        tile_product<BS, C::KS, false, !FWD>(acc, a_at(slot) + g * TM * C::LDA, C::LDA,
                                             w_at(slot) + g * C::WR * C::LDW, C::LDW, lt);
    }
    cp_wait<0>();

    // Sum the groups' partial tiles in group order.
    __syncthreads();
    float *red = (float *)smem;
    acc_store<BS>(red, acc, g, TM, lt);
    __syncthreads();
    tile_finish<BS, C::KG>(red, TM, pc, p.part, p.count, &s_last, p.out, p.ld_out, n0, p.N, p.acc);
}

// ---- bwd_weight: M = the group's blocks' columns stacked (256 rows), N = BS, K = N rows ----
// The same cp.async ring as above over KC rows of N per stage (bf16 mode: bf16 copies of dy
// and x). Each group's K loop is long (all T*B rows), so the ring stays full.
#define BW_M 256        // x columns per group (the blocks' columns stacked): one thread each

template <typename T, int BS, int NG>
struct Bw {
    // bf16 4 gates: two halves of 2 gates each; fp32 4 gates a thread, so A is split into TF32
    // parts once per 4 products (H100, 8192 ba_8 fp32 bwd-weight 13.1 -> 12.4 ms)
    static constexpr int NT = NG == 4 && sizeof(T) == 2 ? 2 * BW_M : BW_M;
    static constexpr int GP = NG * BW_M / NT;              // gates per thread
    static constexpr int E = 16 / sizeof(T);      // elements per 16-byte copy
    // Rows of N per stage: bf16 4 gates 64 (half the barriers), one gate 32 (a 58 KB CTA, two
    // an SM, and no empty half stage at N = 32: H100 kernel table 10%, 260 -> 117 us); fp32
    // 32, but 24 for one gate, where 32 k-major padded rows (117 KB a CTA) would leave one CTA
    // an SM instead of two (at 32: 152 -> 259 us). (bf16 4 gates as two CTAs of 2 gates at 32
    // rows, two an SM: H100 8192 ba_8 4.8 -> 6.5 ms.)
    static constexpr int KC = sizeof(T) == 2 ? (NG == 4 ? 64 : 32) : NG == 1 ? 24 : 32;
    static constexpr int LDD = sm_ld<T, true>(NG * BS), LDX = sm_ld<T, true>(BW_M);
    static constexpr int D_CPR = NG * BS / E, D_TOTAL = KC * D_CPR, D_CH = cdiv_c(D_TOTAL, NT);
    static constexpr int X_CPR = BW_M / E, X_CH = KC * X_CPR / NT;
    static constexpr size_t D_BYTES = (size_t)KC * LDD * sizeof(T);
    static constexpr size_t STAGE = D_BYTES + (size_t)KC * LDX * sizeof(T);
    // Ring depth: bf16 4 gates 4 (one CTA an SM by its registers anyway; 200 KB: H100 8192
    // ba_8 4.78 -> 4.65-4.68 ms), else 3
    static constexpr int S = sizeof(T) == 2 && NG == 4 ? 4 : 3;
    static constexpr size_t SMEM = S * STAGE;
    static_assert(D_BYTES % 16 == 0 && STAGE % 16 == 0, "ring layout");
};

typedef struct {
    real *dvals;
    const void *dy, *x;           // bf16 or float, like the kernel's T
    const int *col_idx, *grp_row, *grp_k0, *grp_cnt;
    int N, ld_dy, ld_x;
    int nr;                       // gate-stacked (NG = 4): block rows of one gate
    long gstride;                 // ... and stored blocks from one gate's copy of a block to the next
} BwArgs;

// NG = 4 on gate-stacked matrices (the 4 gates' block rows share one mask): a group is blocks
// of one row of the mask and all 4 gates' copies of them, so each x slab read serves 4x the
// products (M = the blocks' x columns, N = 4 gates' dy columns).
template <typename T, int BS, int NG>
__global__ void __launch_bounds__(Bw<T, BS, NG>::NT) bsmm_bwd_weight_kernel(BwArgs p) {
    using C = Bw<T, BS, NG>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, gi = blockIdx.x, lt = tid % BW_M, g0 = tid / BW_M * C::GP;
    const int br = p.grp_row[gi], k0 = p.grp_k0[gi], cnt = p.grp_cnt[gi];
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
        // pipe) skips them: H100, 8192 ba_8 bwd-weight 11.9 -> 10.4 ms; bf16 does not (4.8 -> 4.9).
        if (sizeof(T) == 2 || lt / 32 * 32 < cnt * BS)
            tile_product<BS, C::KC, true, true, C::GP>(acc, x_at(slot), C::LDX, d_at(slot) + g0 * BS, C::LDD, BS, lt);
    }
    cp_wait<0>();
    // dvals += acc: every load before any store, so the loads fly together (the compiler cannot
    // tell that the stores do not alias them).
    auto at = [&](int q, int e) -> real * {
        int m, i;
        acc_coord<BS>(e, lt, m, i);
        return m / BS < cnt ? p.dvals + (k0 + m / BS + (g0 + q) * p.gstride) * BS * BS + i * BS + m % BS : NULL;
    };
#pragma unroll
    for (int q = 0; q < C::GP; q++)
#pragma unroll
        for (int e = 0; e < BS; e++)
            if (real *d = at(q, e)) acc[q][e] += *d;
#pragma unroll
    for (int q = 0; q < C::GP; q++)
#pragma unroll
        for (int e = 0; e < BS; e++)
            if (real *d = at(q, e)) *d = acc[q][e];
}

// ---- launchers ----
static const DevBsMat *dev_of(const BsMat *w) {
    if (!w->dev) die("internal: block-sparse matrix used on cuda before bsmat_upload");
    return (const DevBsMat *)w->dev;
}

static void check_aligned(const void *p, const char *what) {
    if ((uintptr_t)p % 16) die("internal: bsmm %s pointer %p is not 16-byte aligned", what, p);
}

template <typename K>
static void allow_smem(K kernel, size_t bytes) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <typename T, int BS, int TM, bool FWD>
static void launch_mm(MmArgs a, int npieces, int nob) {
    using C = Mm<T, BS, TM, FWD>;
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(bsmm_mm_kernel<T, BS, TM, FWD>, C::SMEM), ready = true;
    int gy = cdiv(a.N, TM);
    a.part = (float *)cuda_scratch(SCRATCH_PART, sizeof(float) * (size_t)npieces * gy * TM * BS);
    a.count = (int *)cuda_scratch(SCRATCH_COUNT, sizeof(int) * (size_t)nob * gy);
    launch_pdl(bsmm_mm_kernel<T, BS, TM, FWD>, dim3(npieces, gy), C::NT, C::SMEM, a);
}

// Rows per CTA: enough to cover N, then smaller while the grid would leave SMs idle.
static int pick_tm(int N, int npieces) {
    int tm = N <= 32 ? 32 : N <= 64 ? 64 : 128;
    while (tm > 32 && (long)npieces * cdiv(N, tm) < 2L * g_cuda.nsm) tm /= 2;
    return tm;
}

template <typename T, int BS, bool FWD>
static void launch_mm_bs(const MmArgs &a, int npieces, int nob) {
    switch (pick_tm(a.N, npieces)) {
    case 32: launch_mm<T, BS, 32, FWD>(a, npieces, nob); break;
    case 64: launch_mm<T, BS, 64, FWD>(a, npieces, nob); break;
    default: launch_mm<T, BS, 128, FWD>(a, npieces, nob); break;
    }
}

template <bool BF, bool FWD>
static void bsmm_mm(real *out, const real *in, const BsMat *w, const real *vals, int N, int acc) {
    if (N <= 0) return;
    twin_none(out, (size_t)N * (FWD ? w->rows : w->cols), FWD ? "bsmm_fwd" : "bsmm_bwd_data");
    const DevBsMat *d = dev_of(w);
    MmArgs a = {};
    a.out = out;
    a.in = in;
    a.pieces = (const MmPiece *)(FWD ? d->fwd_pieces : d->bwd_pieces);
    a.idx = FWD ? d->col_idx : d->csc_row;
    a.blk = FWD ? NULL : d->csc_blk;
    a.N = N;
    a.ld_in = FWD ? w->cols : w->rows;
    a.ld_out = FWD ? w->rows : w->cols;
    a.acc = acc;
    a.w = weight_operand<BF>(vals, (size_t)bsmat_nvals(w));
    check_aligned(in, "input");
    check_aligned(a.w, "weight");
    if (BF && FWD && bsmm_stream_takes(w, N)) return bsmm_stream_fwd(out, in, w, (const bf16 *)a.w, N, acc);
    a.in = act_operand<BF>(in, (size_t)N * a.ld_in, SCRATCH_XBF16);
    int np = FWD ? d->fwd_npieces : d->bwd_npieces, nob = FWD ? w->nbr : w->nbc;
    typedef typename std::conditional<BF, bf16, float>::type T;
    switch (w->bs) {
    case 8: launch_mm_bs<T, 8, FWD>(a, np, nob); break;
    case 16: launch_mm_bs<T, 16, FWD>(a, np, nob); break;
    default: launch_mm_bs<T, 32, FWD>(a, np, nob); break;
    }
}

template <bool BF>
void bsmm_fwd_cuda(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc) {
    bsmm_mm<BF, true>(y, x, w, vals, N, acc);
}
template <bool BF>
void bsmm_bwd_data_cuda(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc) {
    bsmm_mm<BF, false>(dx, dy, w, vals, N, acc);
}

template <typename T, int BS, int NG>
static void launch_bwd_weight_ng(const BwArgs &a, int ngroups) {
    static thread_local bool ready;  // the attribute is per device: one per rank thread
    if (!ready) allow_smem(bsmm_bwd_weight_kernel<T, BS, NG>, Bw<T, BS, NG>::SMEM), ready = true;
    bsmm_bwd_weight_kernel<T, BS, NG><<<ngroups, Bw<T, BS, NG>::NT, Bw<T, BS, NG>::SMEM, g_cuda.stream>>>(a);
    LAUNCH_CHECK();
}

template <typename T, int BS>
static void launch_bwd_weight(const BwArgs &a, int ngroups) {
    if (a.nr) launch_bwd_weight_ng<T, BS, 4>(a, ngroups);
    else launch_bwd_weight_ng<T, BS, 1>(a, ngroups);
}

void bsmm_bwd_weight_typed(real *dvals, const void *dy, const void *x, const BsMat *w, int N, int bf) {
    const DevBsMat *d = dev_of(w);
    if (N <= 0 || d->ngroups == 0) return;
    check_aligned(dy, "dy");
    check_aligned(x, "x");
    BwArgs a = {dvals, dy, x, d->col_idx, d->grp_row, d->grp_k0, d->grp_cnt, N, w->rows, w->cols,
                d->grp_gates == 4 ? w->nbr / 4 : 0, w->nnzb / 4};
    switch (w->bs * 2 + bf) {
    case 16: launch_bwd_weight<float, 8>(a, d->ngroups); break;
    case 17: launch_bwd_weight<bf16, 8>(a, d->ngroups); break;
    case 32: launch_bwd_weight<float, 16>(a, d->ngroups); break;
    case 33: launch_bwd_weight<bf16, 16>(a, d->ngroups); break;
    case 64: launch_bwd_weight<float, 32>(a, d->ngroups); break;
    default: launch_bwd_weight<bf16, 32>(a, d->ngroups); break;
    }
}

template <bool BF>
void bsmm_bwd_weight_cuda(real *dvals, const real *dy, const real *x, const BsMat *w, int N) {
    if (N <= 0) return;
    bsmm_bwd_weight_typed(dvals, act_operand<BF>(dy, (size_t)N * w->rows, SCRATCH_DYBF16),
                          act_operand<BF>(x, (size_t)N * w->cols, SCRATCH_XBF16), w, N, BF);
}

template void bsmm_fwd_cuda<false>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_fwd_cuda<true>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_data_cuda<false>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_data_cuda<true>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_weight_cuda<false>(real *, const real *, const real *, const BsMat *, int);
template void bsmm_bwd_weight_cuda<true>(real *, const real *, const real *, const BsMat *, int);
