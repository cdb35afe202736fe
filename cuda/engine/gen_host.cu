// gen_host.cu: the sampling loop's host side (backend.h gen_*): the plan of pieces over the
// [W_h; W_o] blocks (sparse/piece_plan.h), the weights gathered in the plan's order, and one
// cooperative launch per gen_run. CPU twin: the caller's infer_step and sample_byte loop.
#include <stdlib.h>
#include <type_traits>
#include <string.h>
#include "engine/gen_loop.cuh"
#include "sparse/piece_plan.h"

typedef struct {
    int H, bf, grid, resident, gate_rows, npieces, nblk, par;
    size_t smem, most_span;
    void *wblk;
    int *cols, *worker_ptr, *piece_blk, *row_ptr, *row_piece, *cta_blk;
    const real *bias, *xtab, *bo;
    float *part, *h, *c;
    unsigned long long *bar;
    uint64_t *rng;
    double temperature, top_p;
    int top_k;
    int *feed;               // per-run buffers, grown as runs need
    unsigned char *out;
    float *logits;
    size_t feed_n, out_n, logits_n;
    char path[192];
} GenLoop;

// Grows a device buffer to n elements of sz bytes (contents not kept).
static void grow(void **p, size_t *have, size_t n, size_t sz) {
    if (n <= *have) return;
    if (*p) CUDA_CHECK(cudaFree(*p));
    *p = cu_alloc(n * sz);
    *have = n;
}

// The combined matrix's rows: W_h's block rows, then W_o's 8 of H/32 blocks each.
static int *combined_rows(const BsMat *w, int H) {
    int nrows = w->nbr + 8, *rp = (int *)xmalloc(sizeof(int) * (size_t)(nrows + 1));
    memcpy(rp, w->row_ptr, sizeof(int) * (size_t)(w->nbr + 1));
    for (int r = w->nbr; r < nrows; r++) rp[r + 1] = rp[r] + H / 32;
    return rp;
}

// Lays the plan's pieces out in worker order: per block its column; per piece its first
// block; per CTA its span. Returns each block's source on the device (W_h block k, or -1 - the
// head block) for gen_gather.
static int *lay_out(GenLoop *g, const PiecePlan *pl, const BsMat *w, const int *rp) {
    const int nbc = g->H / 32, np = pl->npieces;
    int *src = (int *)xmalloc(sizeof(int) * (size_t)g->nblk), *cols = (int *)xmalloc(sizeof(int) * (size_t)g->nblk);
    int *pblk = (int *)xmalloc(sizeof(int) * (size_t)(np + 1)), *cta = (int *)xmalloc(sizeof(int) * (size_t)(g->grid + 1));
    int n = 0;
    for (int p = 0; p < np; p++) {
        pblk[p] = n;
        for (int k = pl->k0[p]; k < pl->k0[p] + pl->n[p]; k++, n++) {
            int head = k - rp[g->gate_rows];
            src[n] = pl->row[p] < g->gate_rows ? k : -1 - head;
            cols[n] = pl->row[p] < g->gate_rows ? w->col_idx[k] : head % nbc;
        }
    }
    pblk[np] = n;
    g->most_span = 0;
    for (int b = 0; b <= g->grid; b++) {
        cta[b] = pblk[pl->worker_ptr[b * GEN_WARPS]];
        if (b && (size_t)(cta[b] - cta[b - 1]) > g->most_span) g->most_span = (size_t)(cta[b] - cta[b - 1]);
    }
    int *src_d = upload_ints(src, g->nblk);
    g->cols = upload_ints(cols, g->nblk);
    g->piece_blk = upload_ints(pblk, np + 1);
    g->cta_blk = upload_ints(cta, g->grid + 1);
    g->wblk = cu_alloc((size_t)g->nblk * GEN_BLOCK * (g->bf ? sizeof(bf16) : sizeof(float)));
    free(src); free(cols); free(pblk); free(cta);
    return src_d;
}

template <bool BF>
void *gen_create_cuda(const GenArgs *a) {
    typedef typename std::conditional<BF, bf16, float>::type W;
    const BsMat *w = a->wh;
    const int H = a->H;
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (w->bs != 32 || w->ngates != 4 || w->rows != 4 * H || w->cols != H || H > gen_max_units(g_cuda.nsm))
        return NULL;
    GenLoop *g = (GenLoop *)xcalloc(1, sizeof *g);
    *g = (GenLoop){.H = H, .bf = BF, .grid = g_cuda.nsm, .gate_rows = w->nbr, .bias = a->bias, .xtab = a->xtab, .bo = a->bo,
               .temperature = a->temperature, .top_p = a->top_p, .top_k = a->top_k};
    int *rp = combined_rows(w, H), nrows = w->nbr + 8;
    g->nblk = rp[nrows];
    const int nw = g->grid * GEN_WARPS;
    PiecePlan pl;
    piece_plan(&pl, rp, nrows, cdiv(g->nblk, nw), nw);
    g->npieces = pl.npieces;
    int *src = lay_out(g, &pl, w, rp);
    gen_gather<W>((W *)g->wblk, src, g->nblk, a->wh_vals, a->wo, H);
    CUDA_CHECK(cudaFree(src));
    g->worker_ptr = upload_ints(pl.worker_ptr, nw + 1);
    g->row_ptr = upload_ints(pl.row_ptr, nrows + 1);
    g->row_piece = upload_ints(pl.row_piece, pl.npieces);
    // Resident where every CTA's span fits beside h and the draw's scratch, one CTA an SM.
    g->smem = gen_smem_bytes(H, pl.npieces, g->most_span, BF);
    g->resident = g->smem <= (size_t)optin && gen_loop_ctas_per_sm<W>(g->smem) >= 1;
    if (!g->resident) g->smem = gen_smem_bytes(H, pl.npieces, 0, BF);
    const int fits = g->smem <= (size_t)optin && gen_loop_ctas_per_sm<W>(g->smem) >= 1;
    g->part = (float *)cu_alloc(sizeof(float) * 32 * (size_t)(pl.npieces ? pl.npieces : 1));
    g->h = (float *)cu_alloc(sizeof(float) * 2 * (size_t)H);
    g->c = (float *)cu_alloc(sizeof(float) * (size_t)H);
    g->bar = (unsigned long long *)cu_alloc(sizeof(unsigned long long));
    g->rng = (uint64_t *)cu_alloc(4 * sizeof(unsigned long long));
    const double mb = (double)g->nblk * GEN_BLOCK * (BF ? 2 : 4) / 1e6;
    snprintf(g->path, sizeof g->path, "device loop: one cooperative launch of %d CTAs, %d pieces over %d warps "
             "(at most %d blocks a warp); %.1f MB of %s weights %s", g->grid, pl.npieces, nw, pl.most_blocks, mb,
             BF ? "bf16" : "fp32", g->resident ? "held in shared memory" : "read from L2/HBM every step");
    piece_plan_free(&pl);
    free(rp);
    if (!fits) {
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
    GenLaunch L = {g->H, g->gate_rows, g->npieces, steps, nfeed, nsample, g->par, g->wblk, g->cols, g->worker_ptr, g->piece_blk,
                   g->row_ptr, g->row_piece, g->cta_blk, g->resident, g->bias, g->xtab, g->bo, g->part, g->h, g->c,
                   g->bar, g->feed, g->temperature, g->top_p, g->top_k, {rng[0], rng[1], rng[2], rng[3]}, g->out,
                   logits ? g->logits : NULL, g->rng};
    if (g->bf) gen_loop_launch<bf16>(L, g->grid, g->smem);
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
    void *all[] = {g->wblk, g->cols, g->worker_ptr, g->piece_blk, g->row_ptr, g->row_piece, g->cta_blk, g->part,
                   g->h, g->c, g->bar, g->rng, g->feed, g->out, g->logits};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) CUDA_CHECK(cudaFree(all[i]));
    free(g);
}

const char *gen_path_cuda(void *gv) { return ((GenLoop *)gv)->path; }
