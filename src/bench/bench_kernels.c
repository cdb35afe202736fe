// bench_kernels.c: `swlstm bench`'s kernel table: the block-sparse ops on a 12288 x 12288
// weight with N = 32 rows (the published block-sparse shape) against cuBLAS dense and cuSPARSE
// BSR, and the weight bytes each moves against the device's copy bandwidth. GPU only.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/common.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/shapes.h"
#include "bench/table.h"
#include "ops/backend.h"
#include "sparse/bsmat.h"
#include "sparse/mask.h"

#define KDIM 12288
#define KROWS 32
#define REPS 100
#define KSEED 1   // the masks' seed

// n floats of device memory with values in [-0.5, 0.5) (never zeros: they can run faster).
static void fill_device(const Backend *be, real *d, size_t n, unsigned seed) {
    size_t chunk = (size_t)1 << 20;
    real *h = xmalloc(sizeof(real) * chunk);
    for (size_t i = 0; i < chunk; i++) h[i] = (real)((((i + seed) * 2654435761u) >> 8) % 1000) / 1000.f - 0.5f;
    for (size_t o = 0; o < n; o += chunk) be->to_device(d + o, h, sizeof(real) * (n - o < chunk ? n - o : chunk));
    free(h);
}

typedef struct {
    const Backend *be;
    const BsMat *w;
    real *vals, *dvals, *x, *y, *dy, *dx;
    size_t nv;
    int nsets;  // weight (and weight-gradient) sets, rotated so that L2 cannot hold them
} KArg;

static void run_fwd(void *p, int it) {
    KArg *k = p;
    k->be->bsmm_fwd(k->y, k->x, k->w, k->vals + (size_t)(it % k->nsets) * k->nv, KROWS, 0);
}
static void run_bwd_data(void *p, int it) {
    KArg *k = p;
    k->be->bsmm_bwd_data(k->dx, k->dy, k->w, k->vals + (size_t)(it % k->nsets) * k->nv, KROWS, 0);
}
static void run_bwd_weight(void *p, int it) {
    KArg *k = p;
    k->be->bsmm_bwd_weight(k->dvals + (size_t)(it % k->nsets) * k->nv, k->dy, k->x, k->w, KROWS);
}

static void kernel_row(const KernelShape *s, double copy_gbps, size_t l2) {
    const Backend *be = backend_cuda(s->prec);
    int bs = s->bs, bf = s->prec == PREC_BF16, nb = KDIM / bs;
    char desc[32];
    if (s->density >= 1) snprintf(desc, sizeof desc, "dense");
    else snprintf(desc, sizeof desc, "random_%g", s->density);
    Mask mk = mask_make(desc, nb, nb, KSEED);
    BsMat w;
    bsmat_from_mask(&w, &mk, bs, 1);
    be->bsmat_upload(&w);
    KArg k = {.be = be, .w = &w, .nv = (size_t)bsmat_nvals(&w)};
    double wbytes = (double)k.nv * (bf ? 2 : 4);
    k.nsets = (int)ceil(4.0 * l2 / wbytes);
    k.nsets = k.nsets < 2 ? 2 : k.nsets > 64 ? 64 : k.nsets;
    size_t nall = k.nv * k.nsets, nx = (size_t)KROWS * KDIM;
    k.vals = be->alloc(sizeof(real) * nall);
    k.dvals = be->alloc(sizeof(real) * nall);
    real *io[] = {k.x = be->alloc(sizeof(real) * nx), k.y = be->alloc(sizeof(real) * nx),
                  k.dy = be->alloc(sizeof(real) * nx), k.dx = be->alloc(sizeof(real) * nx)};
    fill_device(be, k.vals, nall, 1);
    fill_device(be, k.dvals, nall, 2);
    for (int i = 0; i < 4; i++) fill_device(be, io[i], nx, 3 + i);
    be->register_params(k.vals, nall);  // bf16: the kernels read the bf16 shadow
    double f = cb_time_ms(run_fwd, &k, 10, REPS), bd = cb_time_ms(run_bwd_data, &k, 10, REPS);
    double bw = cb_time_ms(run_bwd_weight, &k, 10, REPS);
    double fb = -1;  // the forward again where x has a bf16 twin, as the mlstm's step inputs do
    if (bf && be->keep_lowp) be->keep_lowp(k.x, nx), fb = cb_time_ms(run_fwd, &k, 10, REPS);
    double dense = cb_dense_ms(KROWS, KDIM, KDIM, bf, REPS);
    char why[256] = "", sp[64];
    double sparse = cb_sparse_ms(&w, k.vals, k.nsets < 8 ? k.nsets : 8, KROWS, bf, REPS, why, sizeof why);
    if (sparse >= 0) snprintf(sp, sizeof sp, "%.1f", sparse * 1e3);
    else snprintf(sp, sizeof sp, "n/a");
    double gf = wbytes / (f * 1e-3) / 1e9, gd = wbytes / (bd * 1e-3) / 1e9;
    char fbs[48] = "- | -";
    if (fb > 0) snprintf(fbs, sizeof fbs, "%7.1f | %3.0f%%", fb * 1e3, 100 * wbytes / (fb * 1e-3) / 1e9 / copy_gbps);
    double gw = 2.0 * k.nv * 4 / (bw * 1e-3) / 1e9;  // fp32 gradient read and written
    table_row("| %2d | %d | %d | %s | %d | %5.1f%% | %s | %7.1f | %6.0f | %3.0f%% | %s | %7.1f | %6.0f | %3.0f%% | %7.1f | %6.0f | %7.1f | %7s |\n",
           bs, KDIM, KROWS, desc, KSEED, 100 * (double)w.nnzb / ((double)nb * nb), config_choice_name("precision", s->prec),
           f * 1e3, gf, 100 * gf / copy_gbps, fbs, bd * 1e3, gd, 100 * gd / copy_gbps, bw * 1e3, gw, dense * 1e3, sp);
    if (sparse < 0) table_note("  (cuSPARSE: %s)\n", why);
    fflush(stdout);
    be->free(k.vals);
    be->free(k.dvals);
    for (int i = 0; i < 4; i++) be->free(io[i]);
    be->bsmat_release(&w);
    bsmat_free(&w);
    mask_free(&mk);
}

static int wanted(const BenchFilter *f, const KernelShape *s) {
    return (!f->bs || f->bs == s->bs) && (!f->density || fabs(f->density - s->density) < 1e-9) &&
           (f->prec < 0 || f->prec == (int)s->prec);
}

void bench_kernels(const BenchFilter *f) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    double copy = cb_copy_gbps();
    table_note("device: %s\ndevice-to-device copy: %.0f GB/s (read + write); L2 read: %.0f GB/s\n\n", dev, copy,
           cb_l2_gbps(l2));
    table_note("block-sparse %d x %d weight, N = %d rows; us per call: median over groups of 10 calls issued back to back "
           "(%d calls), weights rotated "
           "through sets larger than L2; GB/s = stored weight bytes (bwd-weight: fp32 gradient read + write) / time\n\n",
           KDIM, KDIM, KROWS, REPS);
    table_note("fwd, x bf16: the same forward where x has a bf16 twin (the mlstm keeps one of its step products' inputs)\n\n");
    table_head("kernels", "| bs | W | N | mask | seed | density | dtype | fwd us | fwd GB/s | fwd %copy | fwd, x bf16 us | fwd, x bf16 %copy | "
                          "bwd-data us | bwd-data GB/s | bwd-data %copy | bwd-weight us | bwd-weight GB/s | "
                          "cuBLAS dense us | cuSPARSE BSR us |");
    for (int i = 0; i < bench_n_kernel_shapes; i++)
        if (wanted(f, &bench_kernel_shapes[i])) kernel_row(&bench_kernel_shapes[i], copy, l2);
}
