// gen_mlstm.cu: the mLSTM's sampling loop (backend.h gen_*) as one cooperative launch, D + 2
// grid barriers a byte: stage 0 ([W_h0; W_o] h), a barrier; every CTA sums the logits and
// draws the byte itself (the same bits in each), then each internal step's norm and product
// and a barrier; the gates' norms, the cell and a barrier. A product's block rows are dealt
// whole to CTAs (gen_host.cu), so a CTA finishes its rows and their norms' sums itself from
// its warps' partial sums in shared memory, with no atomics or fences between CTAs; W_o's rows
// come in chunks, which the draw sums. After a barrier every CTA combines the rows' sums in one
// fixed order (all CTAs, and all runs, see the same statistics), normalizes the input columns
// its blocks read and runs its blocks of the next product. A warp's blocks that do not fit
// shared memory stream through its own ring of cp.async copies, which runs ahead across
// phases and barriers: weights do not wait on data.
// CPU twin: infer_step and sample_byte (src/model/infer.c, sampler.c), one step at a time.
#include "engine/gen_dev.cuh"
#include "bsmm/bsmm_tile.cuh"

enum { ML_RING_BYTES = 8192 };  // a warp's ring: 4 bf16 or 2 fp32 blocks in flight

// This CTA's share of stage i (set at launch): its span (first block b0, n blocks), its
// pieces (first seg0, nseg), each warp's resident blocks R, where they lie (roff, bytes into
// the resident area), where its pieces' starts and rows (so), its blocks' columns (co) and
// its distinct columns (cc, ncol of them: what the norm before the stage writes) lie in shared memory.
struct MlShare {
    int b0, n, seg0, nseg, R, so, co, cc, ncol;
    unsigned roff;
};

struct MlView {
    float *hs, *slot;          // h or a norm's output [H]; the warps' partial sums [pieces + warps][32]
    GenScratch *sc;
    MlShare *sh;               // [D + 1]
    int *segb, *segr, *cols, *ccol;  // each stage's piece starts (span-relative), rows, block columns, distinct columns
    unsigned char *ring, *res; // the warps' rings; the resident blocks
};

__device__ inline MlView ml_view(const GenLaunch &a, unsigned char *smem) {
    MlView v;
    v.hs = (float *)smem;
    v.sc = (GenScratch *)(smem + a.off[0]);
    v.sh = (MlShare *)(v.sc + 1);
    v.slot = (float *)(smem + a.off[1]);
    v.segb = (int *)(smem + a.off[2]);
    v.segr = (int *)(smem + a.off[3]);
    v.cols = (int *)(smem + a.off[4]);
    v.ccol = (int *)(smem + a.off[5]);
    v.ring = smem + a.off[6];
    v.res = v.ring + (a.ring ? GEN_WARPS * ML_RING_BYTES : 0);
    return v;
}

// Warp w's run of a span of n blocks: [w n / 8, (w + 1) n / 8).
__device__ inline int run_start(int n, int w) { return w * n / GEN_WARPS; }

// The stages' shares, piece starts and columns into shared memory, and each warp's resident blocks.
template <typename W>
__device__ void ml_setup(const GenLaunch &a, const MlView &v) {
    if (threadIdx.x == 0) {
        unsigned roff = 0;
        int so = 0, co = 0, cc = 0;
        for (int i = 0; i <= a.D; i++) {
            const GenStage &st = a.st[i];
            MlShare &h = v.sh[i];
            h.b0 = st.cta_blk[blockIdx.x], h.n = st.cta_blk[blockIdx.x + 1] - h.b0;
            h.seg0 = st.worker_ptr[blockIdx.x], h.nseg = st.worker_ptr[blockIdx.x + 1] - h.seg0;
            h.R = st.res[blockIdx.x], h.roff = roff, h.so = so, h.co = co, h.cc = cc;
            h.ncol = st.cta_col_ptr[blockIdx.x + 1] - st.cta_col_ptr[blockIdx.x];
            roff += (unsigned)(GEN_WARPS * h.R * GEN_BLOCK * sizeof(W));
            so += st.most_seg + 1, co += st.most_span, cc += st.most_cols;
        }
    }
    __syncthreads();
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int i = 0; i <= a.D; i++) {
        const GenStage &st = a.st[i];
        const MlShare h = v.sh[i];
        for (int q = threadIdx.x; q <= h.nseg; q += blockDim.x) v.segb[h.so + q] = st.piece_blk[h.seg0 + q] - h.b0;
        for (int q = threadIdx.x; q < h.nseg; q += blockDim.x) v.segr[h.so + q] = st.piece_row[h.seg0 + q];
        for (int q = threadIdx.x; q < h.n; q += blockDim.x) v.cols[h.co + q] = st.cols[h.b0 + q];
        for (int q = threadIdx.x; q < h.ncol; q += blockDim.x) v.ccol[h.cc + q] = st.cta_col[st.cta_col_ptr[blockIdx.x] + q];
        const int k0 = run_start(h.n, w), nr = min(h.R, run_start(h.n, w + 1) - k0);
        const uint4 *src = (const uint4 *)((const W *)st.wblk + (size_t)(h.b0 + k0) * GEN_BLOCK);
        uint4 *dst = (uint4 *)(v.res + h.roff + (size_t)w * h.R * GEN_BLOCK * sizeof(W));
        for (size_t q = lane; q < (size_t)nr * GEN_BLOCK * sizeof(W) / 16; q += 32) dst[q] = src[q];
    }
    __syncthreads();
}

// A warp's ring of S blocks over the blocks it streams (each stage's run past its resident
// ones, stage 0 to D, byte after byte): the copies run S blocks ahead of their use.
template <typename W>
struct MlRing {
    enum { S = ML_RING_BYTES / (GEN_BLOCK * (int)sizeof(W)) };
    W *slots;
    int head, i, k, hi, live;  // the next slot to use; the next block to copy: stage i's block k (< hi)

    // Stage i's streamed run for this warp: [*lo, *hi).
    __device__ static void run(const MlShare &h, int &lo, int &hi_) {
        const int w = threadIdx.x / 32, k0 = run_start(h.n, w), k1 = run_start(h.n, w + 1);
        lo = k0 + min(h.R, k1 - k0), hi_ = k1;
    }
    __device__ void init(const GenLaunch &a, const MlView &v) {
        slots = (W *)(v.ring + (threadIdx.x / 32) * ML_RING_BYTES);
        head = 0, live = 0;
        for (int s = 0; s <= a.D; s++) {
            int lo, h;
            run(v.sh[s], lo, h);
            live |= h > lo;
        }
        if (!live) return;
        i = 0, run(v.sh[0], k, hi), k--;
        for (int s = 0; s < S; s++) issue(a, v, s);
    }
    // The next block to stream into slot s: one commit group each.
    __device__ void issue(const GenLaunch &a, const MlView &v, int s) {
        for (k++; k >= hi;) {
            i = i == a.D ? 0 : i + 1;
            run(v.sh[i], k, hi);
        }
        const char *src = (const char *)((const W *)a.st[i].wblk + (size_t)(v.sh[i].b0 + k) * GEN_BLOCK);
        char *dst = (char *)(slots + (size_t)s * GEN_BLOCK);
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int q = 0; q < (int)(GEN_BLOCK * sizeof(W) / 16 / 32); q++) cp_async16(dst + (q * 32 + lane) * 16, src + (q * 32 + lane) * 16, true);
        cp_commit();
    }
    __device__ const W *take() {
        cp_wait<S - 1>();
        __syncwarp();
        return slots + (size_t)head * GEN_BLOCK;
    }
    // After the block from take() is read: its slot gets the block S ahead.
    __device__ void give(const GenLaunch &a, const MlView &v) {
        __syncwarp();
        issue(a, v, head);
        head = head + 1 == S ? 0 : head + 1;
    }
};

// One block times its 32 inputs x, into the lane's row sums (Lanes). Not gen_loop.cu's
// walk_pieces: its cut at each block's end measured slower here (docs/PERF.md, Sampling), and
// the ring gives one block at a time.
template <typename W>
__device__ inline void dot_block(const W *blk, const float *x, float *acc) {
    using L = Lanes<W>;
    const uint4 *b = (const uint4 *)blk + threadIdx.x % 32;
    x += (threadIdx.x % L::LPR) * L::V;
#pragma unroll
    for (int it = 0; it < L::NL; it++) acc[it] += dot16<W>(b[it * 32], x);
}

// Stage i times hs: each warp its run (piece q's sums into slot q + w: pieces and runs cut the
// span into at most nseg + 7 parts, in order), then the CTA's rows from their warps' slots in
// warp order (block order): values and (sum, sum of squares) of the rows below nfin; W_o's
// chunks into hpart.
template <typename W>
__device__ void ml_product(const GenLaunch &a, int i, const MlView &v, MlRing<W> &rg) {
    const GenStage &st = a.st[i];
    const MlShare h = v.sh[i];
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32, k0 = run_start(h.n, w), k1 = run_start(h.n, w + 1);
    const int kres = k0 + min(h.R, k1 - k0), *segb = v.segb + h.so, *segr = v.segr + h.so, *cols = v.cols + h.co;
    const W *res = (const W *)(v.res + h.roff) + (size_t)w * h.R * GEN_BLOCK;  // block k < kres at res + (k - k0) * 1024
    float acc[Lanes<W>::NL] = {};
    int q = 0;
    while (k0 < k1 && segb[q + 1] <= k0) q++;
    for (int k = k0; k < k1; q++) {  // piece q's share of the run: held blocks, then streamed ones
        const int end = min(k1, segb[q + 1]), held = max(k, min(end, kres));
#pragma unroll 2
        for (; k < held; k++) dot_block<W>(res + (size_t)(k - k0) * GEN_BLOCK, v.hs + cols[k] * 32, acc);
        for (; k < end; k++) {
            dot_block<W>(rg.take(), v.hs + cols[k] * 32, acc);
            rg.give(a, v);
        }
        put_sums<W>(acc, v.slot + (size_t)(q + w) * 32);
    }
    __syncthreads();
    for (int p = w; p < h.nseg; p += GEN_WARPS) {
        const int s0 = segb[p], s1 = segb[p + 1], row = segr[p];
        float x = 0;
        for (int u = 0; u < GEN_WARPS; u++) {
            const int r0 = run_start(h.n, u), r1 = run_start(h.n, u + 1);
            if (r0 < r1 && r0 < s1 && r1 > s0) x += v.slot[(p + u) * 32 + lane];
        }
        if (row >= st.nfin) {
            a.hpart[(size_t)(row - st.nfin) * 32 + lane] = x;
            continue;
        }
        st.out[row * 32 + lane] = x;
        const double sum = warp_sum((double)x), sq = warp_sum((double)x * x);
        if (lane == 0) st.stat[row] = make_double2(sum, sq);
    }
}

// The columns of stage i's input its span in this CTA reads (a CTA reads a few KB of its input
// rather than all of it): warp w takes columns w, w + 8, ..., its lanes a column's 32 values,
// so that a CTA issues only the loads its columns need, up to COLS_A_WARP columns a warp in one
// round trip (a span's columns are fewer than that but at the largest hubs).
enum { COLS_A_WARP = 16 };
__device__ inline int col_elem(const MlView &v, int i, int c) { return v.ccol[v.sh[i].cc + c] * 32 + threadIdx.x % 32; }

// h's columns that stage 0 reads, into hs.
__device__ void load_h(const float *hg, const MlView &v) {
    const int n = v.sh[0].ncol;
    for (int c0 = threadIdx.x / 32; c0 < n; c0 += COLS_A_WARP * GEN_WARPS) {
        float x[COLS_A_WARP];
#pragma unroll
        for (int u = 0; u < COLS_A_WARP && c0 + u * GEN_WARPS < n; u++) x[u] = __ldcg(hg + col_elem(v, 0, c0 + u * GEN_WARPS));
#pragma unroll
        for (int u = 0; u < COLS_A_WARP && c0 + u * GEN_WARPS < n; u++) v.hs[col_elem(v, 0, c0 + u * GEN_WARPS)] = x[u];
    }
    __syncthreads();
}

// After the barrier: u_j = LN(s_j) * gain + bias, then * m_t (j = 0), relu(. + a_t) (j = 1) or relu
// (norm_act_fwd), into hs: the columns stage j + 1 reads. The rows' sums, s, the gains, biases
// and table values are loaded together: one round trip.
__device__ void inner_norm(const GenLaunch &a, int j, int tok, const MlView &v) {
    enum { U = COLS_A_WARP };
    const GenStage &st = a.st[j];
    const int n = v.sh[j + 1].ncol;
    const float *s = st.out, *g = a.sln + (size_t)j * 2 * a.H, *bi = g + a.H;
    const float *mt = a.mtab + (size_t)(j == 1 ? 256 + tok : tok) * a.H;  // m_t for j = 0, a_t for j = 1
    double t[8];
    row_stat_loads(st.stat, st.nfin, 1, t);
    float2 ms = {};
    for (int c0 = threadIdx.x / 32, first = 1; first || c0 < n; c0 += U * GEN_WARPS, first = 0) {
        int e[U];
        float x[U], gg[U], bb[U], tt[U];
#pragma unroll
        for (int u = 0; u < U && c0 + u * GEN_WARPS < n; u++) {
            e[u] = col_elem(v, j + 1, c0 + u * GEN_WARPS);
            x[u] = __ldcg(s + e[u]), gg[u] = g[e[u]], bb[u] = bi[e[u]], tt[u] = j < 2 ? mt[e[u]] : 0.f;
        }
        if (first) {  // every thread, once: the sums' fixed order takes the whole CTA
            grid_sums(t, 2, v.sc);
            ms = norm_stats(v.sc->tot[0], v.sc->tot[1], a.H);
        }
#pragma unroll
        for (int u = 0; u < U && c0 + u * GEN_WARPS < n; u++) {
            const float y = (x[u] - ms.x) * ms.y * gg[u] + bb[u];
            v.hs[e[u]] = j == 0 ? y * tt[u] : fmaxf(y + tt[u], 0.f);  // tt is 0 for j >= 2: relu(y)
        }
    }
    __syncthreads();
}

// The mLSTM's step after the draw, from stage 0's rows (W_h0 h): the internal norms and
// products, the gates' product, their per-gate norms (their rows' sums combined as the
// internal ones') and the cell, h into h_out.
template <typename W>
__device__ void mlstm_step(const GenLaunch &a, int tok, const MlView &v, MlRing<W> &rg, float2 gb, unsigned long long &nbar,
                           float *h_out) {
    for (int j = 0; j < a.D; j++) {
        inner_norm(a, j, tok, v);
        ml_product<W>(a, j + 1, v, rg);
        grid_sync(a, nbar);
    }
    const GenStage &gs = a.st[a.D];
    const int u = cell_unit(a.H), g = threadIdx.x % 32 / 8;
    double t[8];
    row_stat_loads(gs.stat, a.H / 32, 4, t);
    const float z = u >= 0 ? __ldcg(gs.out + g * a.H + u) : 0.f;
    grid_sums(t, 8, v.sc);
    const float2 ms = norm_stats(v.sc->tot[2 * g], v.sc->tot[2 * g + 1], a.H);
    lstm_units(a, u, u >= 0 ? (z - ms.x) * ms.y * gb.x + gb.y : 0.f, h_out);
}

template <typename W>
__global__ void __launch_bounds__(GEN_THREADS) gen_mlstm(GenLaunch a) {
    extern __shared__ __align__(16) unsigned char smem[];
    const MlView v = ml_view(a, smem);
    ml_setup<W>(a, v);
    MlRing<W> rg;
    if (a.ring) rg.init(a, v);
    const int j = cell_unit(a.H), r = (threadIdx.x % 32 / 8) * a.H + j;
    const float2 gb = make_float2(j >= 0 ? a.gain[r] : 0.f, j >= 0 ? a.bias[r] : 0.f);  // the gates' norm
    uint64_t rs[4] = {a.rng[0], a.rng[1], a.rng[2], a.rng[3]};
    unsigned long long nbar = 0;
    int tok = a.feed[0];
    for (int it = 0; it <= a.steps; it++) {
        const float *hg = a.h + (size_t)((it + a.par) & 1) * a.H;
        load_h(hg, v);
        ml_product<W>(a, 0, v, rg);
        grid_sync(a, nbar);
        if (it > 0) {  // the logits after step it - 1 from W_o's chunks, then maybe the draw
            const int i = threadIdx.x;
            const float *hp = a.hpart + (size_t)(i / 32) * a.nq * 32 + i % 32;
            float l = 0;
            for (int q = 0; q < a.nq; q++) l += __ldcg(hp + q * 32);
            l += a.bo[i];
            v.sc->logit[i] = l;
            if (a.logits && blockIdx.x == 0) a.logits[(size_t)(it - 1) * 256 + i] = l;
            __syncthreads();
            if (it >= a.nfeed && a.nsample > 0) {
                tok = gen_draw(v.sc, a, rs);
                if (blockIdx.x == 0 && threadIdx.x == 0) a.out[it - a.nfeed] = (unsigned char)tok;
            }
        }
        if (it == a.steps) break;
        if (it < a.nfeed) tok = a.feed[it];
        mlstm_step<W>(a, tok, v, rg, gb, nbar, a.h + (size_t)((it + 1 + a.par) & 1) * a.H);
        grid_sync(a, nbar);
    }
    if (blockIdx.x == 0 && threadIdx.x < 4) a.rng_out[threadIdx.x] = rs[threadIdx.x];
    cp_wait<0>();  // the rings' copies past the last step
}

// h, the draw's scratch and the shares; the partial sums' slots; the pieces' starts and rows;
// the blocks' columns; the distinct columns; then the rings (where streamed) and the resident blocks.
size_t gen_mlstm_layout(GenLaunch *L) {
    int slots = 0, segb = 0, cols = 0, ccol = 0;
    for (int i = 0; i <= L->D; i++) {
        const GenStage &st = L->st[i];
        slots = max(slots, st.most_seg + GEN_WARPS), segb += st.most_seg + 1, cols += st.most_span, ccol += st.most_cols;
    }
    size_t o = (size_t)L->H * sizeof(float);
    L->off[0] = (unsigned)o, o += sizeof(GenScratch) + sizeof(MlShare) * GEN_MAX_STAGES;
    o = (o + 15) / 16 * 16, L->off[1] = (unsigned)o, o += sizeof(float) * 32 * (size_t)slots;
    L->off[2] = (unsigned)o, o += sizeof(int) * (size_t)segb;
    L->off[3] = (unsigned)o, o += sizeof(int) * (size_t)segb;
    L->off[4] = (unsigned)o, o += sizeof(int) * (size_t)cols;
    L->off[5] = (unsigned)o, o += sizeof(int) * (size_t)ccol;
    o = (o + 15) / 16 * 16, L->off[6] = (unsigned)o;
    return o + (L->ring ? (size_t)GEN_WARPS * ML_RING_BYTES : 0);
}

template <typename W>
void gen_mlstm_launch(const GenLaunch &a, int grid, size_t smem) { loop_launch(gen_mlstm<W>, a, grid, smem); }
template void gen_mlstm_launch<float>(const GenLaunch &, int, size_t);
template void gen_mlstm_launch<bf16>(const GenLaunch &, int, size_t);

template <typename W>
int gen_mlstm_ctas_per_sm(size_t smem) { return loop_ctas_per_sm(gen_mlstm<W>, smem); }
template int gen_mlstm_ctas_per_sm<float>(size_t);
template int gen_mlstm_ctas_per_sm<bf16>(size_t);
