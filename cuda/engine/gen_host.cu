// gen_host.cu: the sampling loops' host side (backend.h gen_*): a plan of pieces over each
// product's blocks (sparse/piece_plan.h: the plain cell's rows cut over warps, the mLSTM's
// dealt whole to CTAs), the weights gathered in the plans' order, what fits held in shared
// memory, and one cooperative launch per gen_run. CPU twin: the caller's infer_step and sample_byte loop.
#include <stdlib.h>
#include <type_traits>
#include <string.h>
#include "engine/gen_loop.cuh"
#include "sparse/piece_plan.h"

typedef struct {
    int H, D, bf, grid, par, nq, ring;
    size_t smem, span[GEN_MAX_STAGES];  // span: the most blocks of one stage a CTA holds
    int *cta[GEN_MAX_STAGES];           // mLSTM, while planning: each stage's CTA spans [grid + 1]
    long held;                          // mLSTM: the blocks its CTAs hold in shared memory (place_mstages)
    unsigned off[7];
    GenStage st[GEN_MAX_STAGES];
    int nblk[GEN_MAX_STAGES];
    const real *bias, *xtab, *bo, *gain, *mtab;
    float *sln, *fin, *hpart, *h, *c;  // fin: the mLSTM's finished rows, hpart W_o's chunks (mlstm_buffers)
    double2 *fin_stat;
    unsigned long long *bar;
    uint64_t *rng;
    double temperature, top_p;
    int top_k;
    int *feed;               // per-run buffers, grown as runs need
    unsigned char *out;
    float *logits;
    size_t feed_n, out_n, logits_n;
    Route route;
} GenLoop;

// Grows a device buffer to n elements of sz bytes (contents not kept).
static void grow(void **p, size_t *have, size_t n, size_t sz) {
    if (n <= *have) return;
    if (*p) CUDA_CHECK(cudaFree(*p));
    *p = cu_alloc(n * sz);
    *have = n;
}

// The largest of ptr[b + 1] - ptr[b] over b < n: the most rows, pieces, blocks or columns of one of n.
static int most_gap(const int *ptr, int n) {
    int most = 0;
    for (int b = 0; b < n; b++) most = ptr[b + 1] - ptr[b] > most ? ptr[b + 1] - ptr[b] : most;
    return most;
}

// A stage's rows: w's block rows, then (head) W_o's 8 of H/32 blocks each.
static int *stage_rows(const BsMat *w, int H, int head) {
    int nrows = w->nbr + (head ? 8 : 0), *rp = (int *)xmalloc(sizeof(int) * (size_t)(nrows + 1));
    memcpy(rp, w->row_ptr, sizeof(int) * (size_t)(w->nbr + 1));
    for (int r = w->nbr; r < nrows; r++) rp[r + 1] = rp[r] + H / 32;
    return rp;
}

// Each CTA's distinct block columns over its span (the mLSTM normalizes only these rows of a
// stage's input).
static void cta_columns(GenLoop *g, GenStage *st, const int *cols, const int *cta) {
    int *ptr, *list;
    span_columns(cols, cta, g->grid, g->H / 32, &ptr, &list);
    st->most_cols = most_gap(ptr, g->grid);
    st->cta_col_ptr = upload_ints(ptr, g->grid + 1);
    st->cta_col = upload_ints(list, ptr[g->grid]);
    free(ptr); free(list);
}

// Lays stage i's pieces out in worker order (per workers to a CTA): per block its column; per
// piece its first block; per CTA its span. Returns each block's source on the device (w's
// block k, or -1 - the head block) for gen_gather.
static int *lay_out(GenLoop *g, int i, const PiecePlan *pl, const BsMat *w, const int *rp, int per) {
    GenStage *st = &g->st[i];
    const int nbc = g->H / 32, np = pl->npieces, nblk = g->nblk[i];
    int *src = (int *)xmalloc(sizeof(int) * (size_t)nblk), *cols = (int *)xmalloc(sizeof(int) * (size_t)nblk);
    int *pblk = (int *)xmalloc(sizeof(int) * (size_t)(np + 1)), *cta = (int *)xmalloc(sizeof(int) * (size_t)(g->grid + 1));
    int n = 0;
    for (int p = 0; p < np; p++) {
        pblk[p] = n;
        for (int k = pl->k0[p]; k < pl->k0[p] + pl->n[p]; k++, n++) {
            int head = k - rp[w->nbr];
            src[n] = pl->row[p] < w->nbr ? k : -1 - head;
            cols[n] = pl->row[p] < w->nbr ? w->col_idx[k] : head % nbc;
        }
    }
    pblk[np] = n;
    for (int b = 0; b <= g->grid; b++) cta[b] = pblk[pl->worker_ptr[b * per]];
    g->span[i] = (size_t)most_gap(cta, g->grid);
    cta_columns(g, st, cols, cta);
    int *src_d = upload_ints(src, nblk);
    st->cols = upload_ints(cols, nblk);
    st->piece_blk = upload_ints(pblk, np + 1);
    st->cta_blk = upload_ints(cta, g->grid + 1);
    st->wblk = cu_alloc((size_t)nblk * GEN_BLOCK * (g->bf ? sizeof(bf16) : sizeof(float)));
    free(src); free(cols); free(pblk);
    if (per == 1) g->cta[i] = cta;
    else free(cta);
    return src_d;
}

// Stage i: w's rows (and the head's when wo is given) planned over the grid's warps, in pieces
// of at most an even share, its blocks gathered in worker order as W.
template <typename W>
static void build_stage(GenLoop *g, int i, const BsMat *w, const real *vals, const real *wo) {
    GenStage *st = &g->st[i];
    int *rp = stage_rows(w, g->H, wo != NULL), nrows = w->nbr + (wo ? 8 : 0);
    const int nw = g->grid * GEN_WARPS;
    g->nblk[i] = rp[nrows];
    PiecePlan pl;
    piece_plan(&pl, rp, nrows, cdiv(g->nblk[i], nw), nw);
    st->rows = nrows, st->npieces = pl.npieces;
    int *src = lay_out(g, i, &pl, w, rp, GEN_WARPS);
    gen_gather<W>((W *)st->wblk, src, g->nblk[i], vals, wo, g->H);
    CUDA_CHECK(cudaFree(src));
    st->worker_ptr = upload_ints(pl.worker_ptr, nw + 1);
    st->row_ptr = upload_ints(pl.row_ptr, nrows + 1);
    st->row_piece = upload_ints(pl.row_piece, pl.npieces);
    st->part = (float *)cu_alloc(sizeof(float) * 32 * (size_t)(pl.npieces ? pl.npieces : 1));
    piece_plan_free(&pl);
    free(rp);
}

// W_o's head rows go to the mLSTM's CTAs in chunks of the largest divisor of H/32 blocks
// not above an even share of the grid.
static int head_chunk(int nbc, int grid) {
    int cs = (8 * nbc + grid - 1) / grid;
    while (nbc % cs) cs--;
    return cs;
}

// The mLSTM's stage i: w's rows (and W_o's chunks when wo is given) dealt whole to the CTAs,
// longest first, its blocks gathered in CTA order as W; each CTA's columns for the norm before it.
template <typename W>
static void build_mstage(GenLoop *g, int i, const BsMat *w, const real *vals, const real *wo) {
    GenStage *st = &g->st[i];
    const int nbc = g->H / 32, cs = head_chunk(nbc, g->grid), nch = wo ? 8 * nbc / cs : 0, nrows = w->nbr + nch;
    int *rp = (int *)xmalloc(sizeof(int) * (size_t)(nrows + 1));
    memcpy(rp, w->row_ptr, sizeof(int) * (size_t)(w->nbr + 1));
    for (int r = w->nbr; r < nrows; r++) rp[r + 1] = rp[r] + cs;
    const int most = most_gap(rp, w->nbr) > cs ? most_gap(rp, w->nbr) : cs;
    if (wo) g->nq = nbc / cs;
    g->nblk[i] = rp[nrows];
    PiecePlan pl;
    piece_plan(&pl, rp, nrows, most, g->grid);
    st->rows = nrows, st->npieces = pl.npieces, st->nfin = w->nbr;
    int *src = lay_out(g, i, &pl, w, rp, 1);
    gen_gather<W>((W *)st->wblk, src, g->nblk[i], vals, wo, g->H);
    CUDA_CHECK(cudaFree(src));
    st->most_span = (int)g->span[i], st->most_seg = most_gap(pl.worker_ptr, g->grid);
    st->worker_ptr = upload_ints(pl.worker_ptr, g->grid + 1);
    st->piece_row = upload_ints(pl.row, pl.npieces);
    piece_plan_free(&pl);
    free(rp);
}

// The mLSTM's shared memory: everything where it fits beside the layout's head; else each
// warp's rings, and of each CTA's runs the first blocks held so that every stage streams
// about as many (stream_even). Returns the bytes a CTA needs, 0 where the head alone does not fit.
template <typename W>
static size_t place_mstages(GenLoop *g, int optin) {
    GenLaunch L = {};
    L.H = g->H, L.D = g->D;
    memcpy(L.st, g->st, sizeof L.st);
    const size_t blk = GEN_BLOCK * sizeof(W), head0 = gen_mlstm_layout(&L);
    int n[GEN_MAX_STAGES], keep[GEN_MAX_STAGES], *res[GEN_MAX_STAGES];
    long fits = (long)(optin - (long)head0) / (long)(GEN_WARPS * blk), most = 0;
    for (int b = 0; b < g->grid; b++) {
        long t = 0;
        for (int i = 0; i <= g->D; i++) t += cdiv(g->cta[i][b + 1] - g->cta[i][b], GEN_WARPS);
        most = t > most ? t : most;
    }
    L.ring = most > fits;
    const size_t head = gen_mlstm_layout(&L);
    if (head > (size_t)optin) return 0;
    const int room = (int)((optin - head) / (GEN_WARPS * blk));
    size_t held = 0;
    g->held = 0;
    for (int i = 0; i <= g->D; i++) res[i] = (int *)xmalloc(sizeof(int) * (size_t)g->grid);
    for (int b = 0; b < g->grid; b++) {
        for (int i = 0; i <= g->D; i++) n[i] = cdiv(g->cta[i][b + 1] - g->cta[i][b], GEN_WARPS);
        stream_even(n, g->D + 1, room, keep);
        size_t bytes = 0;
        for (int i = 0; i <= g->D; i++) {
            const int len = g->cta[i][b + 1] - g->cta[i][b];
            res[i][b] = keep[i], bytes += (size_t)GEN_WARPS * keep[i] * blk;
            for (int w = 0; w < GEN_WARPS; w++) {  // warp w's run, its first keep[i] held
                const int run = (w + 1) * len / GEN_WARPS - w * len / GEN_WARPS;
                g->held += run < keep[i] ? run : keep[i];
            }
        }
        held = bytes > held ? bytes : held;
    }
    for (int i = 0; i <= g->D; i++) {
        g->st[i].res = upload_ints(res[i], g->grid);
        free(res[i]);
    }
    g->ring = L.ring;
    memcpy(g->off, L.off, sizeof g->off);
    const size_t smem = head + held;
    return gen_mlstm_ctas_per_sm<W>(smem) >= 1 ? smem : 0;
}

// Holds in shared memory the stages that fill most of it beside the head (fit_most); returns
// the bytes a CTA needs, 0 where not even the head fits (one CTA an SM).
template <typename W>
static size_t place_stages(GenLoop *g, int optin) {
    const size_t head = gen_head_bytes(g->H, g->st[0].rows, g->st[0].npieces);
    size_t bytes[GEN_MAX_STAGES];
    for (int i = 0; i <= g->D; i++) bytes[i] = g->span[i] * GEN_BLOCK * sizeof(W);
    const unsigned set = head <= (size_t)optin ? fit_most(bytes, g->D + 1, optin - head) : 0;
    size_t smem = head;
    for (int i = 0; i <= g->D; i++) {
        g->st[i].resident = set >> i & 1;
        if (g->st[i].resident) g->st[i].smem_off = (unsigned)smem, smem += g->span[i] * GEN_BLOCK * sizeof(W);
    }
    if (smem > head && gen_loop_ctas_per_sm<W>(smem) < 1) {
        for (int i = 0; i <= g->D; i++) g->st[i].resident = 0;
        smem = head;
    }
    return head <= (size_t)optin && gen_loop_ctas_per_sm<W>(smem) >= 1 ? smem : 0;
}

// The mLSTM's own buffers: the internal norms' gains and biases in one [D][2][H] array; where
// each stage finishes its rows: stage j < D into half j % 2 of s[2][H] (the phase that reads
// stage j's runs stage j + 1), the gates into z[4H], each row's sums beside them; W_o's chunks.
static void mlstm_buffers(GenLoop *g, const GenArgs *a) {
    const size_t H = (size_t)g->H, R = H / 32;
    g->sln = (float *)cu_alloc(sizeof(float) * 2 * H * (size_t)g->D);
    for (int j = 0; j < g->D; j++)
        CUDA_CHECK(cudaMemcpy(g->sln + 2 * H * j, a->sln[j], sizeof(float) * 2 * H, cudaMemcpyDeviceToDevice));
    g->fin = (float *)cu_alloc(sizeof(float) * 6 * H);
    g->fin_stat = (double2 *)cu_alloc(sizeof(double2) * 6 * R);
    g->hpart = (float *)cu_alloc(sizeof(float) * 32 * 8 * (size_t)g->nq);
    for (int j = 0; j <= g->D; j++) {
        GenStage *st = &g->st[j];
        const size_t half = j < g->D ? (size_t)(j % 2) : 2;
        st->out = g->fin + half * H, st->stat = g->fin_stat + half * R;
    }
}

// The weights' MB, and those held in shared memory: the plain loop's resident stages, the
// mLSTM's held blocks (place_mstages).
static void describe(GenLoop *g) {
    const double bmb = (double)GEN_BLOCK * (g->bf ? 2 : 4) / 1e6;
    long all = 0, held = g->D ? g->held : 0;
    for (int i = 0; i <= g->D; i++) {
        all += g->nblk[i];
        if (!g->D && g->st[i].resident) held += g->nblk[i];
    }
    g->route = (Route){.sampling = 1, .place = held == all ? LOOP_SMEM : held == 0 ? LOOP_L2 : LOOP_PART, .ctas = g->grid,
                       .products = g->D + 1, .bf16 = g->bf, .mb = all * bmb, .held_mb = held * bmb};
}

static int takes(const GenArgs *a) {
    const BsMat *w = a->wh;
    int ok = w->bs == 32 && w->ngates == 4 && w->rows == 4 * a->H && w->cols == a->H && a->H % 32 == 0 &&
             a->H <= gen_max_units(g_cuda.nsm) && a->D >= 0 && a->D <= SW_MAX_DEPTH;
    for (int j = 0; j < a->D; j++) ok &= a->ws[j]->bs == 32 && a->ws[j]->rows == a->H && a->ws[j]->cols == a->H;
    return ok;
}

void gen_free_cuda(void *gv);  // below

template <bool BF>
void *gen_create_cuda(const GenArgs *a) {
    typedef typename std::conditional<BF, bf16, float>::type W;
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (!takes(a)) return NULL;
    GenLoop *g = (GenLoop *)xcalloc(1, sizeof *g);
    *g = (GenLoop){.H = a->H, .D = a->D, .bf = BF, .grid = g_cuda.nsm, .bias = a->bias, .xtab = a->xtab, .bo = a->bo,
                   .gain = a->gain, .mtab = a->mtab, .temperature = a->temperature, .top_p = a->top_p, .top_k = a->top_k};
    if (a->D) {
        build_mstage<W>(g, 0, a->ws[0], a->ws_vals[0], a->wo);
        for (int j = 1; j < a->D; j++) build_mstage<W>(g, j, a->ws[j], a->ws_vals[j], NULL);
        build_mstage<W>(g, a->D, a->wh, a->wh_vals, NULL);
        mlstm_buffers(g, a);
        g->smem = place_mstages<W>(g, optin);
    } else {
        build_stage<W>(g, 0, a->wh, a->wh_vals, a->wo);
        g->smem = place_stages<W>(g, optin);
    }
    g->h = (float *)cu_alloc(sizeof(float) * 2 * (size_t)g->H);
    g->c = (float *)cu_alloc(sizeof(float) * (size_t)g->H);
    g->bar = (unsigned long long *)cu_alloc(sizeof(unsigned long long));
    g->rng = (uint64_t *)cu_alloc(4 * sizeof(unsigned long long));
    describe(g);
    for (int i = 0; i <= g->D; i++) free(g->cta[i]), g->cta[i] = NULL;
    if (!g->smem) {
        gen_free_cuda(g);
        return NULL;
    }
    return g;
}
template void *gen_create_cuda<false>(const GenArgs *);
template void *gen_create_cuda<true>(const GenArgs *);

void gen_run_cuda(void *gv, const int *feed, int nfeed, int nsample, uint64_t rng[4], unsigned char *out, float *logits) {
    GenLoop *g = (GenLoop *)gv;
    if (nfeed < 1 || nsample < 0) die("internal: gen_run feeding %d bytes and drawing %d", nfeed, nsample);
    const int steps = nfeed + (nsample > 0 ? nsample - 1 : 0);
    grow((void **)&g->feed, &g->feed_n, (size_t)nfeed, sizeof(int));
    grow((void **)&g->out, &g->out_n, (size_t)(nsample ? nsample : 1), 1);
    if (logits) grow((void **)&g->logits, &g->logits_n, (size_t)steps * 256, sizeof(float));
    CUDA_CHECK(cudaMemcpy(g->feed, feed, sizeof(int) * (size_t)nfeed, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemsetAsync(g->bar, 0, sizeof(unsigned long long), g_cuda.stream));
    GenLaunch L = {};
    L.H = g->H, L.D = g->D, L.steps = steps, L.nfeed = nfeed, L.nsample = nsample, L.par = g->par;
    memcpy(L.st, g->st, sizeof L.st);
    L.bias = g->bias, L.xtab = g->xtab, L.bo = g->bo, L.gain = g->gain, L.sln = g->sln, L.mtab = g->mtab;
    L.hpart = g->hpart, L.nq = g->nq, L.ring = g->ring;
    memcpy(L.off, g->off, sizeof L.off);
    L.h = g->h, L.c = g->c, L.bar = g->bar, L.feed = g->feed;
    L.temperature = g->temperature, L.top_p = g->top_p, L.top_k = g->top_k;
    memcpy(L.rng, rng, sizeof L.rng);
    L.out = g->out, L.logits = logits ? g->logits : NULL, L.rng_out = g->rng;
    if (g->D && g->bf) gen_mlstm_launch<bf16>(L, g->grid, g->smem);
    else if (g->D) gen_mlstm_launch<float>(L, g->grid, g->smem);
    else if (g->bf) gen_loop_launch<bf16>(L, g->grid, g->smem);
    else gen_loop_launch<float>(L, g->grid, g->smem);
    LAUNCH_CHECK();
    if (nsample) CUDA_CHECK(cudaMemcpy(out, g->out, (size_t)nsample, cudaMemcpyDeviceToHost));
    if (logits) CUDA_CHECK(cudaMemcpy(logits, g->logits, sizeof(float) * (size_t)steps * 256, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(rng, g->rng, 4 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaStreamSynchronize(g_cuda.stream));
    g->par = (g->par + steps) & 1;
}

void gen_state_cuda(void *gv, real *h, real *c) {
    GenLoop *g = (GenLoop *)gv;
    CUDA_CHECK(cudaMemcpy(h, g->h + (size_t)g->par * g->H, sizeof(float) * (size_t)g->H, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(c, g->c, sizeof(float) * (size_t)g->H, cudaMemcpyDeviceToHost));
}

void gen_free_cuda(void *gv) {
    GenLoop *g = (GenLoop *)gv;
    if (!g) return;
    for (int i = 0; i <= g->D; i++) {
        const GenStage *st = &g->st[i];
        const void *ps[] = {st->wblk, st->cols, st->worker_ptr, st->piece_blk, st->row_ptr, st->row_piece, st->piece_row,
                            st->cta_blk, st->cta_col_ptr, st->cta_col, st->res, st->part};
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
            if (ps[k]) CUDA_CHECK(cudaFree((void *)ps[k]));
    }
    void *all[] = {g->sln, g->fin, g->fin_stat, g->hpart, g->h, g->c, g->bar, g->rng, g->feed, g->out, g->logits};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) CUDA_CHECK(cudaFree(all[i]));
    free(g);
}

void gen_route_cuda(void *gv, Route *r) { *r = ((GenLoop *)gv)->route; }
