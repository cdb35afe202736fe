// cmd_bench.c: the `bench` verb. Kernel table: the block-sparse ops on a 12288 x 12288 weight
// with N = 32 rows (the published block-sparse shape) against cuBLAS dense and cuSPARSE BSR,
// and the weight bytes each moves against the device's copy bandwidth. --train: training
// throughput of a dense H=2048 model and a small-world H=8192 model of about as many
// recurrent weights (B=128, T=128). GPU only.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "verbs.h"

#ifndef SW_CUDA
int cmd_bench(int argc, char **argv) {
    (void)argc; (void)argv;
    die("bench: this swlstm was built without CUDA (nvcc was not found by make); benchmarks need a GPU build");
}
#else
#include "../cuda/bench_cuda.h"
#include "backend.h"
#include "bsmat.h"
#include "mask.h"
#include "model.h"

#define KDIM 12288
#define KROWS 32
#define REPS 100

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

static void kernel_row(int bs, double density, const char *prec, double copy_gbps, size_t l2) {
    const Backend *be = backend_cuda(prec);
    int bf = strcmp(prec, "bf16") == 0, nb = KDIM / bs;
    char desc[32];
    if (density >= 1) snprintf(desc, sizeof desc, "dense");
    else snprintf(desc, sizeof desc, "random_%g", density);
    Mask mk = mask_make(desc, nb, nb, 1);
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
    double dense = cb_dense_ms(KROWS, KDIM, KDIM, bf, REPS);
    char why[256] = "", sp[64];
    double sparse = cb_sparse_ms(&w, k.vals, k.nsets < 8 ? k.nsets : 8, KROWS, bf, REPS, why, sizeof why);
    if (sparse >= 0) snprintf(sp, sizeof sp, "%.1f", sparse * 1e3);
    else snprintf(sp, sizeof sp, "n/a");
    double gf = wbytes / (f * 1e-3) / 1e9, gd = wbytes / (bd * 1e-3) / 1e9;
    double gw = 2.0 * k.nv * 4 / (bw * 1e-3) / 1e9;  // fp32 gradient read and written
    printf("| %2d | %5.1f%% | %s | %7.1f | %6.0f | %3.0f%% | %7.1f | %6.0f | %3.0f%% | %7.1f | %6.0f | %7.1f | %7s |\n", bs,
           100 * (double)w.nnzb / ((double)nb * nb), prec, f * 1e3, gf, 100 * gf / copy_gbps, bd * 1e3, gd,
           100 * gd / copy_gbps, bw * 1e3, gw, dense * 1e3, sp);
    if (sparse < 0) printf("  (cuSPARSE: %s)\n", why);
    fflush(stdout);
    be->free(k.vals);
    be->free(k.dvals);
    for (int i = 0; i < 4; i++) be->free(io[i]);
    be->bsmat_release(&w);
    bsmat_free(&w);
    mask_free(&mk);
}

static void bench_kernels(void) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    double copy = cb_copy_gbps();
    printf("device: %s\ndevice-to-device copy: %.0f GB/s (read + write)\n\n", dev, copy);
    printf("block-sparse %d x %d weight, N = %d rows; times are medians of %d calls (us), weights rotated "
           "through sets larger than L2; GB/s = stored weight bytes (bwd-weight: fp32 gradient read + write) / time\n\n",
           KDIM, KDIM, KROWS, REPS);
    printf("| bs | density | dtype | fwd us | GB/s | %%copy | bwd-data us | GB/s | %%copy | bwd-weight us | GB/s | "
           "cuBLAS dense us | cuSPARSE BSR us |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const double dens[] = {1, 0.5, 0.25, 0.1, 0.05, 0.02};
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < 6; d++) kernel_row(32, dens[d], precs[p], copy, l2);
    for (int p = 0; p < 2; p++)
        for (int bs = 8; bs <= 16; bs *= 2) kernel_row(bs, 0.1, precs[p], copy, l2);
}

// ---- training throughput ----
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void train_row(int H, const char *sparsity, const char *prec) {
    enum { B = 128, T = 128, WARMUP = 2, STEPS = 5 };
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = H;
    cfg.block_size = 32;
    cfg.num_layers = 1;
    cfg.batch_size = B;
    cfg.seq_length = T;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", sparsity);
    snprintf(cfg.device, sizeof cfg.device, "cuda");
    snprintf(cfg.precision, sizeof cfg.precision, "%s", prec);
    const Backend *be = backend_cuda(prec);
    Model *m = model_create(&cfg, be);
    Acts *a = acts_create(m, B, T);
    real *am = be->alloc(m->nparams * sizeof(real)), *av = be->alloc(m->nparams * sizeof(real));
    int *tok = xmalloc(sizeof(int) * B * T), *tgt = xmalloc(sizeof(int) * B * T);
    for (int i = 0; i < B * T; i++) tok[i] = (i * 131 + 7) % 256, tgt[i] = (i * 17 + 3) % 256;
    double fwd[STEPS], step[STEPS];
    for (int s = 0; s < WARMUP + STEPS; s++) {
        be->zero(m->grads, m->nparams * sizeof(real));
        double t0 = now_sec();
        model_forward(m, a, tok, tgt, T);  // ends with the loss copied to the host
        double t1 = now_sec();
        model_backward(m, a, T);
        double scale = 1 / (1 + sqrt(be->sumsq(m->grads, m->nparams)));
        for (int i = 0; i < m->ntensor; i++) {
            const ParamTensor *pt = &m->tensor[i];
            AdamArgs ad = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, (real)scale, s + 1};
            be->adam(m->params + pt->off, m->grads + pt->off, am + pt->off, av + pt->off, pt->n, ad);
        }
        be->sync();
        if (s >= WARMUP) fwd[s - WARMUP] = 1e3 * (t1 - t0), step[s - WARMUP] = 1e3 * (now_sec() - t0);
    }
    qsort(fwd, STEPS, sizeof(double), cmp_double);
    qsort(step, STEPS, sizeof(double), cmp_double);
    const Layer *L = &m->layer[0];
    MaskStats ms = mask_stats(&L->mask_h);
    printf("| %5d | %-8s | %5.1f%% | %5.1fM | %s | %8.1f | %8.1f | %8.1f | %9.0f |\n", H, sparsity, 100 * ms.density,
           bsmat_nvals(&L->wh) / 1e6, prec, fwd[STEPS / 2], step[STEPS / 2] - fwd[STEPS / 2], step[STEPS / 2],
           B * T / (step[STEPS / 2] * 1e-3));
    fflush(stdout);
    be->free(am);
    be->free(av);
    free(tok);
    free(tgt);
    acts_free(m, a);
    model_free(m);
}

static void bench_train(void) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    printf("device: %s\ntraining step (1 layer, E = 64, block 32, B = 128, T = 128): medians of 5 steps after 2\n\n", dev);
    printf("| H | W_h mask | density | W_h weights | dtype | fwd ms | bwd+adam ms | step ms | chars/s |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        train_row(2048, "dense", precs[p]);
        train_row(8192, "ba_8", precs[p]);
    }
}

int cmd_bench(int argc, char **argv) {
    int train = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--train")) train = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: swlstm bench [--train]\n  (default) block-sparse kernel table vs cuBLAS and cuSPARSE\n"
                   "  --train   training throughput, dense H=2048 vs small-world H=8192, fp32 and bf16\n");
            return 0;
        } else die("bench: unknown option '%s' (expected --train or --help)", argv[i]);
    }
    if (train) bench_train();
    else bench_kernels();
    return 0;
}
#endif
