// cmd_bench.c: the `bench` verb. Kernel table: the block-sparse ops on a 12288 x 12288 weight
// with N = 32 rows (the published block-sparse shape) against cuBLAS dense and cuSPARSE BSR,
// and the weight bytes each moves against the device's copy bandwidth. --train: training
// throughput of a dense H=2048 model and a small-world H=8192 model of about as many
// recurrent weights (B=128, T=128). GPU only.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "cli/verbs.h"

int bench_probe(int argc, char **argv);  // bench_probe.c: CPU and CUDA builds

static int wants_probe(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--probe")) return 1;
    return 0;
}

#ifndef SW_CUDA
int cmd_bench(int argc, char **argv) {
    if (wants_probe(argc, argv)) return bench_probe(argc, argv);
    die("bench: this swlstm was built without CUDA (nvcc was not found by make); benchmarks need a GPU build");
}
#else
#include "bench/bench_cuda.h"
#include "ops/backend.h"
#include "sparse/bsmat.h"
#include "sparse/mask.h"
#include "model/gen.h"
#include "model/mlstm.h"
#include "model/model.h"

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
    const Backend *be = backend_cuda(config_parse_choice("precision", prec, "bench"));
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
    printf("| %2d | %5.1f%% | %s | %7.1f | %6.0f | %3.0f%% | %s | %7.1f | %6.0f | %3.0f%% | %7.1f | %6.0f | %7.1f | %7s |\n",
           bs, 100 * (double)w.nnzb / ((double)nb * nb), prec, f * 1e3, gf, 100 * gf / copy_gbps, fbs, bd * 1e3, gd,
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

// Rows to run: bs / density / dtype of 0 / NULL mean all.
typedef struct {
    int bs;
    double density;
    const char *dtype;
} KFilter;

static int wanted(const KFilter *f, int bs, double density, const char *prec) {
    return (!f->bs || f->bs == bs) && (!f->density || fabs(f->density - density) < 1e-9) && (!f->dtype || !strcmp(f->dtype, prec));
}

static void bench_kernels(const KFilter *f) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    double copy = cb_copy_gbps();
    printf("device: %s\ndevice-to-device copy: %.0f GB/s (read + write); L2 read: %.0f GB/s\n\n", dev, copy,
           cb_l2_gbps(l2));
    printf("block-sparse %d x %d weight, N = %d rows; us per call: median over groups of 10 calls issued back to back "
           "(%d calls), weights rotated "
           "through sets larger than L2; GB/s = stored weight bytes (bwd-weight: fp32 gradient read + write) / time\n\n",
           KDIM, KDIM, KROWS, REPS);
    printf("fwd, x bf16: the same forward where x has a bf16 twin (the mlstm keeps one of its step products' inputs)\n\n");
    printf("| bs | density | dtype | fwd us | GB/s | %%copy | fwd, x bf16 us | %%copy | bwd-data us | GB/s | %%copy | "
           "bwd-weight us | GB/s | cuBLAS dense us | cuSPARSE BSR us |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const double dens[] = {1, 0.5, 0.25, 0.1, 0.05, 0.02};
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < 6; d++)
            if (wanted(f, 32, dens[d], precs[p])) kernel_row(32, dens[d], precs[p], copy, l2);
    for (int p = 0; p < 2; p++)
        for (int bs = 8; bs <= 16; bs *= 2)
            if (wanted(f, bs, 0.1, precs[p])) kernel_row(bs, 0.1, precs[p], copy, l2);
}

// ---- training throughput ----
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The recurrent layer's ops on the model's own buffers, one call each: what a time step
// (and, for bwd-weight, a window) costs, to see where a training step goes.
enum { OP_BSMM_FWD, OP_LSTM_FWD, OP_LSTM_BWD, OP_BSMM_BWD_DATA, OP_BSMM_BWD_WEIGHT, NOPS };
typedef struct {
    Model *m;
    Acts *a;
    int op;
} OpArg;

static void run_op(void *p, int it) {
    (void)it;
    OpArg *o = p;
    Model *m = o->m;
    Acts *a = o->a;
    const Backend *be = m->be;
    const Layer *L = &m->layer[0];
    real *wh = m->params + L->off_wh, *b = m->params + L->off_b;
    int B = a->B, H = m->H;
    switch (o->op) {
    case OP_BSMM_FWD: be->bsmm_fwd(a->z[0], a->h[0], &L->wh, wh, B, 1); break;
    case OP_LSTM_FWD: be->lstm_fwd(a->h[0] + B * H, a->c[0] + B * H, a->act[0], NULL, a->z[0], a->c[0], b, NULL, B, H); break;
    case OP_LSTM_BWD:
        be->lstm_bwd(a->dz[0], a->dc[0], m->grads + L->off_b, NULL, a->dh[0] + B * H, a->dc[0], a->act[0],
                     a->c[0] + B * H, a->c[0], a->z[0], NULL, NULL, B, H);
        break;
    case OP_BSMM_BWD_DATA: be->bsmm_bwd_data(a->dh[0], a->dz[0], &L->wh, wh, B, 1); break;
    default: be->bsmm_bwd_weight(m->grads + L->off_wh, a->dz[0], a->h[0], &L->wh, B * a->T); break;
    }
}

typedef struct {
    int H;
    const char *mask, *prec;
    double us[NOPS];
} OpRow;
static OpRow op_rows[8];
static int n_op_rows;

static void time_ops(Model *m, Acts *a, int H, const char *sparsity, const char *prec) {
    OpRow *r = &op_rows[n_op_rows++];
    *r = (OpRow){H, sparsity, prec, {0}};
    for (int op = 0; op < NOPS; op++) {
        OpArg o = {m, a, op};
        r->us[op] = 1e3 * cb_time_ms(run_op, &o, 3, op == OP_BSMM_BWD_WEIGHT ? 10 : 50);
    }
}

typedef struct {
    int H, B;
    const char *sparsity, *prec, *engine;
    int depth;  // > 0: the mlstm cell with this many internal steps
} TrainRow;

// The recurrent path a row ran, in a word (route.h recur_name): steps, replay (the mlstm's
// steps as one launch), graph or dense.
static const char *path_label(const Model *m, const Acts *a) {
    return recur_name(acts_route(m, a).layer[0]);
}

// One training-throughput row: median step of a 1-layer model; peak memory is what the
// model, its buffers and the engine hold on the device after the steps.
static void train_row(const TrainRow *row) {
    enum { T = 128, WARMUP = 2, STEPS = 5 };
    int B = row->B, H = row->H;
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = H;
    cfg.block_size = 32;
    cfg.num_layers = 1;
    cfg.batch_size = B;
    cfg.seq_length = T;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", row->sparsity);
    cfg.device = DEVICE_CUDA;
    cfg.precision = config_parse_choice("precision", row->prec, "bench");
    cfg.engine = config_parse_choice("engine", row->engine, "bench");
    if (row->depth) {  // as configs/mlstm_*.cfg
        cfg.cell = CELL_MLSTM;
        cfg.init = INIT_IDENTITY;
        cfg.depth = row->depth;
    }
    const Backend *be = backend_cuda(cfg.precision);
    double mem0 = cb_mem_used_gib();
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
    double mem = cb_mem_used_gib() - mem0;
    qsort(fwd, STEPS, sizeof(double), cmp_double);
    qsort(step, STEPS, sizeof(double), cmp_double);
    const Layer *L = &m->layer[0];
    MaskStats ms = mask_stats(&L->mask_h);
    printf("| %5d | %-8s | %5.1f%% | %5.1fM | %s | %3d | %-6s%s | %8.1f | %8.1f | %8.1f | %9.0f | %6.1f |\n", H, row->sparsity,
           100 * ms.density, bsmat_nvals(&L->wh) / 1e6, row->prec, B, path_label(m, a), m->mlstm ? " (mlstm)" : "",
           fwd[STEPS / 2], step[STEPS / 2] - fwd[STEPS / 2], step[STEPS / 2], B * T / (step[STEPS / 2] * 1e-3), mem);
    fflush(stdout);
    if (!a->seq[0] && B == 128) time_ops(m, a, H, row->sparsity, row->prec);
    be->free(am);
    be->free(av);
    free(tok);
    free(tgt);
    acts_free(m, a);
    model_free(m);
}

// The engine at B = 32, 64, 128 beside the per-step path at 128, for the shapes the targets
// name; `only` keeps the rows of one H (0: all), `dtype` those of one precision, `cell` those
// of one cell (NULL: all).
static void bench_train(int only, const char *dtype, const char *cell) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    printf("device: %s; L2 read: %.0f GB/s (the step kernels' ceiling)\ntraining step (1 layer, E = 64, block 32, T = 128): "
           "medians of 5 steps after 2; peak = device memory the run holds\n\n", dev, cb_l2_gbps(l2));
    printf("| H | W_h mask | density | W_h weights | dtype | B | path | fwd ms | bwd+adam ms | step ms | chars/s | peak GiB |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    static const TrainRow rows[] = {
        {2048, 128, "dense", "bf16", "steps", 0}, {2048, 32, "dense", "bf16", "auto", 0}, {2048, 64, "dense", "bf16", "auto", 0},
        {2048, 128, "dense", "bf16", "auto", 0}, {8192, 128, "ba_8", "bf16", "steps", 0}, {8192, 32, "ba_8", "bf16", "auto", 0},
        {8192, 64, "ba_8", "bf16", "auto", 0}, {8192, 128, "ba_8", "bf16", "auto", 0}, {4096, 128, "ba_4", "bf16", "auto", 0},
        {18432, 128, "ba_8", "bf16", "auto", 0}, {2048, 128, "dense", "fp32", "steps", 0}, {2048, 128, "dense", "fp32", "auto", 0},
        {8192, 128, "ba_8", "fp32", "steps", 0}, {8192, 128, "ba_8", "fp32", "auto", 0},
        {2048, 128, "dense", "bf16", "steps", 4}, {2048, 128, "dense", "bf16", "auto", 4},
        {8192, 128, "ba_7", "bf16", "steps", 4}, {8192, 32, "ba_7", "bf16", "auto", 4}, {8192, 64, "ba_7", "bf16", "auto", 4},
        {8192, 128, "ba_7", "bf16", "auto", 4}, {4096, 128, "ba_7", "bf16", "auto", 3}, {18432, 64, "ba_8", "bf16", "auto", 4},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if ((!only || rows[i].H == only) && (!dtype || !strcmp(rows[i].prec, dtype)) &&
            (!cell || !strcmp(cell, rows[i].depth ? "mlstm" : "lstm")))
            train_row(&rows[i]);
    if (!n_op_rows) return;
    printf("\nthe per-step path's ops, us per call (medians of back-to-back calls); a window of T = 128 steps "
           "runs each per-step op 128 times and bwd-weight once (N = T*B)\n\n"
           "| H | W_h mask | dtype | bsmm fwd | lstm fwd | lstm bwd | bsmm bwd-data | step total x128 ms | bsmm bwd-weight |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n_op_rows; i++) {
        const OpRow *r = &op_rows[i];
        double per_step = r->us[OP_BSMM_FWD] + r->us[OP_LSTM_FWD] + r->us[OP_LSTM_BWD] + r->us[OP_BSMM_BWD_DATA];
        printf("| %5d | %-8s | %s | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f |\n", r->H, r->mask, r->prec,
               r->us[OP_BSMM_FWD], r->us[OP_LSTM_FWD], r->us[OP_LSTM_BWD], r->us[OP_BSMM_BWD_DATA],
               128 * per_step / 1e3, r->us[OP_BSMM_BWD_WEIGHT]);
    }
}

// ---- sampling at batch 1 ----
typedef struct {
    int H;
    const char *mask, *prec;
    int steps;  // 1: the per-step ops (infer_step and the host's draw) in place of the device loop
    int depth;  // 0: the plain cell; else an mLSTM of that depth
    int batch;  // rows sampled at once (the per-step ops; the device loop draws one)
} SampleRow;

// The bytes a step reads: the recurrent matrices and the head.
static double step_weight_mb(const Model *m, int bf) {
    const Layer *L = &m->layer[0];
    long n = bsmat_nvals(&L->wh) + SW_VOCAB * (long)m->H;
    for (int j = 0; j < m->D; j++) n += bsmat_nvals(&L->ws[j]);
    return (double)n * (bf ? 2 : 4) / 1e6;
}

// One row of bench --sample: a random-weight model, its device loop set up (setup ms: the
// plan, the gather and layer 0's table, the start-up sample adds to a checkpoint's load),
// then bytes drawn at temperature 1 (the draw sorts all 256 candidates, as sample_byte does).
static void sample_row(const SampleRow *r, double l2_gbps, double hbm_gbps) {
    enum { WARM = 64, BYTES = 4000, STEP_BYTES = 200 };
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = r->H;
    cfg.block_size = 32;
    cfg.num_layers = 1;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", r->mask);
    cfg.device = DEVICE_CUDA;
    cfg.precision = config_parse_choice("precision", r->prec, "bench");
    if (r->depth) cfg.cell = CELL_MLSTM, cfg.depth = r->depth;
    Model *m = model_create(&cfg, backend_cuda(cfg.precision));
    const Layer *L = &m->layer[0];
    const double mb = step_weight_mb(m, !strcmp(r->prec, "bf16"));
    SamplerOpts so = {1.0, 0, 1.0};
    Rng rng;
    rng_seed(&rng, 1);
    double t0 = now_sec(), setup = 0, secs;
    const char *path = "steps";
    int feed = '\n';
    if (r->steps) {
        const int B = r->batch;
        Infer *s = infer_create(m, B, 0);
        float *logits = xmalloc(sizeof(float) * SW_VOCAB * B);
        int *tok = xmalloc(sizeof(int) * B);
        for (int k = 0; k < B; k++) tok[k] = feed;
        infer_step(m, s, tok, B, logits);
        t0 = now_sec();
        for (int i = 0; i < STEP_BYTES; i++) {
            for (int k = 0; k < B; k++) tok[k] = sample_byte(logits + k * SW_VOCAB, &so, &rng);
            infer_step(m, s, tok, B, logits);
        }
        secs = (now_sec() - t0) / STEP_BYTES / B;
        free(tok);
        free(logits);
        infer_free(m, s);
    } else {
        Gen *g = gen_open(m, &so, NULL);
        if (!g) die("bench --sample: H = %d %s %s has no device loop", r->H, r->mask, r->prec);
        setup = 1e3 * (now_sec() - t0);
        path = loop_name(gen_route(g).place);
        unsigned char *out = xmalloc(BYTES);
        gen_draw(g, &feed, 1, WARM, &rng, out);
        feed = out[WARM - 1];
        t0 = now_sec();
        gen_draw(g, &feed, 1, BYTES, &rng, out);
        secs = (now_sec() - t0) / BYTES;
        free(out);
        gen_close(g);
    }
    const double l2us = mb * 1e6 / (l2_gbps * 1e9) * 1e6, hbmus = mb * 1e6 / (hbm_gbps * 1e9) * 1e6;
    char cell[16] = "lstm";
    if (r->depth) snprintf(cell, sizeof cell, "mlstm D=%d", r->depth);
    printf("| %5d | %-11s | %-10s | %5.1f%% | %s | %7.1f | %-15s | %5d | %6.0f | %7.2f | %8.0f | %6.2f | %6.2f | %5.1f |\n",
           r->H, r->mask, cell, 100 * mask_stats(&L->mask_h).density, r->prec, mb, path, r->batch, setup, secs * 1e6,
           1 / secs, l2us, hbmus, secs * 1e6 / l2us);
    fflush(stdout);
    model_free(m);
}

static void bench_sample(void) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    const double l2g = cb_l2_gbps(l2), hbmg = cb_copy_gbps() / 2;
    printf("device: %s; L2 read: %.0f GB/s; HBM (half a device copy's read + write): %.0f GB/s\nsampling at batch 1 "
           "(1 layer, E = 64, block 32, temperature 1): one launch of 4000 bytes after 64; weights = the recurrent "
           "matrices (mlstm: W_h0 .. W_h(D-1) and the gates) + W_o; L2 us, HBM us = weights / L2 read, HBM; "
           "x L2 = us per byte / L2 us; batch > 1: the per-step ops on that many rows, us per byte = a step / rows\n\n",
           dev, l2g, hbmg);
    printf("| H | W_h mask | cell | density | dtype | weights MB | path | batch | setup ms | us/byte | bytes/s | L2 us | HBM us "
           "| x L2 |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    static const SampleRow rows[] = {
        {4096, "ba_4", "bf16", 1, 0, 1}, {4096, "ba_4", "bf16", 0, 0, 1}, {4096, "ba_4", "fp32", 0, 0, 1},
        {4096, "dense", "bf16", 0, 0, 1}, {4096, "random_0.5", "bf16", 0, 0, 1}, {4096, "random_0.25", "bf16", 0, 0, 1},
        {4096, "random_0.1", "bf16", 0, 0, 1}, {4096, "random_0.05", "bf16", 0, 0, 1}, {8192, "ba_7", "bf16", 0, 0, 1},
        {512, "random_0.05", "bf16", 0, 0, 1}, {4096, "ba_4", "bf16", 1, 0, 8}, {4096, "ba_4", "bf16", 1, 0, 64},
        {4096, "dense", "bf16", 1, 0, 8}, {4096, "dense", "bf16", 1, 0, 64}, {8192, "ba_7", "bf16", 1, 4, 1},
        {8192, "ba_7", "bf16", 0, 4, 1}, {8192, "ba_7", "fp32", 0, 4, 1}, {2048, "ba_4", "bf16", 0, 4, 1},
        {8192, "ba_7", "bf16", 1, 4, 8}, {8192, "ba_7", "bf16", 1, 4, 64},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) sample_row(&rows[i], l2g, hbmg);
}

static void bench_usage(void) {
    printf("usage: swlstm bench [--train | --sample] [--bs 8|16|32] [--density D] [--dtype fp32|bf16]\n"
           "  (default) block-sparse kernel table vs cuBLAS and cuSPARSE; --bs, --density and --dtype\n"
           "            keep only the matching rows (block 32 runs densities 1 0.5 0.25 0.1 0.05 0.02;\n"
           "            blocks 8 and 16 run 0.1)\n"
           "  --train   training throughput: dense H=2048, small-world H=4096/8192/18432, the recurrent\n"
           "            engine at B = 32/64/128 beside the per-step ops, fp32 and bf16; the mlstm (depth 4)\n"
           "            dense H=2048 and ba_7 H=8192, per-step ops issued one by one and replayed\n"
           "  --hidden H, --dtype D, --cell C  with --train: only the rows of this hidden size, this\n"
           "            precision, this cell (lstm or mlstm)\n"
           "  --sample  sampling: bytes/s of the device loop (batch 1) for H=4096 at 100/50/25/10/5%% of\n"
           "            blocks and ba_4 (bf16; ba_4 also fp32 and op by op), H=8192 ba_7, H=512 (the floor);\n"
           "            the mlstm (depth 4) at H=8192 ba_7 (bf16 op by op and looped, fp32) and H=2048 ba_4;\n"
           "            batches of 8 and 64 op by op (H=4096 ba_4 and dense, the mlstm at H=8192 ba_7)\n"
           "  --probe   probe sweep wall time at the SST-2 and MR shapes (CPU too; --probe --help)\n");
}

int cmd_bench(int argc, char **argv) {
    if (wants_probe(argc, argv)) return bench_probe(argc, argv);
    int train = 0, only = 0, sample = 0;
    const char *cell = NULL;
    KFilter f = {0, 0, NULL};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--train")) train = 1;
        else if (!strcmp(o, "--sample")) sample = 1;
        else if (!strcmp(o, "--hidden") && v) only = (int)parse_long("bench --hidden", argv[++i], 32, 1 << 20);
        else if (!strcmp(o, "--cell") && v) {
            cell = argv[++i];
            if (strcmp(cell, "lstm") && strcmp(cell, "mlstm")) die("bench --cell %s: expected lstm or mlstm", cell);
        }
        else if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            bench_usage();
            return 0;
        } else if (!strcmp(o, "--bs") || !strcmp(o, "--density") || !strcmp(o, "--dtype")) {
            if (!v) die("bench: option '%s' needs a value (see swlstm bench --help)", o);
            i++;
            if (!strcmp(o, "--bs")) f.bs = (int)parse_long("bench --bs", v, 8, 32);
            else if (!strcmp(o, "--density")) f.density = parse_double("bench --density", v, 1e-6, 1);
            else if (!strcmp(v, "fp32") || !strcmp(v, "bf16")) f.dtype = v;
            else die("bench --dtype %s: expected fp32 or bf16", v);
        } else die("bench: unknown option '%s' (see swlstm bench --help)", o);
    }
    if (sample) bench_sample();
    else if (train) bench_train(only, f.dtype, cell);
    else bench_kernels(&f);
    return 0;
}
#endif
