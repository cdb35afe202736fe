// shapes.c: the rows of each `swlstm bench` table. --train: a dense H=2048 model and a
// small-world H=8192 model of about as many recurrent weights, the engine at B = 32, 64, 128
// beside the per-step ops at 128 (and engine = wgmma at 128 and 256, lstm_3min's batch), and
// the shapes the targets name (docs/PERF.md).
#include <stdio.h>
#include "bench/shapes.h"
#include "probe/probe.h"

#define F PREC_FP32
#define BF PREC_BF16
#define COUNT(a) ((int)(sizeof a / sizeof a[0]))

const KernelShape bench_kernel_shapes[] = {
    {.bs = 32, .density = 1, .prec = F}, {.bs = 32, .density = 0.5, .prec = F}, {.bs = 32, .density = 0.25, .prec = F},
    {.bs = 32, .density = 0.1, .prec = F}, {.bs = 32, .density = 0.05, .prec = F}, {.bs = 32, .density = 0.02, .prec = F},
    {.bs = 32, .density = 1, .prec = BF}, {.bs = 32, .density = 0.5, .prec = BF}, {.bs = 32, .density = 0.25, .prec = BF},
    {.bs = 32, .density = 0.1, .prec = BF}, {.bs = 32, .density = 0.05, .prec = BF}, {.bs = 32, .density = 0.02, .prec = BF},
    {.bs = 8, .density = 0.1, .prec = F}, {.bs = 16, .density = 0.1, .prec = F}, {.bs = 8, .density = 0.1, .prec = BF},
    {.bs = 16, .density = 0.1, .prec = BF},
};

#define STEPS ENGINE_STEPS
#define AUTO ENGINE_AUTO
#define WGMMA ENGINE_WGMMA
const TrainShape bench_train_shapes[] = {
    {.H = 2048, .B = 128, .mask = "dense", .prec = BF, .engine = STEPS},
    {.H = 2048, .B = 32, .mask = "dense", .prec = BF, .engine = AUTO},
    {.H = 2048, .B = 64, .mask = "dense", .prec = BF, .engine = AUTO},
    {.H = 2048, .B = 128, .mask = "dense", .prec = BF, .engine = AUTO},
    {.H = 8192, .B = 128, .mask = "ba_8", .prec = BF, .engine = STEPS},
    {.H = 8192, .B = 32, .mask = "ba_8", .prec = BF, .engine = AUTO},
    {.H = 8192, .B = 64, .mask = "ba_8", .prec = BF, .engine = AUTO},
    {.H = 8192, .B = 128, .mask = "ba_8", .prec = BF, .engine = AUTO},
    {.H = 8192, .B = 128, .mask = "ba_8", .prec = BF, .engine = WGMMA},
    {.H = 8192, .B = 256, .mask = "ba_8", .prec = BF, .engine = AUTO},
    {.H = 8192, .B = 256, .mask = "ba_8", .prec = BF, .engine = WGMMA},
    {.H = 4096, .B = 128, .mask = "ba_4", .prec = BF, .engine = AUTO},
    {.H = 18432, .B = 128, .mask = "ba_8", .prec = BF, .engine = AUTO},
    {.H = 2048, .B = 128, .mask = "dense", .prec = F, .engine = STEPS},
    {.H = 2048, .B = 128, .mask = "dense", .prec = F, .engine = AUTO},
    {.H = 8192, .B = 128, .mask = "ba_8", .prec = F, .engine = STEPS},
    {.H = 8192, .B = 128, .mask = "ba_8", .prec = F, .engine = AUTO},
    {.H = 2048, .B = 128, .mask = "dense", .prec = BF, .engine = STEPS, .depth = 4},
    {.H = 2048, .B = 128, .mask = "dense", .prec = BF, .engine = AUTO, .depth = 4},
    {.H = 8192, .B = 128, .mask = "ba_7", .prec = BF, .engine = STEPS, .depth = 4},
    {.H = 8192, .B = 32, .mask = "ba_7", .prec = BF, .engine = AUTO, .depth = 4},
    {.H = 8192, .B = 64, .mask = "ba_7", .prec = BF, .engine = AUTO, .depth = 4},
    {.H = 8192, .B = 128, .mask = "ba_7", .prec = BF, .engine = AUTO, .depth = 4},
    {.H = 4096, .B = 128, .mask = "ba_7", .prec = BF, .engine = AUTO, .depth = 3},
    {.H = 5120, .B = 128, .mask = "ba_14", .prec = BF, .engine = AUTO, .depth = 2},  // mlstm_3min's
    {.H = 18432, .B = 64, .mask = "ba_8", .prec = BF, .engine = AUTO, .depth = 4},
};

const SampleShape bench_sample_shapes[] = {
    {.H = 4096, .mask = "ba_4", .prec = BF, .steps = 1, .batch = 1},
    {.H = 4096, .mask = "ba_4", .prec = BF, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "ba_4", .prec = F, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "dense", .prec = BF, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "random_0.5", .prec = BF, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "random_0.25", .prec = BF, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "random_0.1", .prec = BF, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "random_0.05", .prec = BF, .steps = 0, .batch = 1},
    {.H = 8192, .mask = "ba_7", .prec = BF, .steps = 0, .batch = 1},
    {.H = 512, .mask = "random_0.05", .prec = BF, .steps = 0, .batch = 1},
    {.H = 4096, .mask = "ba_4", .prec = BF, .steps = 1, .batch = 8},
    {.H = 4096, .mask = "ba_4", .prec = BF, .steps = 1, .batch = 64},
    {.H = 4096, .mask = "dense", .prec = BF, .steps = 1, .batch = 8},
    {.H = 4096, .mask = "dense", .prec = BF, .steps = 1, .batch = 64},
    {.H = 8192, .mask = "ba_7", .prec = BF, .steps = 1, .depth = 4, .batch = 1},
    {.H = 8192, .mask = "ba_7", .prec = BF, .steps = 0, .depth = 4, .batch = 1},
    {.H = 8192, .mask = "ba_7", .prec = F, .steps = 0, .depth = 4, .batch = 1},
    {.H = 2048, .mask = "ba_4", .prec = BF, .steps = 0, .depth = 4, .batch = 1},
    {.H = 8192, .mask = "ba_7", .prec = BF, .steps = 1, .depth = 4, .batch = 8},
    {.H = 8192, .mask = "ba_7", .prec = BF, .steps = 1, .depth = 4, .batch = 64},
};

// The published sentiment tasks' shapes: SST-2 (train, dev) and MR (10-fold CV).
const ProbeShape bench_probe_shapes[] = {
    {.name = "sst2-l2", .n_train = 6920, .n_dev = 872, .d = 4096, .folds = 0, .penalties = 1 << PEN_L2, .target_s = 30},
    {.name = "sst2-both", .n_train = 6920, .n_dev = 872, .d = 4096, .folds = 0, .penalties = 1 << PEN_L2 | 1 << PEN_L1, .target_s = 120},
    {.name = "mr-l2", .n_train = 10662, .n_dev = 0, .d = 4096, .folds = 10, .penalties = 1 << PEN_L2, .target_s = 180},
    {.name = "mr256-both", .n_train = 10662, .n_dev = 0, .d = 256, .folds = 10, .penalties = 1 << PEN_L2 | 1 << PEN_L1, .target_s = 20},
};

const int bench_n_kernel_shapes = COUNT(bench_kernel_shapes), bench_n_train_shapes = COUNT(bench_train_shapes),
          bench_n_sample_shapes = COUNT(bench_sample_shapes), bench_n_probe_shapes = COUNT(bench_probe_shapes);

void bench_model_config(Config *c, int H, const char *mask, Precision prec, int depth) {
    config_defaults(c);
    c->hidden_size = H;
    c->block_size = 32;
    c->num_layers = 1;
    snprintf(c->sparsity, sizeof c->sparsity, "%s", mask);
    c->device = DEVICE_CUDA;
    c->precision = prec;
    if (depth) c->cell = CELL_MLSTM, c->depth = depth;
}

void bench_train_config(Config *c, const TrainShape *s) {
    bench_model_config(c, s->H, s->mask, s->prec, s->depth);
    c->batch_size = s->B;
    c->seq_length = 128;
    c->engine = s->engine;
    if (s->depth) c->init = INIT_IDENTITY;
}
