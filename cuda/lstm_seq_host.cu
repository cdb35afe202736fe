// lstm_seq_host.cu: the recurrent engine's host side (backend.h seq_*): work lists over the
// mask, the engine's bf16 copies of h and dz, and one CUDA graph per direction that replays
// a window's step launches (captured once, relaunched every window: no per-step launch cost
// on the host, and the GPU runs the steps back to back). CPU twin: the per-step loop of
// src/model_step.c, which the CPU backend always runs.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lstm_seq_host.cuh"

// Row tiles of B rows (both directions).
static int tiles(int B) { return cdiv(B, seq_tm(B)); }

// List entries per CTA: half of SQ_PIECE where the forward's pieces of that length still
// fill at most one wave (two CTAs per SM), so the short lists of a narrow mask run as
// shorter chains side by side (H100, H = 4096 ba_4: 10.2 -> 9.2 ms per step); else SQ_PIECE,
// as finer cuts of a grid that already takes several waves only add partial tiles
// (H = 8192 ba_8: 20.5 ms at 16, 22.1 at 11, 24.9 at 8).
static int piece_len(const BsMat *w, int B) {
    int half = SQ_PIECE / 2;
    return (long)count_pieces(w->row_ptr, w->nbc, half) * tiles(B) <= 2L * g_cuda.nsm ? half : SQ_PIECE;
}

// The mask's lists from gate 0 of the stacked W_h: rows (fwd) or columns (bwd) of the mask,
// entries (slab index, gate-0 block), cut into pieces of at most `most`. Gate g's copy of
// block k is k + g * gstride.
static void upload_lists(Seq *s, const BsMat *w, int fwd, int most) {
    int nr = s->nlists, n0 = w->row_ptr[nr];
    int *ptr = (int *)xcalloc((size_t)nr + 1, sizeof(int)), *idx = (int *)xmalloc(sizeof(int) * (size_t)(n0 + 1));
    int *blk = (int *)xmalloc(sizeof(int) * (size_t)(n0 + 1));
    if (fwd) {
        memcpy(ptr, w->row_ptr, sizeof(int) * (size_t)(nr + 1));
        for (int k = 0; k < n0; k++) idx[k] = w->col_idx[k], blk[k] = k;
    } else {
        for (int j = 0, q = 0; j < nr; j++) {
            for (int p = w->col_ptr[j]; p < w->col_ptr[j + 1]; p++)
                if (w->csc_row[p] < nr) idx[q] = w->csc_row[p], blk[q++] = w->csc_blk[p];
            ptr[j + 1] = q;
        }
    }
    s->pieces[fwd] = (MmPiece *)upload_pieces(ptr, nr, most, &s->npieces[fwd]);
    s->idx[fwd] = upload_ints(idx, n0);
    s->blk[fwd] = upload_ints(blk, n0);
    free(ptr); free(idx); free(blk);
}

// The engine takes block 32 and W_h stacked from one square mask (4 gates), with offsets
// into the slabs and the weights that fit the step kernels' int arithmetic.
static int engine_takes(const SeqArgs *a) {
    const BsMat *w = a->wh;
    int fits = (long)w->nnzb * SQ_BS * SQ_BS <= INT_MAX && 4L * a->H * 128 <= INT_MAX;
    return fits && w->bs == SQ_BS && w->ngates == 4 && w->nbr == 4 * w->nbc && (!a->x || a->E % SQ_BS == 0);
}

// The layer's fp32 z or dz [T*B, 4H]: device memory where something writes it, else only
// address space (mmap'd without access): a key under which its bf16 twin serves every
// reader, and a fault, not stale values, for any access. In bf16 mode without layer norm
// the steps write dz only in bf16, and z is never filled where the input is fused: 9 GiB
// of the 21 at H = 18432.
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

// Values in the layer's z or dz over the window: [T*B, 4H].
static size_t zcount(const SeqArgs *a) { return (size_t)a->T * a->B * 4 * a->H; }
static size_t zbytes(const SeqArgs *a) { return sizeof(real) * zcount(a); }

template <bool BF>
void *seq_create_cuda(SeqArgs *a) {
    if (!engine_takes(a)) return NULL;
    Seq *s = (Seq *)xcalloc(1, sizeof *s);
    s->dense = bsmat_is_dense(a->wh);  // its cell kernels write z and dz in fp32
    s->z_key = BF && a->x && !a->ln_gain && !s->dense;
    s->dz_key = BF && !a->ln_gain && !s->dense;
    a->z = fp32_or_key(zbytes(a), s->z_key);
    a->dz = fp32_or_key(zbytes(a), s->dz_key);
    s->a = *a;
    s->bf = BF;
    s->nlists = a->wh->nbc;
    s->gstride = a->wh->nnzb / 4;
    if (s->dense) {
        seq_dense_alloc(s);
    } else {
        int len = piece_len(a->wh, a->B);  // one length for both directions
        upload_lists(s, a->wh, 0, len);
        upload_lists(s, a->wh, 1, len);
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
        if (a->x) CUDA_CHECK(cudaMalloc(&s->xb, sizeof(bf16) * (size_t)a->T * a->B * a->E));
    }
    if (!a->ln_gain && !s->dense) CUDA_CHECK(cudaMalloc(&s->dbpart, sizeof(float) * (size_t)a->T * tiles(a->B) * 4 * a->H));
    CUDA_CHECK(cudaStreamCreate(&s->stream));  // blocking: ordered with the default stream's work
    colsum_reserve(a->B, 4 * a->H);
    return s;
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
    CUDA_CHECK(cudaFree(s->dbpart));
    CUDA_CHECK(cudaFree(s->xb));
    CUDA_CHECK(cudaFree(s->wd));
    CUDA_CHECK(cudaFree(s->dwd));
    CUDA_CHECK(cudaStreamDestroy(s->stream));
    twin_forget(s->a.h);
    twin_forget(s->a.dz);
    free_fp32_or_key(s->a.z, zbytes(&s->a), s->z_key);
    free_fp32_or_key(s->a.dz, zbytes(&s->a), s->dz_key);
    free(s);
}

static SeqStep step_base(const Seq *s, const void *w, int fwd) {
    SeqStep st = {};
    st.pieces = s->pieces[fwd];
    st.idx = s->idx[fwd];
    st.blk = s->blk[fwd];
    st.gstride = s->gstride;
    st.w = w;
    st.part = s->part;
    st.count = s->count;
    st.B = s->a.B;
    st.H = s->a.H;
    st.bias = s->a.bias;
    st.epi = s->a.ln_gain ? EPI_SUM : EPI_CELL;
    return st;
}

// Forward, as model_step.c's loop: z_t += W_h h_t, then the cell (fused, or lstm_fwd after
// the product where layer norm needs whole rows).
template <bool BF>
static void record_fwd(const Seq *s, const void *w, const void *wx, int T) {
    const SeqArgs &a = s->a;
    size_t BH = (size_t)a.B * a.H, BG = 4 * BH, BE = (size_t)a.B * a.E;
    if (BF) to_bf16(s->hb, a.h, BH, s->stream);
    if (BF && a.x) to_bf16(s->xb, a.x, T * BE, s->stream);
    for (int t = 0; t < T; t++) {
        SeqStep st = step_base(s, w, 1);
        if (a.x) {
            st.x = BF ? (const void *)(s->xb + t * BE) : (const void *)(a.x + t * BE);
            st.wx = wx;
            st.E = a.E;
        }
        st.in = seq_h_operand(s, t);
        st.z = a.z + t * BG;
        st.act = a.act + t * BG;
        st.c0 = a.c + t * BH;
        st.c1 = a.c + (t + 1) * BH;
        st.h1 = a.h + (t + 1) * BH;
        st.hb1 = BF ? s->hb + (t + 1) * BH : NULL;
        seq_step_launch<BF, true>(st, s->npieces[1], s->stream);
        if (!a.ln_gain) continue;
        lstm_fwd_on(s->stream, st.h1, st.c1, st.act, a.lnstat + t * (size_t)a.B * 8, st.z, st.c0, a.bias, a.ln_gain, a.B,
                    a.H, st.hb1);
    }
}

// Backward: at step t, dh_{t+1} gets dz_{t+1} W_h (none at the last step), then the cell's
// gradient gives dz_t; finally the carried h's gradient dh_0 = dz_0 W_h.
template <bool BF>
static void record_bwd(const Seq *s, const void *w, int T) {
    const SeqArgs &a = s->a;
    size_t BH = (size_t)a.B * a.H, BG = 4 * BH;
    CUDA_CHECK(cudaMemsetAsync(a.dh, 0, BH * sizeof(real), s->stream));
    CUDA_CHECK(cudaMemsetAsync(a.dc, 0, BH * sizeof(real), s->stream));
    for (int t = T - 1; t >= 0; t--) {
        SeqStep st = step_base(s, w, 0);
        st.in = t == T - 1 ? NULL : seq_dz_operand(s, t + 1);
        st.dh = a.dh + (t + 1) * BH;
        st.dc = a.dc;
        st.act = a.act + t * BG;
        st.c0 = a.c + t * BH;
        st.c1 = a.c + (t + 1) * BH;
        st.dz = a.dz + t * BG;
        st.dzb = BF ? s->dzb + t * BG : NULL;
        st.dbpart = s->dbpart ? s->dbpart + t * (size_t)tiles(a.B) * 4 * a.H : NULL;
        if (!a.ln_gain || st.in) seq_step_launch<BF, false>(st, s->npieces[0], s->stream);
        if (!a.ln_gain) continue;
        lstm_bwd_on(s->stream, st.dz, a.dc, a.dbias, a.dln_gain, st.dh, a.dc, st.act, st.c1, st.c0,
                    a.z + t * BG, a.lnstat + t * (size_t)a.B * 8, a.ln_gain, a.B, a.H, st.dzb);
    }
    SeqStep st = step_base(s, w, 0);
    st.epi = EPI_SUM;
    st.in = seq_dz_operand(s, 0);
    st.dh = a.dh;
    seq_step_launch<BF, false>(st, s->npieces[0], s->stream);
}

// Replays direction d's graph for T steps, capturing it first if T or the weights changed.
template <bool BF>
static void replay(Seq *s, int fwd, int T) {
    const SeqArgs &a = s->a;
    const void *w = weight_operand<BF>(a.wh_vals, (size_t)bsmat_nvals(a.wh));
    const void *wx = a.x && fwd ? weight_operand<BF>(a.wx_vals, 4 * (size_t)a.H * a.E) : NULL;
    if (wx && wx == w) die("internal: the engine's W_h and W_x have no bf16 shadow (params not registered)");
    Graph *g = &s->g[fwd];
    if (!g->exec || g->T != T || g->w != w || g->wx != wx) {
        if (g->exec) CUDA_CHECK(cudaGraphExecDestroy(g->exec));
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
        if (fwd) s->dense ? seq_dense_record_fwd<BF>(s, w, wx, T) : record_fwd<BF>(s, w, wx, T);
        else s->dense ? seq_dense_record_bwd<BF>(s, T) : record_bwd<BF>(s, w, T);
        CUDA_CHECK(cudaStreamEndCapture(s->stream, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
        g->T = T;
        g->w = w;
        g->wx = wx;
    }
    CUDA_CHECK(cudaGraphLaunch(g->exec, s->stream));
}

template <bool BF>
void seq_fwd_cuda(void *p, int T) {
    replay<BF>((Seq *)p, 1, T);
}

// After the steps (on the default stream, which waits for the engine's stream): dbias from
// the step kernels' tile sums (layer norm summed it per step), and dW_h from the engine's
// own copies.
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
    if (!a.ln_gain) colsum_acc(a.dbias, s->dbpart, T * tiles(a.B), 4 * a.H);
    bsmm_bwd_weight_typed(a.dwh, seq_dz_operand(s, 0), seq_h_operand(s, 0), a.wh, N, BF);
}

template void *seq_create_cuda<false>(SeqArgs *);
template void *seq_create_cuda<true>(SeqArgs *);
template void seq_fwd_cuda<false>(void *, int);
template void seq_fwd_cuda<true>(void *, int);
template void seq_bwd_cuda<false>(void *, int);
template void seq_bwd_cuda<true>(void *, int);
