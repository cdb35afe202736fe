// bsmm.cu: block-sparse matmul (CPU twin: src/bsmm_cpu.c). W is w->rows x w->cols with
// stored bs x bs blocks (bsmat.h): vals[k*bs*bs + i*bs + j] = W[br*bs + i][bc*bs + j].
//   fwd         y[N,rows] (=|+=) x[N,cols] W^T   one CTA per (block row, TM rows of N), CSR
//   bwd_data    dx[N,cols] (=|+=) dy[N,rows] W   one CTA per (block column, TM rows), CSC
//   bwd_weight  dvals += dy^T x, stored blocks    one CTA per group of blocks of a block row
// Each output element is owned by one CTA and summed in a fixed order: no atomics, the
// same bits every run. bf16 mode reads bf16 weights (the shadow) and rounds activations to
// bf16 as they are staged; accumulation is fp32 throughout.
#include <type_traits>
#include "bsmm_tile.cuh"

// ---- fwd and bwd_data: out[:, ob] = sum over the list of ob of in[:, slab] x block ----
template <typename T, int BS, int TM, bool FWD>
struct Mm {
    static constexpr int KS = BS < 16 ? 16 : BS;  // k per stage: two 8x8 blocks when BS = 8
    static constexpr int KB = KS / BS;            // list entries per group per stage
    static constexpr int KG = BSMM_THREADS / TM;  // groups: they split the list, summed at the end
    static constexpr int LDA = sm_ld<T>(KS);      // A: [TM][KS] per group, 256 rows in all
    static constexpr int WR = FWD ? BS : KS, WC = FWD ? KS : BS;  // W: [n][k] fwd, [k][n] bwd
    static constexpr int LDW = sm_ld<T>(WC);
    static constexpr int A_CH = KS / 8;           // 8-element chunks per thread and stage
    static constexpr int W_TOTAL = KG * WR * WC / 8;
    static constexpr int W_CH = cdiv_c(W_TOTAL, BSMM_THREADS);
    static constexpr size_t STAGE = (size_t)(BSMM_THREADS * LDA + KG * WR * LDW) * sizeof(T);
    static constexpr size_t RED = (size_t)BSMM_THREADS * BS * sizeof(float);
    static constexpr size_t SMEM = STAGE > RED ? STAGE : RED;
};

typedef struct {
    real *out;
    const real *in;
    const void *w;                // bf16 or float blocks
    const int *ptr, *idx, *blk;   // entries ptr[ob]..ptr[ob+1]: input slab idx[p], block blk[p] (NULL: p)
    int N, ld_in, ld_out, acc;
} MmArgs;

template <typename T, typename TW, int BS, int TM, bool FWD>
__global__ void __launch_bounds__(BSMM_THREADS, 2) bsmm_mm_kernel(MmArgs p) {
    using C = Mm<T, BS, TM, FWD>;
    extern __shared__ __align__(16) unsigned char smem[];
    T *As = (T *)smem, *Ws = As + BSMM_THREADS * C::LDA;
    const int tid = threadIdx.x, g = tid / TM, lt = tid % TM;
    const int ob = blockIdx.x, n0 = blockIdx.y * TM;
    const int beg = p.ptr[ob], end = p.ptr[ob + 1], per_it = C::KG * C::KB;
    const int nit = (end - beg + per_it - 1) / per_it;
    const TW *w = (const TW *)p.w;
    Chunk8<float> ra[C::A_CH];
    Chunk8<TW> rw[C::W_CH];
    float acc[BS] = {};

    // Stage `it`: group gg takes list entries base + gg*KB .. + KB-1 (zeros past the end).
    auto fetch = [&](int it) {
        const int base = beg + it * per_it;
#pragma unroll
        for (int i = 0; i < C::A_CH; i++) {
            int id = tid + i * BSMM_THREADS, row = id / (C::KS / 8), c8 = id % (C::KS / 8) * 8;
            int pos = base + row / TM * C::KB + c8 / BS, n = n0 + row % TM;
            if (pos < end && n < p.N) ld8(ra[i], p.in + (long)n * p.ld_in + p.idx[pos] * BS + c8 % BS);
            else zero8(ra[i]);
        }
#pragma unroll
        for (int i = 0; i < C::W_CH; i++) {
            int id = tid + i * BSMM_THREADS, rem = id % (C::WR * C::WC / 8);
            int wr = rem / (C::WC / 8), wc = rem % (C::WC / 8) * 8;
            int pos = base + id / (C::WR * C::WC / 8) * C::KB + (FWD ? wc / BS : wr / BS);
            if (id < C::W_TOTAL && pos < end) {
                long b = p.blk ? p.blk[pos] : pos;
                ld8(rw[i], w + b * BS * BS + (FWD ? wr * BS + wc % BS : wr % BS * BS + wc));
            } else {
                zero8(rw[i]);
            }
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int i = 0; i < C::A_CH; i++) {
            int id = tid + i * BSMM_THREADS;
            st8(As + id / (C::KS / 8) * C::LDA + id % (C::KS / 8) * 8, ra[i]);
        }
#pragma unroll
        for (int i = 0; i < C::W_CH; i++) {
            int id = tid + i * BSMM_THREADS, rem = id % (C::WR * C::WC / 8);
            if (id < C::W_TOTAL)
                st8(Ws + (id / (C::WR * C::WC / 8) * C::WR + rem / (C::WC / 8)) * C::LDW + rem % (C::WC / 8) * 8, rw[i]);
        }
    };

    if (nit > 0) fetch(0);
    for (int it = 0; it < nit; it++) {
        __syncthreads();  // the previous stage's readers are done
        stash();
        __syncthreads();
        if (it + 1 < nit) fetch(it + 1);  // in flight while this stage computes
        tile_product<BS, C::KS, false, !FWD>(acc, As + g * TM * C::LDA, C::LDA, Ws + g * C::WR * C::LDW, C::LDW, lt);
    }

    // Sum the groups' partial tiles in group order; write along rows (coalesced).
    __syncthreads();
    float *red = (float *)smem;
#pragma unroll
    for (int e = 0; e < BS; e++) {
        int row, col;
        acc_coord<T, BS, !FWD>(e, lt, row, col);
        red[(g * TM + row) * BS + col] = acc[e];
    }
    __syncthreads();
    for (int i = tid; i < TM * BS; i += BSMM_THREADS) {
        int m = i / BS, c = i % BS, n = n0 + m;
        if (n >= p.N) continue;
        float s = 0;
#pragma unroll
        for (int gg = 0; gg < C::KG; gg++) s += red[(gg * TM + m) * BS + c];
        real *o = p.out + (long)n * p.ld_out + (long)ob * BS + c;
        *o = p.acc ? *o + s : s;
    }
}

// ---- bwd_weight: M = the group's blocks' columns stacked (256 rows), N = BS, K = N rows ----
template <typename T, int BS>
struct Bw {
    static constexpr int KC = 32;                 // rows of N per stage
    static constexpr int G = BSMM_THREADS / BS;   // blocks per group
    static constexpr int LDD = sm_ld<T>(BS), LDX = sm_ld<T>(BSMM_THREADS);
    static constexpr int D_TOTAL = KC * BS / 8, D_CH = cdiv_c(D_TOTAL, BSMM_THREADS);
    static constexpr int X_CH = KC / 8;           // KC rows x 256 columns / 8 / 256 threads
    static constexpr size_t SMEM = (size_t)(KC * LDD + KC * LDX) * sizeof(T);
};

typedef struct {
    real *dvals;
    const real *dy, *x;
    const int *col_idx, *grp_row, *grp_k0, *grp_cnt;
    int N, ld_dy, ld_x;
} BwArgs;

template <typename T, int BS>
__global__ void __launch_bounds__(BSMM_THREADS, 2) bsmm_bwd_weight_kernel(BwArgs p) {
    using C = Bw<T, BS>;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int s_col[C::G];
    T *Ds = (T *)smem, *Xs = Ds + C::KC * C::LDD;
    const int tid = threadIdx.x, gi = blockIdx.x;
    const int br = p.grp_row[gi], k0 = p.grp_k0[gi], cnt = p.grp_cnt[gi];
    if (tid < C::G) s_col[tid] = tid < cnt ? p.col_idx[k0 + tid] : 0;
    __syncthreads();
    Chunk8<float> rd[C::D_CH], rx[C::X_CH];
    float acc[BS] = {};

    auto fetch = [&](int n0) {
#pragma unroll
        for (int i = 0; i < C::D_CH; i++) {
            int id = tid + i * BSMM_THREADS, n = n0 + id / (BS / 8);
            if (id < C::D_TOTAL && n < p.N) ld8(rd[i], p.dy + (long)n * p.ld_dy + br * BS + id % (BS / 8) * 8);
            else zero8(rd[i]);
        }
#pragma unroll
        for (int i = 0; i < C::X_CH; i++) {
            int id = tid + i * BSMM_THREADS, n = n0 + id / 32, c8 = id % 32 * 8, gb = c8 / BS;
            if (gb < cnt && n < p.N) ld8(rx[i], p.x + (long)n * p.ld_x + s_col[gb] * BS + c8 % BS);
            else zero8(rx[i]);
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int i = 0; i < C::D_CH; i++) {
            int id = tid + i * BSMM_THREADS;
            if (id < C::D_TOTAL) st8(Ds + id / (BS / 8) * C::LDD + id % (BS / 8) * 8, rd[i]);
        }
#pragma unroll
        for (int i = 0; i < C::X_CH; i++) {
            int id = tid + i * BSMM_THREADS;
            st8(Xs + id / 32 * C::LDX + id % 32 * 8, rx[i]);
        }
    };

    if (p.N > 0) fetch(0);
    for (int n0 = 0; n0 < p.N; n0 += C::KC) {
        __syncthreads();
        stash();
        __syncthreads();
        if (n0 + C::KC < p.N) fetch(n0 + C::KC);
        tile_product<BS, C::KC, true, true>(acc, Xs, C::LDX, Ds, C::LDD, tid);
    }
#pragma unroll
    for (int e = 0; e < BS; e++) {
        int m, i;
        acc_coord<T, BS, true>(e, tid, m, i);
        if (m / BS < cnt) p.dvals[(long)(k0 + m / BS) * BS * BS + i * BS + m % BS] += acc[e];
    }
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

template <typename T, typename TW, int BS, int TM, bool FWD>
static void launch_mm(const MmArgs &a, int nob) {
    using C = Mm<T, BS, TM, FWD>;
    static bool ready;
    if (!ready) allow_smem(bsmm_mm_kernel<T, TW, BS, TM, FWD>, C::SMEM), ready = true;
    bsmm_mm_kernel<T, TW, BS, TM, FWD><<<dim3(nob, cdiv(a.N, TM)), BSMM_THREADS, C::SMEM>>>(a);
    LAUNCH_CHECK();
}

// Rows per CTA: enough to cover N, then smaller while the grid would leave SMs idle.
static int pick_tm(int N, int nob) {
    int tm = N <= 32 ? 32 : N <= 64 ? 64 : 128;
    while (tm > 32 && (long)nob * cdiv(N, tm) < 2L * g_cuda.nsm) tm /= 2;
    return tm;
}

template <typename T, typename TW, int BS, bool FWD>
static void launch_mm_bs(const MmArgs &a, int nob) {
    switch (pick_tm(a.N, nob)) {
    case 32: launch_mm<T, TW, BS, 32, FWD>(a, nob); break;
    case 64: launch_mm<T, TW, BS, 64, FWD>(a, nob); break;
    default: launch_mm<T, TW, BS, 128, FWD>(a, nob); break;
    }
}

template <bool BF, bool FWD>
static void bsmm_mm(real *out, const real *in, const BsMat *w, const real *vals, int N, int acc) {
    if (N <= 0) return;
    const DevBsMat *d = dev_of(w);
    MmArgs a;
    a.out = out;
    a.in = in;
    a.ptr = FWD ? d->row_ptr : d->col_ptr;
    a.idx = FWD ? d->col_idx : d->csc_row;
    a.blk = FWD ? NULL : d->csc_blk;
    a.N = N;
    a.ld_in = FWD ? w->cols : w->rows;
    a.ld_out = FWD ? w->rows : w->cols;
    a.acc = acc;
    a.w = BF ? (const void *)weights_bf16(vals, (size_t)bsmat_nvals(w)) : (const void *)vals;
    check_aligned(in, "input");
    check_aligned(a.w, "weight");
    int nob = FWD ? w->nbr : w->nbc;
    typedef typename std::conditional<BF, bf16, float>::type T;
    switch (w->bs) {
    case 8: launch_mm_bs<T, T, 8, FWD>(a, nob); break;
    case 16: launch_mm_bs<T, T, 16, FWD>(a, nob); break;
    default: launch_mm_bs<T, T, 32, FWD>(a, nob); break;
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

template <typename T, int BS>
static void launch_bwd_weight(const BwArgs &a, int ngroups) {
    static bool ready;
    if (!ready) allow_smem(bsmm_bwd_weight_kernel<T, BS>, Bw<T, BS>::SMEM), ready = true;
    bsmm_bwd_weight_kernel<T, BS><<<ngroups, BSMM_THREADS, Bw<T, BS>::SMEM>>>(a);
    LAUNCH_CHECK();
}

template <bool BF>
void bsmm_bwd_weight_cuda(real *dvals, const real *dy, const real *x, const BsMat *w, int N) {
    const DevBsMat *d = dev_of(w);
    if (N <= 0 || d->ngroups == 0) return;
    BwArgs a = {dvals, dy, x, d->col_idx, d->grp_row, d->grp_k0, d->grp_cnt, N, w->rows, w->cols};
    check_aligned(dy, "dy");
    check_aligned(x, "x");
    typedef typename std::conditional<BF, bf16, float>::type T;
    switch (w->bs) {
    case 8: launch_bwd_weight<T, 8>(a, d->ngroups); break;
    case 16: launch_bwd_weight<T, 16>(a, d->ngroups); break;
    default: launch_bwd_weight<T, 32>(a, d->ngroups); break;
    }
}

template void bsmm_fwd_cuda<false>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_fwd_cuda<true>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_data_cuda<false>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_data_cuda<true>(real *, const real *, const BsMat *, const real *, int, int);
template void bsmm_bwd_weight_cuda<false>(real *, const real *, const real *, const BsMat *, int);
template void bsmm_bwd_weight_cuda<true>(real *, const real *, const real *, const BsMat *, int);
