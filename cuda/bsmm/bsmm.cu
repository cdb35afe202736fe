// bsmm.cu: block-sparse matmul (CPU twin: src/ops/bsmm_cpu.c). W is w->rows x w->cols with
// stored bs x bs blocks (bsmat.h): vals[k*bs*bs + i*bs + j] = W[br*bs + i][bc*bs + j].
//   fwd         y[N,rows] (=|+=) x[N,cols] W^T   one CTA per (block row, TM rows of N), CSR
//   bwd_data    dx[N,cols] (=|+=) dy[N,rows] W   one CTA per (block column, TM rows), CSC
//               (both: the same kernel, a cp.async pipeline over pieces of the block lists;
//               bf16 block 32 on the bulk copy engine instead, bsmm_bulk.cu)
//   bwd_weight  dvals += dy^T x, stored blocks    bsmm_bwd_weight.cu
// Each output element is owned by one CTA and summed in a fixed order: no atomics, the
// same bits every run. bf16 mode reads bf16 weights (the shadow) and rounds activations to
// bf16 as they are staged; accumulation is fp32 throughout.
#include <type_traits>
#include "bsmm/bsmm_tile.cuh"

// ---- fwd and bwd_data: out[:, ob] = sum over the list of ob of in[:, slab] x block ----
// A CTA owns TM rows and one piece of the list of an output block column ob (a block row of
// W in fwd; pieces: bsmat_dev.cuh). Its KG groups of TM threads take KB entries each per stage.
// Stages stream through an S-deep ring of shared memory with cp.async, so S-1 stages of
// weights (from DRAM) and activations (mostly L2) are in flight while one is multiplied:
// with compute this light, bytes in flight are what sets the speed. bf16 mode reads a bf16
// copy of the input (one conversion pass: half the bytes on the hot path). The piece's
// indices are copied to shared memory first, so no copy's address waits on a load; each
// thread's copy addresses are fixed but for the slab and block. A column cut into several
// pieces is finished by the CTA that completes last (pieces_done).

template <typename T, int BS, int TM, bool FWD>
struct Mm {
    static constexpr int S = 3;                    // ring depth (deeper measured slower)
    static constexpr int E = 16 / sizeof(T);      // elements per 16-byte copy
    static constexpr int KS = 32;                 // k per stage: 32 / BS blocks side by side
    static constexpr int KB = KS / BS;            // list entries per group per stage
    // Threads: KG groups of TM. bf16 takes 256 at 64 and 128 rows (the mlstm's step is faster
    // than with 128), 128 at 32 rows (256 slowed bwd-data there); fp32 128 (3xTF32: 256 slowed
    // the per-step forward more than it sped bwd-data).
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

// ---- launchers ----
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

// The product's arguments but for its operands (in, w).
template <bool FWD>
static MmArgs mm_args(MmOut out, const BsMat *w, int N, int acc) {
    const DevBsMat *d = dev_of(w);
    MmArgs a = {};
    a.out = out;
    a.pieces = (const MmPiece *)(FWD ? d->fwd_pieces : d->bwd_pieces);
    a.idx = FWD ? d->col_idx : d->csc_row;
    a.blk = FWD ? NULL : d->csc_blk;
    a.N = N;
    a.ld_in = FWD ? w->cols : w->rows;
    a.ld_out = FWD ? w->rows : w->cols;
    a.acc = acc;
    return a;
}

// The cp.async or bulk kernels on operands already in the kernel's type (bf16 when BF).
template <bool BF, bool FWD>
static void mm_launch(const MmArgs &a, const BsMat *w) {
    const DevBsMat *d = dev_of(w);
    int np = FWD ? d->fwd_npieces : d->bwd_npieces, nob = FWD ? w->nbr : w->nbc;
    typedef typename std::conditional<BF, bf16, float>::type T;
    switch (w->bs) {
    case 8: launch_mm_bs<T, 8, FWD>(a, np, nob); break;
    case 16: launch_mm_bs<T, 16, FWD>(a, np, nob); break;
    default:  // bf16 block 32 copies through the bulk copy engine (bsmm_bulk.cu)
        if constexpr (BF) bsmm_bulk_launch(a, np, nob, w->nnzb, pick_tm(a.N, np), FWD);
        else launch_mm_bs<T, 32, FWD>(a, np, nob);
        break;
    }
}

template <bool BF, bool FWD>
static void bsmm_mm(real *out, const real *in, const BsMat *w, const real *vals, int N, int acc) {
    if (N <= 0) return;
    twin_none(out, (size_t)N * (FWD ? w->rows : w->cols), FWD ? "bsmm_fwd" : "bsmm_bwd_data");
    MmArgs a = mm_args<FWD>({out, 0}, w, N, acc);
    a.w = weight_operand<BF>(vals, (size_t)bsmat_nvals(w));
    check_aligned(in, "input");
    check_aligned(a.w, "weight");
    if (BF && FWD && bsmm_stream_takes(w, N)) return bsmm_stream_fwd(out, in, w, (const bf16 *)a.w, N, acc);
    a.in = act_operand<BF>(in, (size_t)N * a.ld_in, SCRATCH_XBF16);
    mm_launch<BF, FWD>(a, w);
}

// The binding's products (cuda/api): operands as the caller holds them, fp32 or bf16 (bf);
// out is the caller's memory (fp32 or bf16), which has no twin.
template <bool FWD>
static void mm_typed(MmOut out, const void *in, const BsMat *w, const void *vals, int N, int acc, int bf) {
    if (N <= 0) return;
    MmArgs a = mm_args<FWD>(out, w, N, acc);
    a.in = in;
    a.w = vals;
    check_aligned(in, "input");
    check_aligned(vals, "weight");
    if (!bf) return mm_launch<false, FWD>(a, w);
    if (FWD && bsmm_stream_takes(w, N)) return bsmm_stream_fwd_bf16(out, (const bf16 *)in, w, (const bf16 *)vals, N, acc);
    mm_launch<true, FWD>(a, w);
}

void bsmm_fwd_typed(MmOut y, const void *x, const BsMat *w, const void *vals, int N, int acc, int bf) {
    mm_typed<true>(y, x, w, vals, N, acc, bf);
}
void bsmm_bwd_data_typed(MmOut dx, const void *dy, const BsMat *w, const void *vals, int N, int acc, int bf) {
    mm_typed<false>(dx, dy, w, vals, N, acc, bf);
}

template <bool BF>
void bsmm_fwd_cuda(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc) {
    bsmm_mm<BF, true>(y, x, w, vals, N, acc);
}
template <bool BF>
void bsmm_bwd_data_cuda(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc) {
    bsmm_mm<BF, false>(dx, dy, w, vals, N, acc);
}

template void bsmm_fwd_cuda<false>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_fwd_cuda<true>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_data_cuda<false>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_data_cuda<true>(real *, const real *, const BsMat *, const real *, int, int);
