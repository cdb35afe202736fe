// bench_train.c: `swlstm bench --train`: training throughput of 1-layer models (shapes.c), and
// for the per-step path at B = 128 what each of its ops costs. GPU only.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/common.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/shapes.h"
#include "bench/table.h"
#include "model/model.h"
#include "ops/backend.h"
#include "sparse/bsmat.h"
#include "sparse/mask.h"

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
    const TrainShape *s;
    double us[NOPS];
} OpRow;

static void time_ops(OpRow *r, Model *m, Acts *a) {
    for (int op = 0; op < NOPS; op++) {
        OpArg o = {m, a, op};
        r->us[op] = 1e3 * cb_time_ms(run_op, &o, 3, op == OP_BSMM_BWD_WEIGHT ? 10 : 50);
    }
}

// One training-throughput row: median step of a 1-layer model; peak memory is what the
// model, its buffers and the engine hold on the device after the steps. Returns whether it
// timed the per-step path's ops into *ops.
static int train_row(const TrainShape *row, OpRow *ops) {
    enum { WARMUP = 2, STEPS = 5 };
    Config cfg;
    bench_train_config(&cfg, row);
    int B = cfg.batch_size, T = cfg.seq_length, H = cfg.hidden_size;
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
            AdamArgs ad = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.f, .grad_scale = (real)scale, .step = s + 1};
            be->adam(m->params + pt->off, m->grads + pt->off, am + pt->off, av + pt->off, pt->n, ad);
        }
        be->sync();
        if (s >= WARMUP) fwd[s - WARMUP] = 1e3 * (t1 - t0), step[s - WARMUP] = 1e3 * (now_sec() - t0);
    }
    double mem = cb_mem_used_gib() - mem0, f = median(fwd, STEPS), st = median(step, STEPS);
    const Layer *L = &m->layer[0];
    MaskStats ms = mask_stats(&L->mask_h);
    table_row("| %5d | %-8s | %5.1f%% | %5.1f | %s | %3d | %-6s%s | %8.1f | %8.1f | %8.1f | %9.0f | %6.1f |\n", H, row->mask,
           100 * ms.density, bsmat_nvals(&L->wh) / 1e6, CFG_NAME(&cfg, precision), B,
           recur_name(acts_route(m, a).layer[0]), m->mlstm ? " (mlstm)" : "", f, st - f, st, B * T / (st * 1e-3), mem);
    fflush(stdout);
    int timed = !a->seq[0] && B == 128;
    if (timed) *ops = (OpRow){row, {0}}, time_ops(ops, m, a);
    be->free(am);
    be->free(av);
    free(tok);
    free(tgt);
    acts_free(m, a);
    model_free(m);
    return timed;
}

static int wanted(const BenchFilter *f, const TrainShape *s) {
    return (!f->hidden || s->H == f->hidden) && (f->prec < 0 || f->prec == (int)s->prec) &&
           (f->cell < 0 || f->cell == (s->depth ? CELL_MLSTM : CELL_LSTM));
}

void bench_train(const BenchFilter *f) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    table_note("device: %s; L2 read: %.0f GB/s (the step kernels' ceiling)\ntraining step (1 layer, E = 64, block 32, T = 128): "
           "medians of 5 steps after 2; peak = device memory the run holds\n\n", dev, cb_l2_gbps(l2));
    table_head("train", "| H | W_h mask | density | W_h weights M | dtype | B | path | fwd ms | bwd+adam ms | step ms | chars/s | peak GiB |");
    OpRow *ops = xmalloc(sizeof(OpRow) * bench_n_train_shapes);
    int nops = 0;
    for (int i = 0; i < bench_n_train_shapes; i++)
        if (wanted(f, &bench_train_shapes[i])) nops += train_row(&bench_train_shapes[i], &ops[nops]);
    if (nops) {
        table_note("\nthe per-step path's ops, us per call (medians of back-to-back calls); a window of T = 128 steps "
               "runs each per-step op 128 times and bwd-weight once (N = T*B)\n\n");
        table_head("train_ops", "| H | W_h mask | dtype | bsmm fwd | lstm fwd | lstm bwd | bsmm bwd-data | step total x128 ms | bsmm bwd-weight |");
    }
    for (int i = 0; i < nops; i++) {
        const OpRow *r = &ops[i];
        double per_step = r->us[OP_BSMM_FWD] + r->us[OP_LSTM_FWD] + r->us[OP_LSTM_BWD] + r->us[OP_BSMM_BWD_DATA];
        table_row("| %5d | %-8s | %s | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f |\n", r->s->H, r->s->mask,
               config_choice_name("precision", r->s->prec), r->us[OP_BSMM_FWD], r->us[OP_LSTM_FWD],
               r->us[OP_LSTM_BWD], r->us[OP_BSMM_BWD_DATA], 128 * per_step / 1e3, r->us[OP_BSMM_BWD_WEIGHT]);
    }
    free(ops);
}
