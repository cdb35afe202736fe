// lstm_seq_host.cu: the recurrent engine's host side (backend.h seq_*): work lists over the
// mask, the engine's bf16 copies of h and dz, and one CUDA graph per direction that replays
// a window's step launches (captured once, relaunched every window: no per-step launch cost
// on the host, and the GPU runs the steps back to back). CPU twin: the per-step loop of
// src/model/model_step.c, which the CPU backend always runs.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "engine/lstm_seq_host.cuh"

// Row tiles of B rows (both directions).
static int tiles(int B) { return cdiv(B, seq_tm(B)); }

// List entries per CTA in direction fwd: 8 where the forward's pieces of 8 still fill at
// most one wave (two CTAs per SM), so the short lists of a narrow mask run as shorter chains
// side by side; SQ_PIECE where pieces of 16 would take more than two waves of the direction's
// step kernel (18432 ba_8; the 8192 ba_8 backward at 128 rows, one CTA an SM), as fewer lists
// are then cut and summed across CTAs; else 16 (8192's forward, two CTAs an SM, is slower
// with longer pieces). The counts are the mask's rows', which its columns match in number.
// A plan's piece (the tests: long pieces on small masks) overrides it.
static int piece_len(const Seq *s, int fwd) {
    if (s->plan.piece) return s->plan.piece < SQ_PIECE ? s->plan.piece : SQ_PIECE;
    const BsMat *w = s->a.wh;
    const long nt = tiles(s->a.B), nsm = g_cuda.nsm;
    if (count_pieces(w->row_ptr, w->nbc, 8) * nt <= 2 * nsm) return 8;
    const long slots = nsm * seq_step_ctas_per_sm(s->bf, fwd, s->a.B);
    return count_pieces(w->row_ptr, w->nbc, 16) * nt > 2 * slots ? SQ_PIECE : 16;
}

// The mask's lists from gate 0 of the stacked W_h: rows (fwd) or columns (bwd) of the mask,
// entries (slab index, gate-0 block), cut into pieces of at most `most`. Gate g's copy of
// block k is k + g * gstride.
static void upload_lists(Seq *s, const BsMat *w, int fwd, int most) {
    int nr = s->nlists, n0 = w->row_ptr[nr], *ptr, *idx, *blk;
    if (fwd) {
        ptr = (int *)xmalloc(sizeof(int) * (size_t)(nr + 1));
        idx = (int *)xmalloc(sizeof(int) * (size_t)(n0 + 1));
        blk = (int *)xmalloc(sizeof(int) * (size_t)(n0 + 1));
        memcpy(ptr, w->row_ptr, sizeof(int) * (size_t)(nr + 1));
        for (int k = 0; k < n0; k++) idx[k] = w->col_idx[k], blk[k] = k;
    } else {
        bsmat_columns(w, nr, &ptr, &idx, &blk);
    }
    MmPiece *pc = cut_pieces(ptr, nr, most, &s->npieces[fwd]);
    s->pieces[fwd] = pieces_to_device(pc, s->npieces[fwd]);
    s->idx[fwd] = upload_ints(idx, n0);
    s->blk[fwd] = upload_ints(blk, n0);
    free(ptr); free(idx); free(blk); free(pc);
}

// The engine takes block 32 and W_h stacked from one square mask (4 gates), with offsets
// into the slabs and the weights that fit the step kernels' int arithmetic.
static int engine_takes(const SeqArgs *a) {
    const BsMat *w = a->wh;
    int fits = (long)w->nnzb * SQ_BS * SQ_BS <= INT_MAX && 4L * a->H * 128 <= INT_MAX;
    return fits && w->bs == SQ_BS && w->ngates == 4 && w->nbr == 4 * w->nbc;
}

// The layer's fp32 z, act or dz [T*B, 4H]: device memory where something writes it, else
// only address space (mmap'd without access): a key under which its bf16 twin serves every
// reader, and a fault, not stale values, for any access. In bf16 mode without layer norm
// the steps write dz and act only in bf16 (act packed for the step kernels alone), and in
// either precision z is never filled where the steps read the input's table: 14 GiB of the
// 21 at H = 18432 in bf16.
static real *fp32_or_key(size_t bytes, int key) {
    if (!key) return (real *)cu_alloc(bytes);
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) die("out of address space for a %zu-byte key (mmap)", bytes);
    return (real *)p;
}

static void free_fp32_or_key(real *p, size_t bytes, int key) {
    if (key) munmap(p, bytes);
    else CUDA_CHECK(cudaFree(p));
}

// Values in the layer's z, act or dz over the window: [T*B, 4H].
static size_t zcount(const SeqArgs *a) { return (size_t)a->T * a->B * 4 * a->H; }
static size_t zbytes(const SeqArgs *a) { return sizeof(real) * zcount(a); }

// engine = wgmma: the forward steps, the backward's data steps and dW_h on wgmma where it
// runs the layer (layer 0 in bf16 without layer norm, B a multiple of 128, an sm_90 GPU);
// elsewhere the step kernels, as auto.
static void wg_attach(Seq *s) {
    const SeqArgs &a = s->a;
    const BsMat *w = a.wh;
    const void *wb = weight_operand<true>(a.wh_vals, (size_t)bsmat_nvals(w));
    const int n0 = w->row_ptr[s->nlists];
    int *blk = (int *)xmalloc(sizeof(int) * (size_t)(n0 + 1));
    for (int k = 0; k < n0; k++) blk[k] = k;  // gate 0's blocks first (upload_lists)
    s->wg = wg_fwd_create(w->row_ptr, w->col_idx, blk, s->gstride, wb, a.H, a.B);
    free(blk);
    if (!s->wg) return;
    int *ptr, *idx;
    bsmat_columns(w, s->nlists, &ptr, &idx, &blk);
    s->wgb = wg_bwd_create(ptr, idx, blk, s->gstride, wb, a.H, a.B);
    free(ptr), free(idx), free(blk);
    CUDA_CHECK(cudaMalloc(&s->hpk, 2 * wg_fwd_hpk_bytes(s->wg)));
    CUDA_CHECK(cudaMalloc(&s->dzpk, 2 * wg_bwd_dzpk_bytes(s->wgb)));
    CUDA_CHECK(cudaMalloc(&s->xb, sizeof(float) * 256 * 4 * (size_t)a.H));
}

// Rows of dz's column sums a step (dbpart): one a row tile, or on wgmma one each 64 rows.
static int dbias_rows(const Seq *s) { return s->wgb ? s->a.B / 64 : tiles(s->a.B); }

template <bool BF>
static void *seq_create_on(SeqArgs *a, SeqPlan plan) {
    if (!engine_takes(a)) return NULL;
    Seq *s = (Seq *)xcalloc(1, sizeof *s);
    s->plan = plan;
    s->dense = bsmat_is_dense(a->wh);  // its cell kernels write z and dz in fp32
    s->z_key = a->xtab && !a->ln_gain && !s->dense;
    s->dz_key = BF && !a->ln_gain && !s->dense;
    a->z = fp32_or_key(zbytes(a), s->z_key);
    a->dz = fp32_or_key(zbytes(a), s->dz_key);
    a->act = fp32_or_key(zbytes(a), s->dz_key);  // wherever dz is bf16 only, so is act (actb)
    if (s->dz_key) CUDA_CHECK(cudaMalloc(&s->actb, sizeof(bf16) * zcount(a)));
    s->a = *a;
    s->bf = BF;
    s->nlists = a->wh->nbc;
    s->gstride = a->wh->nnzb / 4;
    if (s->dense) {
        seq_dense_alloc(s);
    } else {
        for (int d = 0; d < 2; d++) upload_lists(s, a->wh, d, piece_len(s, d));
        int gy = tiles(a->B), most = s->npieces[0] > s->npieces[1] ? s->npieces[0] : s->npieces[1];
        // a partial tile per piece and row tile: 4 gates x 32 columns x (tiles x rows < B + 128)
        CUDA_CHECK(cudaMalloc(&s->part, sizeof(float) * (size_t)most * (a->B + 128) * 4 * SQ_BS));
        CUDA_CHECK(cudaMalloc(&s->count, sizeof(int) * (size_t)s->nlists * gy));
        CUDA_CHECK(cudaMemset(s->count, 0, sizeof(int) * (size_t)s->nlists * gy));
    }
    size_t BH = (size_t)a->B * a->H;
    if (BF) {
        CUDA_CHECK(cudaMalloc(&s->hb, sizeof(bf16) * BH * (a->T + 1)));
        twin_register(a->h, s->hb, BH * (a->T + 1));
    }
    if (BF && a->wgmma && a->xtab && !a->ln_gain && !s->dense) wg_attach(s);
    if (!a->ln_gain && !s->dense) CUDA_CHECK(cudaMalloc(&s->dbpart, sizeof(float) * (size_t)a->T * dbias_rows(s) * 4 * a->H));
    CUDA_CHECK(cudaStreamCreate(&s->stream));  // blocking: ordered with the default stream's work
    colsum_reserve(a->B, 4 * a->H);
    return s;
}

extern "C" void *seq_create_planned_cuda(SeqArgs *a, int bf, SeqPlan plan) {
    return bf ? seq_create_on<true>(a, plan) : seq_create_on<false>(a, plan);
}

template <bool BF>
void *seq_create_cuda(SeqArgs *a) {
    return seq_create_planned_cuda(a, BF, SeqPlan{0, 0});
}

void seq_free_cuda(void *p) {
    Seq *s = (Seq *)p;
    if (!s) return;
    for (int d = 0; d < 2; d++) {
        if (s->g[d].exec) CUDA_CHECK(cudaGraphExecDestroy(s->g[d].exec));
        CUDA_CHECK(cudaFree(s->pieces[d]));
        CUDA_CHECK(cudaFree(s->idx[d]));
        CUDA_CHECK(cudaFree(s->blk[d]));
    }
    CUDA_CHECK(cudaFree(s->part));
    CUDA_CHECK(cudaFree(s->count));
    CUDA_CHECK(cudaFree(s->hb));
    CUDA_CHECK(cudaFree(s->dzb));
    CUDA_CHECK(cudaFree(s->actb));
    CUDA_CHECK(cudaFree(s->dbpart));
    CUDA_CHECK(cudaFree(s->wd));
    CUDA_CHECK(cudaFree(s->dwd));
    wg_fwd_free(s->wg);
    wg_bwd_free(s->wgb);
    CUDA_CHECK(cudaFree(s->hpk));
    CUDA_CHECK(cudaFree(s->dzpk));
    CUDA_CHECK(cudaFree(s->xb));
    CUDA_CHECK(cudaStreamDestroy(s->stream));
    twin_forget(s->a.h);
    twin_forget(s->a.dz);
    free_fp32_or_key(s->a.z, zbytes(&s->a), s->z_key);
    free_fp32_or_key(s->a.dz, zbytes(&s->a), s->dz_key);
    free_fp32_or_key(s->a.act, zbytes(&s->a), s->dz_key);
    free(s);
}

// The window's arguments as seq_at takes them (step 0's, lstm_seq.cuh).
static SeqStep window_base(const Seq *s, const void *w, int fwd) {
    const SeqArgs &a = s->a;
    size_t BH = (size_t)a.B * a.H;
    SeqStep st = {};
    st.pieces = s->pieces[fwd];
    st.idx = s->idx[fwd];
    st.blk = s->blk[fwd];
    st.gstride = s->gstride;
    st.w = w;
    st.part = s->part;
    st.count = s->count;
    st.B = a.B;
    st.H = a.H;
    st.bias = a.bias;
    st.epi = a.ln_gain ? EPI_SUM : EPI_CELL;
    st.act = a.act;
    st.actb = s->actb;
    st.c0 = a.c;
    st.c1 = a.c + BH;
    if (fwd) {
        st.xtab = a.xtab;
        st.tok = a.tok;
        st.in = seq_h_operand(s, 0);
        st.z = a.z;
        st.h1 = a.h + BH;
        st.hb1 = s->bf ? s->hb + BH : NULL;
    } else {
        st.in = seq_dz_operand(s, 0);
        st.dh = a.dh;
        st.dc = a.dc;
        st.dz = a.dz;
        st.dzb = s->bf ? s->dzb : NULL;
        st.dbpart = s->dbpart;
    }
    return st;
}

// Step t of direction fwd (seq_at with this engine's element size and row tiles).
static SeqStep step_at(const Seq *s, const SeqStep &base, int t, int fwd, int T) {
    return seq_at(base, t, fwd, T, s->bf ? (int)sizeof(bf16) : (int)sizeof(float), tiles(s->a.B));
}

// The forward on the wgmma step: once a window the weights packed, the bias folded into the
// input table and h_0 packed; then a step kernel a time step, reading h_t from one packed
// image and writing h_{t+1} into the other beside the outputs the step kernels write.
static void record_wg_fwd(const Seq *s, const void *w, int T) {
    const SeqArgs &a = s->a;
    const size_t BH = (size_t)a.B * a.H;
    wg_fwd_pack_w(s->wg, w, s->stream);
    wg_fwd_fold_bias(s->wg, s->xb, a.xtab, a.bias, s->stream);
    wg_fwd_pack_h(s->wg, s->hb, s->hpk, s->stream);
    const SeqStep base = window_base(s, w, 1);
    for (int t = 0; t < T; t++) {
        const SeqStep st = step_at(s, base, t, 1, T);
        WgStep ws = {};
        ws.hpk = s->hpk + t % 2 * BH, ws.hpk1 = s->hpk + (t + 1) % 2 * BH;
        ws.xtab = s->xb, ws.tok = st.tok, ws.c0 = st.c0, ws.c1 = st.c1;
        ws.h1 = st.h1, ws.hb1 = st.hb1, ws.actb = st.actb;
        wg_fwd_step(s->wg, &ws, s->stream);
    }
}

// Forward, as model_step.c's loop: z_t += W_h h_t, then the cell (fused, or lstm_fwd after
// the product where layer norm needs whole rows).
template <bool BF>
static void record_fwd(const Seq *s, const void *w, int T) {
    const SeqArgs &a = s->a;
    size_t BH = (size_t)a.B * a.H;
    if (BF) to_bf16(s->hb, a.h, BH, s->stream);
    if (s->wg) return record_wg_fwd(s, w, T);
    const SeqStep base = window_base(s, w, 1);
    for (int t = 0; t < T; t++) {
        SeqStep st = step_at(s, base, t, 1, T);
        seq_step_launch<BF, true>(st, s->npieces[1], s->stream, NULL, s->plan.ring);
        if (!a.ln_gain) continue;
        lstm_fwd_on(s->stream, st.h1, st.c1, st.act, a.lnstat + t * (size_t)a.B * 8, st.z, st.c0, a.bias, a.ln_gain, a.B,
                    a.H, st.hb1);
    }
}

// The backward's data steps on wgmma: once a window the weights packed; then a step kernel a
// time step from t = T - 1 (no product) down to the carried state's (t = -1: dh_0 += dz_0 W_h
// alone), reading dz_{t+1} from one packed image and writing dz_t into the other beside the
// outputs the step kernels write, dz's column sums by 64 rows (dbias_rows).
static void record_wg_bwd(const Seq *s, const void *w, int T) {
    const SeqArgs &a = s->a;
    const size_t BG = 4 * (size_t)a.B * a.H;
    wg_bwd_pack_w(s->wgb, w, s->stream);
    const SeqStep base = window_base(s, w, 0);
    for (int t = T - 1; t >= -1; t--) {
        const SeqStep st = step_at(s, base, t, 0, T);
        WgBwdStep ws = {};
        ws.dzpk = t == T - 1 ? NULL : s->dzpk + (t + 1) % 2 * BG;
        ws.dh = st.dh;
        if (t >= 0) {
            ws.dzpk1 = s->dzpk + t % 2 * BG, ws.dc = a.dc, ws.actb = st.actb, ws.c0 = st.c0, ws.c1 = st.c1, ws.dzb = st.dzb;
            ws.dbpart = s->dbpart + (size_t)t * dbias_rows(s) * 4 * a.H;
        }
        wg_bwd_step(s->wgb, &ws, s->stream);
    }
}

// Backward: at step t, dh_{t+1} gets dz_{t+1} W_h (none at the last step), then the cell's
// gradient gives dz_t; finally (t = -1) the carried h's gradient dh_0 = dz_0 W_h.
template <bool BF>
static void record_bwd(const Seq *s, const void *w, int T) {
    const SeqArgs &a = s->a;
    size_t BH = (size_t)a.B * a.H, BG = 4 * BH;
    CUDA_CHECK(cudaMemsetAsync(a.dh, 0, BH * sizeof(real), s->stream));
    CUDA_CHECK(cudaMemsetAsync(a.dc, 0, BH * sizeof(real), s->stream));
    if (s->wgb) return record_wg_bwd(s, w, T);
    const SeqStep base = window_base(s, w, 0);
    SeqMaps maps = {};
    if (BF) maps = seq_maps(s->dzb, T, a.B, a.H, (const bf16 *)w, a.wh->nnzb);
    for (int t = T - 1; t >= -1; t--) {
        SeqStep st = step_at(s, base, t, 0, T);
        if (t < 0 || !a.ln_gain || st.in)
            seq_step_launch<BF, false>(st, s->npieces[0], s->stream, BF ? &maps : NULL, 0);
        if (t < 0 || !a.ln_gain) continue;
        lstm_bwd_on(s->stream, st.dz, a.dc, a.dbias, a.dln_gain, st.dh, a.dc, st.act, st.c1, st.c0,
                    a.z + t * BG, a.lnstat + t * (size_t)a.B * 8, a.ln_gain, a.B, a.H, st.dzb);
    }
}

// Replays direction d's graph for T steps, capturing it first if T or the weights changed.
template <bool BF>
static void replay(Seq *s, int fwd, int T) {
    const SeqArgs &a = s->a;
    const void *w = weight_operand<BF>(a.wh_vals, (size_t)bsmat_nvals(a.wh));
    Graph *g = &s->g[fwd];
    if (!g->exec || g->T != T || g->w != w) {
        if (g->exec) CUDA_CHECK(cudaGraphExecDestroy(g->exec));
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
        if (fwd) s->dense ? seq_dense_record_fwd<BF>(s, w, T) : record_fwd<BF>(s, w, T);
        else s->dense ? seq_dense_record_bwd<BF>(s, T) : record_bwd<BF>(s, w, T);
        CUDA_CHECK(cudaStreamEndCapture(s->stream, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
        g->T = T;
        g->w = w;
    }
    CUDA_CHECK(cudaGraphLaunch(g->exec, s->stream));
}

template <bool BF>
void seq_fwd_cuda(void *p, int T) {
    replay<BF>((Seq *)p, 1, T);
}

// After the steps (on the default stream, which waits for the engine's stream): dbias from
// the step kernels' tile sums (layer norm summed it per step), and dW_h from the engine's
// own copies (on wgmma where the steps are).
template <bool BF>
void seq_bwd_cuda(void *p, int T) {
    Seq *s = (Seq *)p;
    const SeqArgs &a = s->a;
    if (BF && !s->dzb) {  // evaluation-only windows never need it
        CUDA_CHECK(cudaMalloc(&s->dzb, sizeof(bf16) * zcount(&a)));
        twin_register(a.dz, s->dzb, zcount(&a));
    }
    replay<BF>(s, 0, T);
    int N = T * a.B;
    if (s->dense) return seq_dense_bwd_weight<BF>(s, T);  // dW_h and dbias its own way
    if (!a.ln_gain) colsum_acc(a.dbias, s->dbpart, T * dbias_rows(s), 4 * a.H);
    if (!s->wgb || !wg_dw(a.dwh, seq_dz_operand(s, 0), seq_h_operand(s, 0), a.wh, N, NULL))
        bsmm_bwd_weight_typed(a.dwh, seq_dz_operand(s, 0), seq_h_operand(s, 0), a.wh, N, BF);
}

RecurPath seq_route_cuda(void *p) {
    const Seq *s = (const Seq *)p;
    return s->dense ? RECUR_DENSE : s->wg ? RECUR_WGMMA : RECUR_GRAPH;
}

template void *seq_create_cuda<false>(SeqArgs *);
template void *seq_create_cuda<true>(SeqArgs *);
template void seq_fwd_cuda<false>(void *, int);
template void seq_fwd_cuda<true>(void *, int);
template void seq_bwd_cuda<false>(void *, int);
template void seq_bwd_cuda<true>(void *, int);
