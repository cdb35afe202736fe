// bench_wgmma.c: `swlstm bench --wgmma`: the floors of a plain LSTM layer's forward time step
// at the shipped configs' shapes (math, HBM and L2 bytes over the ceilings measured in the same
// call) beside the wgmma step (cuda/wgmma/wg_fwd.h, issue 57), and the floors of the backward's
// data step on the same design beside its wgmma step (wg_bwd.h); with --data, lstm_3min's
// forward step on a corpus's bytes, and with --checkpoint, both steps on a trained model's
// layer 0. GPU only.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/table.h"
#include "model/model.h"
#include "model/model_io.h"
#include "ops/backend.h"
#include "sparse/bsmat.h"
#include "sparse/mask.h"
#include "train/data.h"

#define STEPS 64  // a window's time steps, each step's outputs in planes of their own

typedef struct {
    const char *name, *mask;
    int hidden, batch;
} StepShape;

static const StepShape step_shapes[] = {
    {.name = "lstm_3min", .mask = "ba_8", .hidden = 8192, .batch = 256},
    {.name = "enwik8_smallworld's gates", .mask = "ba_7", .hidden = 8192, .batch = 128},
    {.name = "mlstm_3min's gates", .mask = "ba_14", .hidden = 5120, .batch = 128},
};

static void read_sweep(void) {
    static const int mb[] = {8, 16, 32, 48, 64, 128, 1024};
    table_head("read_sweep", "| working set MB | read TB/s |");
    for (size_t i = 0; i < sizeof mb / sizeof *mb; i++) table_row("| %d | %.2f |\n", mb[i], cb_read_gbps((size_t)mb[i] << 20) / 1e3);
}

// The measured ceilings the floors divide by.
typedef struct {
    double tflops, hbm_gbps, l2_gbps;
} Ceilings;

// A time step's bytes and floors at a shape: p list entries, each read from L2 as entry_l2
// bytes per 128-row tile, and unit_hbm / unit_l2 bytes a unit and row of state through HBM / L2
// besides the weights, which HBM gives once.
typedef struct {
    double flop, hbm, l2, tm, th, tl, floor;
} Floors;

static Floors floors_of(const StepShape *s, int p, double entry_l2, double unit_hbm, double unit_l2, const Ceilings *c) {
    const double BH = (double)s->batch * s->hidden;
    Floors f = {.flop = 2.0 * 4 * p * 1024 * s->batch, .hbm = p * 8192.0 + BH * unit_hbm, .l2 = p * (s->batch / 128) * entry_l2 + BH * unit_l2};
    f.tm = f.flop / (c->tflops * 1e12) * 1e6, f.th = f.hbm / (c->hbm_gbps * 1e9) * 1e6, f.tl = f.l2 / (c->l2_gbps * 1e9) * 1e6;
    f.floor = f.tm > f.th ? (f.tm > f.tl ? f.tm : f.tl) : (f.th > f.tl ? f.th : f.tl);
    return f;
}

// A table row: the shape, its floors and the wgmma step's us.
static void step_row(const char *name, const StepShape *s, int blocks, const Floors *f, double us) {
    table_row("| %s | %d | %s | %d | %d | %.2f | %.1f | %.0f | %.1f | %.0f | %.1f | %.1f | %.1f | %.0f | %.2f |\n", name, s->hidden,
              s->mask, s->batch, blocks, f->flop / 1e9, f->tm, f->hbm / 1e6, f->th, f->l2 / 1e6, f->tl, f->floor, us,
              f->flop / (us * 1e-6) / 1e12, us / f->floor);
}

// The forward step: through HBM c in, c out, h out in fp32, the four gates in bf16, h in bf16
// and packed; through L2 each list entry's h slab and gate blocks (16 KB) once per tile, the
// epilogue's input-table rows and c. Beside it the wgmma step's time on input bytes tok and
// weights wt (bench_cuda.h; NULL: all distinct, random).
static void fwd_row_on(const StepShape *s, const char *name, const BsMat *w, const Ceilings *c, const int *tok,
                       const CbStepWeights *wt) {
    const Floors f = floors_of(s, w->nnzb, 16384.0, 4 + 8 + 4 + 4 + 2 + 2, 16 + 4, c);
    const double us = cb_wgmma_fwd_us(w->row_ptr, w->col_idx, s->hidden, s->batch, STEPS, tok, wt);
    step_row(name, s, w->nnzb, &f, us);
}

static void fwd_row(const StepShape *s, const BsMat *w, const Ceilings *c) { fwd_row_on(s, s->name, w, c, NULL, NULL); }

// The backward's data step: each list entry of a block column reads its block row's dz slab
// (128 rows x four gates x 32 units, bf16: 32 KB) and its gate blocks once per tile; the
// epilogue reads the gates, c_t, c_{t+1}, dh and dc and writes dc and the row-major dz, 36
// bytes a unit and row through HBM and L2 alike (the total dh stays in registers). Beside it
// the wgmma step on weights wt (NULL: random).
static void bwd_row_on(const StepShape *s, const char *name, const BsMat *w, const Ceilings *c, const CbStepWeights *wt) {
    const double epi = (8 + 4 + 4 + 4 + 4) + (4 + 8);  // in: gates, c_t, c_{t+1}, dh, dc; out: dc, dz
    const Floors f = floors_of(s, w->nnzb, 32768.0 + 8192.0, epi, epi, c);
    int *ptr, *row, *blk;
    bsmat_columns(w, w->nbc, &ptr, &row, &blk);  // gate 0's block rows alone
    const double us = cb_wgmma_bwd_us(ptr, row, blk, s->hidden, s->batch, STEPS, wt);
    free(ptr), free(row), free(blk);
    step_row(name, s, w->nnzb, &f, us);
}

static void bwd_row(const StepShape *s, const BsMat *w, const Ceilings *c) { bwd_row_on(s, s->name, w, c, NULL); }


// The shape's mask (seed 1, as the configs draw them), its block rows stacked `gates` times.
static void shape_mask(const StepShape *s, BsMat *w, int gates) {
    const int nb = s->hidden / 32;
    Mask mk = mask_make(s->mask, nb, nb, 1);
    bsmat_from_mask(w, &mk, 32, gates);
    mask_free(&mk);
}

// The window's weight gradient at each shape (T = 64 steps of B rows, W_h's four gates): the
// wgmma kernel beside the mma.sync one it would replace.
static void dw_rows(void) {
    table_note("\nThe window's weight gradient of W_h (dW = dz^T h over T = %d steps of B rows, four gates):\n", STEPS);
    table_head("wgmma_dw", "| shape | H | mask | rows | GFLOP | mma.sync ms | mma.sync TFLOP/s | wgmma ms | wgmma TFLOP/s | speedup |");
    for (size_t i = 0; i < sizeof step_shapes / sizeof *step_shapes; i++) {
        const StepShape *s = &step_shapes[i];
        const int N = STEPS * s->batch;
        BsMat w;
        shape_mask(s, &w, 4);
        const Backend *gpu = backend_cuda(PREC_BF16);
        gpu->bsmat_upload(&w);
        double mma = 0;
        const double ms = cb_wgmma_dw_ms(&w, N, &mma), gflop = 2.0 * bsmat_nvals(&w) * N / 1e9;
        table_row("| %s | %d | %s | %d | %.0f | %.3f | %.0f | %.3f | %.0f | %.2f |\n", s->name, s->hidden, s->mask, N, gflop, mma,
                  gflop / mma, ms, gflop / ms, mma / ms);
        gpu->bsmat_release(&w);
        bsmat_free(&w);
    }
}

// One row a shape, from the mask's lists by block row (seed 1, as the configs draw them).
static void shape_rows(void (*row)(const StepShape *, const BsMat *, const Ceilings *), const Ceilings *c) {
    for (size_t i = 0; i < sizeof step_shapes / sizeof *step_shapes; i++) {
        BsMat w;
        shape_mask(&step_shapes[i], &w, 1);
        row(&step_shapes[i], &w, c);
        bsmat_free(&w);
    }
}

static const char *base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

// The input bytes of the first training window of corpus d at batch B (B stripes over the
// whole file, as `swlstm train` lays them out), [STEPS][B].
static int *corpus_tokens(const Dataset *d, int B) {
    Stripes st;
    stripes_init(&st, d->bytes, d->len, B, STEPS);
    int *in = xmalloc(sizeof(int) * STEPS * B), *tgt = xmalloc(sizeof(int) * STEPS * B);
    stripes_fill(&st, 0, STEPS, in, tgt);
    free(tgt);
    return in;
}

static void corpus_row(const char *path, const int *tok, const Ceilings *c) {
    const StepShape *s = &step_shapes[0];
    char name[128];
    snprintf(name, sizeof name, "%s on %s", s->name, base_name(path));
    BsMat w;
    shape_mask(s, &w, 1);
    fwd_row_on(s, name, &w, c, tok, NULL);
    bsmat_free(&w);
}

// A checkpoint's layer 0 as the step takes it, read on the CPU: its shape, the lists of its
// W_h mask (a view of gate 0's block rows), its weights and input table plus bias in fp32.
typedef struct {
    Model *m;
    StepShape s;
    char name[128];
    BsMat lists;
    float *w, *xtab;
} CkptLayer;

static float *floats_of(const real *p, size_t n) {
    float *f = xmalloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) f[i] = (float)p[i];
    return f;
}

// Dies naming the checkpoint where the step does not run its layer 0.
static void ckpt_layer_load(CkptLayer *k, const char *path) {
    Model *m = model_load_infer(path, DEVICE_CPU, CKPT_CHOICE, 0);
    const int B = m->cfg.batch_size;
    if (m->mlstm || m->ln || m->bs != 32 || B % 128)
        die("bench --wgmma --checkpoint %s: the wgmma step runs a plain LSTM's layer 0 with block_size = 32, no layer "
            "norm and a batch_size that is a multiple of 128; this one has cell = %s, block_size = %d, layer norm %s, "
            "batch_size = %d", path, m->mlstm ? "mlstm" : "lstm", m->bs, m->ln ? "on" : "off", B);
    const Layer *L = &m->layer[0];
    const size_t G = 4 * (size_t)m->H;
    real *xt = xmalloc(sizeof(real) * 256 * G);
    input_table_fwd(m, xt);
    for (size_t i = 0; i < 256 * G; i++) xt[i] += m->params[L->off_b + i % G];
    *k = (CkptLayer){.m = m, .lists = L->wh, .w = floats_of(m->params + L->off_wh, (size_t)bsmat_nvals(&L->wh)),
                     .xtab = floats_of(xt, 256 * G)};
    free(xt);
    k->lists.nnzb = L->wh.nnzb / 4;  // gate 0's: its rows come first (bsmat.h)
    const char *tail = base_name(path);  // with its folder, the run's name: "lstm_3min/latest.ckpt"
    while (tail > path && tail[-1] == '/') tail--;
    while (tail > path && tail[-1] != '/') tail--;
    snprintf(k->name, sizeof k->name, "%s's layer 0", tail);
    k->s = (StepShape){.name = k->name, .mask = m->cfg.sparsity, .hidden = m->H, .batch = B};
}

static void ckpt_layer_free(CkptLayer *k) {
    free(k->w), free(k->xtab);
    model_free(k->m);
}

void bench_wgmma(const char *corpus, const char *ckpt) {
    // the checkpoint and the corpus read before anything is timed, so that a bad file fails at once
    CkptLayer k = {0};
    if (ckpt) ckpt_layer_load(&k, ckpt);
    int *tok = NULL, *ktok = NULL;
    if (corpus) {
        Dataset d;
        dataset_open(&d, corpus);
        tok = corpus_tokens(&d, step_shapes[0].batch);
        if (ckpt) ktok = corpus_tokens(&d, k.s.batch);
        dataset_close(&d);
    }
    backend_cuda(PREC_BF16);  // the device and its cuBLAS handle, for the dense product's rate
    char dev[256];
    size_t l2b;
    cb_device(dev, sizeof dev, &l2b);
    Ceilings c = {.hbm_gbps = cb_copy_gbps(), .l2_gbps = cb_read_gbps(32 << 20)};
    c.tflops = 2.0 * 8192 * 8192 * 8192 / (cb_dense_ms(8192, 8192, 8192, 1, 20) * 1e-3) / 1e12;
    table_note("%s; dense bf16 product %.0f TFLOP/s (cuBLAS, 8192^3), HBM %.2f TB/s (a large copy's reads and writes), "
               "L2 read %.2f TB/s (32 MB read again and again)\n\n",
               dev, c.tflops, c.hbm_gbps / 1e3, c.l2_gbps / 1e3);
    read_sweep();
    table_note("\n");
    table_head("wgmma", "| shape | H | mask | B | blocks | GFLOP | math us | HBM MB | HBM us | L2 MB | L2 us | floor us | wgmma us | TFLOP/s "
                        "| x floor |");
    shape_rows(fwd_row, &c);
    if (corpus) corpus_row(corpus, tok, &c);
    if (ckpt) {
        const CbStepWeights wt = {k.w, k.xtab};
        fwd_row_on(&k.s, k.name, &k.lists, &c, ktok, &wt);
    }
    free(tok), free(ktok);
    table_note("\nfloor: the largest of math, HBM and L2 alone; wgmma: us a time step, the median over groups of 10 of a %d-step "
               "window; random weights, h, c and input table; "
               "the input bytes all distinct but on a corpus (--data), a checkpoint's row its weights (--checkpoint)\n\nThe backward's data step (dh = dz W_h and the cell's gradient) on the same design:\n",
               STEPS);
    table_head("wgmma_bwd", "| shape | H | mask | B | blocks | GFLOP | math us | HBM MB | HBM us | L2 MB | L2 us | floor us | wgmma us "
                            "| TFLOP/s | x floor |");
    shape_rows(bwd_row, &c);
    if (ckpt) {
        const CbStepWeights wt = {k.w, k.xtab};
        bwd_row_on(&k.s, k.name, &k.lists, &c, &wt);
        ckpt_layer_free(&k);
    }
    dw_rows();
    table_note("\n16 KB stages out of L2 (32 MB, each SM its own stage at a time) into a ring of shared-memory slots an SM:\n");
    table_head("ring", "| copies | stages | KB in flight | into the SMs TB/s | a SM GB/s |");
    static const char *how[] = {"bulk, 16 KB a stage", "bulk, 4 x 4 KB a stage", "cp.async, 16 B x 128 threads"};
    for (int mode = 0; mode < 3; mode++)
        for (int st = 4; st <= 12; st += 4) {
            int ctas = 0;
            const double gbps = cb_ring_gbps(mode, st, &ctas);
            table_row("| %s | %d | %d | %.2f | %.0f |\n", how[mode], st, st * 16, gbps / 1e3, gbps / ctas);
        }
    table_note("\nBulk copies of 16 KB slabs out of L2 (8 MB) into shared memory, each multicast to a cluster's CTAs "
               "(an 8-stage ring of 128 KB an SM):\n");
    table_head("multicast", "| CTAs a cluster | into the SMs TB/s | a SM GB/s | from L2 TB/s |");
    for (int cs = 1; cs <= 8; cs *= 2) {
        int ctas = 0;
        const double gbps = cb_multicast_gbps(cs, &ctas);
        if (gbps < 0) table_row("| %d | n/a | n/a | n/a |\n", cs);
        else table_row("| %d | %.2f | %.0f | %.2f |\n", cs, gbps / 1e3, gbps / ctas, gbps / cs / 1e3);
    }
}
