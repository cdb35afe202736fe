// lstm_seq_tile.cuh: one tile of one time step of the recurrent engine, the body of its step
// kernels (lstm_seq.cu, a launch per step; lstm_seq_bulk.cuh the bf16 backward's). CPU twin: the per-step loop of src/model/model_step.c
// (bsmm_fwd + lstm_fwd, lstm_bwd + bsmm_bwd_data).
//   fwd  tile (piece of hidden block j's row list, TM rows): z[:, g, j] = sum over the list of
//        h_t slab x W[g, j, c]^T for the 4 gates g, plus the input projection (z_t's, or layer
//        0's table row of each row's byte); then the cell for the 32 units of j
//   bwd  tile (piece of hidden block j's column list, TM rows): dh[:, j] = dh_up + sum over the
//        list of dz_{t+1}[:, g, r] x W[g, r, j] over the 4 gates; then the cell's gradient
// A CTA is 4 groups of TM threads, one per gate, over a cp.async ring of list entries (one
// 32-wide slab and 4 blocks per stage). Fixed summation order: the same bits every run.
#pragma once
#include <type_traits>
#include "bsmm/bsmm_tile.cuh"
#include "engine/lstm_seq.cuh"

// The ring's shapes. SHALLOW: 3 stages of one list entry, a barrier per entry, as many CTAs
// per SM as fit (two of 512 threads at 128 rows). DEEP (forward only): 6 stages, a barrier
// per 2 entries, so each CTA keeps 4 entries in flight with half the barriers, at half the
// CTAs per SM (one at 128 rows). It speeds the forward at up to 64 rows and at 4096 ba_4, but
// not 8192 ba_8 at 128 rows, whose 366 CTAs then take three rounds instead of two: deep_ring
// in lstm_seq.cu picks.
enum SeqRing { RING_SHALLOW, RING_DEEP };

// CTAs per SM of a step kernel with smem bytes of shared memory and nt threads: as many as
// shared memory holds (227 KB, 1 KB reserved per CTA), at most 1024 threads' worth, so that a
// thread may use 64 registers (128 where one CTA of 512 is alone on its SM).
constexpr int seq_ctas_per_sm(size_t smem, int nt) {
    return (int)(227 * 1024 / (smem + 1024)) < 1024 / nt ? (int)(227 * 1024 / (smem + 1024)) : 1024 / nt;
}

template <typename T, int TM, bool FWD, int RING = RING_SHALLOW>
struct Sq {
    static constexpr int NT = 4 * TM;            // threads: a group of TM per gate
    static constexpr int LD = sm_ld<T>(SQ_BS), LDW = sm_ld<T, !FWD>(SQ_BS);  // slabs, blocks
    static constexpr int NA = FWD ? 1 : 4;       // slabs per stage: fwd's 4 gates share h's slab
    static constexpr int A_ELEMS = NA * TM * LD, W_ELEMS = 4 * SQ_BS * LDW;
    static constexpr size_t W_BYTES = (size_t)W_ELEMS * sizeof(T);  // a list entry's 4 gate blocks
    static constexpr size_t STAGE = (size_t)A_ELEMS * sizeof(T) + W_BYTES;
    static constexpr size_t RED = (size_t)4 * TM * SQ_BS * sizeof(float);  // a tile per group
    static constexpr int E = RING == RING_DEEP ? 2 : 1;  // entries per barrier
    static constexpr int S = RING == RING_DEEP ? 6 : 3 * STAGE <= 200 * 1024 ? 3 : 2;  // ring depth, in entries
    static constexpr size_t RBYTES = S * STAGE;
    // then the list's entries (s_idx, s_blk) and fwd's row bytes (s_tok)
    static constexpr size_t SMEM = (RBYTES > RED ? RBYTES : RED) + (2 * SQ_PIECE + (FWD ? TM : 0)) * sizeof(int);
    // CTAs per SM: 1024 threads' worth, fewer where shared memory (227 KB, 1 KB reserved per
    // CTA) holds fewer; the register budget follows, so a CTA alone on its SM may use 128.
    // fp32's 3xTF32 tiles spill at 64 registers: one CTA.
    static constexpr int MINB = sizeof(T) == 4 ? 1 : seq_ctas_per_sm(SMEM, NT);
    static_assert(STAGE % 16 == 0, "ring layout");
};

// Streams of the window that no later step reads soon (z_t in, act_t out and, in bf16 mode,
// fp32 h out in fwd; act_t in, in bwd) go through L2 as evict-first (__ldcs/__stcs), so W_h
// and the slabs the next step reads stay in L2.

// One thread's share of a list entry's copies, worked out once per CTA (as bsmm.cu's kernel
// does): the 16-byte chunks of the slab(s) and of the 4 gate blocks it moves, so an entry
// costs each thread an add and a cp.async per chunk rather than a copy loop's index arithmetic.
template <typename T, int TM, bool FWD>
struct SeqCopies {
    using C = Sq<T, TM, FWD>;
    static constexpr int E = 16 / sizeof(T), CPR = SQ_BS / E;
    static constexpr int A_CH = C::NA * TM * CPR / C::NT, W_CH = 4 * SQ_BS * CPR / C::NT;
    static_assert(A_CH * C::NT == C::NA * TM * CPR && W_CH * C::NT == 4 * SQ_BS * CPR, "copies per thread");
    int a_src[A_CH], w_src[W_CH];  // element offsets, within int range (engine_takes checks)
    int a_dst[A_CH], w_dst[W_CH];
    bool a_ok[A_CH];

    // ld_in: the slabs' row stride; gates lie H (bwd's dz) and gstride blocks (W) apart.
    __device__ SeqCopies(long ld_in, long H, long gstride, int valid) {
#pragma unroll
        for (int k = 0; k < A_CH; k++) {
            int i = threadIdx.x + k * C::NT, g = i / (TM * CPR), r = i / CPR % TM, c = i % CPR * E;
            a_src[k] = (int)((FWD ? 0 : g * H) + r * ld_in + c);
            a_dst[k] = (g * TM + r) * C::LD + c;
            a_ok[k] = r < valid;
        }
#pragma unroll
        for (int k = 0; k < W_CH; k++) {
            int i = threadIdx.x + k * C::NT, g = i / (SQ_BS * CPR), r = i / CPR % SQ_BS, c = i % CPR * E;
            w_src[k] = (int)(g * gstride * SQ_BS * SQ_BS + r * SQ_BS + c);
            w_dst[k] = (g * SQ_BS + r) * C::LDW + c;
        }
    }
    // An entry's slab, which starts at `slab` (row n0, its block column), into stage As
    // (rows past `valid` zero-filled); its 4 gate blocks, gate 0's at `blk`, into Ws.
    __device__ void issue_a(T *As, const T *slab) const {
#pragma unroll
        for (int k = 0; k < A_CH; k++) cp_async16(As + a_dst[k], a_ok[k] ? slab + a_src[k] : slab, a_ok[k]);
    }
    __device__ void issue_w(T *Ws, const T *blk) const {
#pragma unroll
        for (int k = 0; k < W_CH; k++) cp_async16(Ws + w_dst[k], blk + w_src[k], true);
    }
};

// The epilogues: each thread owns unit u = tid % 32 of the CTA's block in PER rows, 8 apart
// in the tile (PER = TM * 32 / threads = 8). All loads are issued before any arithmetic, so
// the thread waits for memory once rather than once per element. What an earlier step wrote
// (c in fwd; dh and dc in bwd) is read from L2 (__ldcg), which holds it, not L1.
constexpr int SQ_PER = 8;

// fwd: red holds W_h h_t for the 4 gates; the input projection (z_t's, or the table's row of
// the row's byte) is added in, then the cell as lstm_fwd computes it (EPI_SUM: only
// z_t = that sum, the cell comes after the layer norm).
__device__ inline void cell_fwd(const SeqStep &a, const float *red, const int *s_tok, int TM, int n0, int col) {
    const int u = threadIdx.x % SQ_BS, r0 = threadIdx.x / SQ_BS, rstep = blockDim.x / SQ_BS;
    const long G = 4L * a.H;
    float z[SQ_PER][4], cp[SQ_PER], bias[4];
#pragma unroll
    for (int g = 0; g < 4; g++) bias[g] = a.bias[g * (long)a.H + col];
#pragma unroll
    for (int q = 0; q < SQ_PER; q++) {
        int m = r0 + q * rstep, n = n0 + m;
        bool ok = n < a.B;
        const real *zin = !ok ? NULL : a.xtab ? a.xtab + s_tok[m] * G + col : a.z + n * G + col;
#pragma unroll
        for (int g = 0; g < 4; g++) z[q][g] = !zin ? 0.f : a.xtab ? __ldg(zin + g * (long)a.H) : __ldcs(zin + g * (long)a.H);
        cp[q] = ok && a.epi == EPI_CELL ? __ldcg(a.c0 + (long)n * a.H + col) : 0.f;
    }
#pragma unroll
    for (int q = 0; q < SQ_PER; q++) {
        int m = r0 + q * rstep, n = n0 + m;
        if (n >= a.B) continue;
        float pre[4];
#pragma unroll
        for (int g = 0; g < 4; g++) pre[g] = red[(g * TM + m) * SQ_BS + u] + z[q][g];
        real *zr = a.z + n * G, *ar = a.act + n * G;
        if (a.epi == EPI_SUM) {
#pragma unroll
            for (int g = 0; g < 4; g++) zr[g * (long)a.H + col] = pre[g];
            continue;
        }
        float i = sigm(pre[0] + bias[0]), f = sigm(pre[1] + bias[1]), g = tnh(pre[2] + bias[2]), o = sigm(pre[3] + bias[3]);
        long e = (long)n * a.H + col;
        if (a.actb) {
            __stcs((uint2 *)a.actb + e, bf16x4(i, f, g, o));
        } else {
            __stcs(ar + col, i);
            __stcs(ar + a.H + col, f);
            __stcs(ar + 2L * a.H + col, g);
            __stcs(ar + 3L * a.H + col, o);
        }
        float cn = f * cp[q] + i * g, h = o * tnh(cn);
        a.c1[e] = cn;
        if (a.hb1) {  // bf16 mode: the next step reads the bf16 copy
            __stcs(a.h1 + e, h);
            a.hb1[e] = __float2bfloat16_rn(h);
        } else {
            a.h1[e] = h;
        }
    }
}

// The tile's column sums of dz_t (dbias's share of this step): each thread's PER rows in
// order, then the thread rows in order through shared memory (red, free again once every
// thread has read it), one fixed order.
__device__ inline void bias_part(const SeqStep &a, const float (&dbs)[4], float *red, int col, int ty) {
    const int u = threadIdx.x % SQ_BS, r0 = threadIdx.x / SQ_BS, rows = blockDim.x / SQ_BS;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; k++) red[(r0 * 4 + k) * SQ_BS + u] = dbs[k];
    __syncthreads();
    if (r0 >= 4) return;
    float s = 0.f;  // thread rows 0-3 take gates 0-3 of unit u
    for (int r = 0; r < rows; r++) s += red[(r * 4 + r0) * SQ_BS + u];
    a.dbpart[(long)ty * 4 * a.H + r0 * (long)a.H + col] = s;
}

// bwd: red holds dz_{t+1} W_h; dh_{t+1} = upstream + that, then the cell's gradient as
// lstm_bwd computes it (EPI_SUM: only dh += dz W_h).
__device__ inline void cell_bwd(const SeqStep &a, float *red, int n0, int col, int ty) {
    const int u = threadIdx.x % SQ_BS, r0 = threadIdx.x / SQ_BS, rstep = blockDim.x / SQ_BS;
    const long G = 4L * a.H;
    const bool cell = a.epi == EPI_CELL;
    float dh[SQ_PER], dc[SQ_PER], c1[SQ_PER], c0[SQ_PER], dbs[4] = {};
    uint32_t act[SQ_PER][4];  // the gates' bits as loaded (actb: two bf16 pairs), unpacked in the arithmetic
#pragma unroll
    for (int q = 0; q < SQ_PER; q++) {
        int n = n0 + r0 + q * rstep;
        bool ok = n < a.B, okc = ok && cell;
        long e = (long)n * a.H + col;
        dh[q] = ok ? __ldcg(a.dh + e) : 0.f;
        dc[q] = okc ? __ldcg(a.dc + e) : 0.f;
        c1[q] = okc ? a.c1[e] : 0.f;
        c0[q] = okc ? a.c0[e] : 0.f;
        if (a.actb) {
            uint2 v = okc ? __ldcs((const uint2 *)a.actb + e) : make_uint2(0, 0);
            act[q][0] = v.x, act[q][1] = v.y;
        } else {
#pragma unroll
            for (int g = 0; g < 4; g++) act[q][g] = okc ? __float_as_uint(__ldcs(a.act + n * G + g * (long)a.H + col)) : 0;
        }
    }
#pragma unroll
    for (int q = 0; q < SQ_PER; q++) {
        int m = r0 + q * rstep, n = n0 + m;
        if (n >= a.B) continue;
        long e = (long)n * a.H + col;
        float d = dh[q] + red[m * SQ_BS + u];
        a.dh[e] = d;
        if (!cell) continue;
        float4 v = a.actb ? bf16x4_unpack(act[q][0], act[q][1])
                          : make_float4(__uint_as_float(act[q][0]), __uint_as_float(act[q][1]), __uint_as_float(act[q][2]),
                                        __uint_as_float(act[q][3]));
        float i = v.x, f = v.y, g = v.z, o = v.w, tc = tnh(c1[q]);
        float dct = dc[q] + d * o * (1 - tc * tc);
        float dz[4] = {dct * g * i * (1 - i), dct * c0[q] * f * (1 - f), dct * i * (1 - g * g), d * tc * o * (1 - o)};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            long i = n * G + k * (long)a.H + col;
            if (a.dzb) a.dzb[i] = __float2bfloat16_rn(dz[k]);  // bf16 mode: every reader takes the twin
            else a.dz[i] = dz[k];
        }
        a.dc[e] = dct * f;
#pragma unroll
        for (int k = 0; k < 4; k++) dbs[k] += dz[k];
    }
    if (cell && a.dbpart) bias_part(a, dbs, red, col, ty);
}

// The step kernels' order: a kernel boundary, programmatic (PDL). A tile waits (after its
// first stages' weights are on their way) before it reads anything the previous step wrote;
// only then may the next step's CTAs start (a trigger before the wait lets every later
// step's CTAs fill the SMs and wait there).
__device__ inline void seq_step_wait() {
    pdl_wait();
    pdl_trigger();
}

// One tile of one step: piece at.piece of the lists, row tile at.ty.
// A tile's start, both forms: its piece (pc), and its list entries and (fwd, layer 0) its
// rows' bytes staged in shared memory. Returns the entries to multiply, or -1 where the CTA
// has nothing to do.
template <bool FWD>
__device__ inline int seq_tile_begin(const SeqStep &a, TileAt at, int TM, MmPiece &pc, int *s_idx, int *s_blk, int *s_tok) {
    pc = a.pieces[at.piece];
    if (!a.in) {  // no product: one CTA per list runs the epilogue alone
        if (pc.rank) return -1;
        pc.nparts = 1;
        pc.end = pc.beg;
    }
    const int n0 = at.ty * TM, valid = min(TM, a.B - n0), total = pc.end - pc.beg;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
        s_idx[i] = a.idx[pc.beg + i];
        s_blk[i] = a.blk[pc.beg + i];
    }
    if (FWD && a.xtab)  // the rows' bytes now, so the epilogue's table loads wait on nothing
        for (int i = threadIdx.x; i < valid; i += blockDim.x) s_tok[i] = a.tok[n0 + i];
    __syncthreads();
    return total;
}

// A tile's end, both forms, once the ring is free: each group's tile to shared memory (fwd
// keeps the 4 gates apart, bwd sums them in order), a cut list's pieces summed by the last,
// then the cell (fwd) or its gradient (bwd).
template <bool FWD>
__device__ inline void seq_tile_end(const SeqStep &a, TileAt at, const MmPiece &pc, const float (&acc)[SQ_BS], float *red,
                                    const int *s_tok, int TM, int *s_last) {
    const int tid = threadIdx.x;
    acc_store<SQ_BS>(red, acc, tid / TM, TM, tid % TM);
    __syncthreads();
    if (!FWD)
        for (int i = tid; i < TM * SQ_BS; i += blockDim.x)
            red[i] = ((red[i] + red[TM * SQ_BS + i]) + red[2 * TM * SQ_BS + i]) + red[3 * TM * SQ_BS + i];
    __syncthreads();
    if (!pieces_done(red, (FWD ? 4 : 1) * TM * SQ_BS, pc, at, a.part, a.count, s_last)) return;
    __syncthreads();
    const int n0 = at.ty * TM, col = pc.ob * SQ_BS + tid % SQ_BS;
    if (FWD) cell_fwd(a, red, s_tok, TM, n0, col);
    else cell_bwd(a, red, n0, col, at.ty);
}

template <typename T, int TM, bool FWD, int RING>
__device__ void seq_tile(const SeqStep &a, TileAt at, unsigned char *smem) {
    using C = Sq<T, TM, FWD, RING>;
    static_assert(TM * SQ_BS / C::NT == SQ_PER, "epilogue rows per thread");
    __shared__ int s_last;
    int *s_idx = (int *)(smem + (C::RBYTES > C::RED ? C::RBYTES : C::RED)), *s_blk = s_idx + SQ_PIECE, *s_tok = s_blk + SQ_PIECE;
    const int tid = threadIdx.x, grp = tid / TM, lt = tid % TM;
    MmPiece pc;
    const int total = seq_tile_begin<FWD>(a, at, TM, pc, s_idx, s_blk, s_tok);
    if (total < 0) return;
    const int n0 = at.ty * TM, valid = min(TM, a.B - n0);
    const T *in = (const T *)a.in, *w = (const T *)a.w;
    const long ld_in = FWD ? a.H : 4L * a.H;
    const SeqCopies<T, TM, FWD> cps(ld_in, a.H, a.gstride, valid);
    auto a_at = [&](int slot) { return (T *)(smem + slot * C::STAGE); };
    auto w_at = [&](int st) { return a_at(st % C::S) + C::A_ELEMS; };
    // Entry st's copies in two parts: its weights (W_h's 4 gate blocks), which no step writes,
    // and its slab (h_t's or dz_{t+1}'s).
    auto issue_w = [&](int st) { cps.issue_w(w_at(st), w + (long)s_blk[st] * SQ_BS * SQ_BS); };
    auto issue_a = [&](int st) { cps.issue_a(a_at(st % C::S), in + (long)n0 * ld_in + s_idx[st] * SQ_BS); };
    auto issue = [&](int st) {
        issue_w(st);
        issue_a(st);
    };
    float acc[SQ_BS] = {};
    // The first stages' weights are on their way while the previous step finishes; they join
    // the first stage's group.
    constexpr int E = C::E, AHEAD = C::S - E;  // entries per barrier, entries in flight beyond them
    for (int st = 0; st < AHEAD; st++)
        if (st < total) issue_w(st);
    seq_step_wait();
#pragma unroll
    for (int st = 0; st < AHEAD; st++) {
        if (st < total) issue_a(st);
        cp_commit();
    }
    for (int st = 0; st < total; st += E) {
        cp_wait<AHEAD - E>();
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; e++) {
            if (st + AHEAD + e < total) issue(st + AHEAD + e);
            cp_commit();
        }
#pragma unroll
        for (int e = 0; e < E; e++)
            if (st + e < total)
                tile_product<SQ_BS, SQ_BS, false, !FWD>(acc, a_at((st + e) % C::S) + (FWD ? 0 : grp * TM * C::LD), C::LD,
                                                        w_at(st + e) + grp * SQ_BS * C::LDW, C::LDW, lt);
    }
    cp_wait<0>();
    __syncthreads();
    seq_tile_end<FWD>(a, at, pc, acc, (float *)smem, s_tok, TM, &s_last);
}

// f(std::integral_constant<int, TM>) for the rows per CTA that B takes.
template <typename F>
static inline auto with_tm(int B, F f) {
    switch (seq_tm(B)) {
    case 32: return f(std::integral_constant<int, 32>());
    case 64: return f(std::integral_constant<int, 64>());
    default: return f(std::integral_constant<int, 128>());
    }
}
