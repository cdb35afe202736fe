// shapes.c: the rows of each `swlstm bench` table. --train: a dense H=2048 model and a
// small-world H=8192 model of about as many recurrent weights, the engine at B = 32, 64, 128
// beside the per-step ops at 128, and the shapes the targets name (docs/PERF.md).
#include <stdio.h>
#include "bench/shapes.h"
#include "probe/probe.h"

#define F PREC_FP32
#define BF PREC_BF16
#define COUNT(a) ((int)(sizeof a / sizeof a[0]))

const KernelShape bench_kernel_shapes[] = {
    {32, 1, F},   {32, 0.5, F},  {32, 0.25, F},  {32, 0.1, F},  {32, 0.05, F},  {32, 0.02, F},
    {32, 1, BF},  {32, 0.5, BF}, {32, 0.25, BF}, {32, 0.1, BF}, {32, 0.05, BF}, {32, 0.02, BF},
    {8, 0.1, F},  {16, 0.1, F},  {8, 0.1, BF},   {16, 0.1, BF},
};

#define STEPS ENGINE_STEPS
#define AUTO ENGINE_AUTO
const TrainShape bench_train_shapes[] = {
    {2048, 128, "dense", BF, STEPS, 0}, {2048, 32, "dense", BF, AUTO, 0},  {2048, 64, "dense", BF, AUTO, 0},
    {2048, 128, "dense", BF, AUTO, 0},  {8192, 128, "ba_8", BF, STEPS, 0}, {8192, 32, "ba_8", BF, AUTO, 0},
    {8192, 64, "ba_8", BF, AUTO, 0},    {8192, 128, "ba_8", BF, AUTO, 0},  {4096, 128, "ba_4", BF, AUTO, 0},
    {18432, 128, "ba_8", BF, AUTO, 0},  {2048, 128, "dense", F, STEPS, 0}, {2048, 128, "dense", F, AUTO, 0},
    {8192, 128, "ba_8", F, STEPS, 0},   {8192, 128, "ba_8", F, AUTO, 0},
    {2048, 128, "dense", BF, STEPS, 4}, {2048, 128, "dense", BF, AUTO, 4},
    {8192, 128, "ba_7", BF, STEPS, 4},  {8192, 32, "ba_7", BF, AUTO, 4},   {8192, 64, "ba_7", BF, AUTO, 4},
    {8192, 128, "ba_7", BF, AUTO, 4},   {4096, 128, "ba_7", BF, AUTO, 3},  {18432, 64, "ba_8", BF, AUTO, 4},
};

const SampleShape bench_sample_shapes[] = {
    {4096, "ba_4", BF, 1, 0, 1},        {4096, "ba_4", BF, 0, 0, 1},        {4096, "ba_4", F, 0, 0, 1},
    {4096, "dense", BF, 0, 0, 1},       {4096, "random_0.5", BF, 0, 0, 1},  {4096, "random_0.25", BF, 0, 0, 1},
    {4096, "random_0.1", BF, 0, 0, 1},  {4096, "random_0.05", BF, 0, 0, 1}, {8192, "ba_7", BF, 0, 0, 1},
    {512, "random_0.05", BF, 0, 0, 1},  {4096, "ba_4", BF, 1, 0, 8},        {4096, "ba_4", BF, 1, 0, 64},
    {4096, "dense", BF, 1, 0, 8},       {4096, "dense", BF, 1, 0, 64},      {8192, "ba_7", BF, 1, 4, 1},
    {8192, "ba_7", BF, 0, 4, 1},        {8192, "ba_7", F, 0, 4, 1},         {2048, "ba_4", BF, 0, 4, 1},
    {8192, "ba_7", BF, 1, 4, 8},        {8192, "ba_7", BF, 1, 4, 64},
};

// The published sentiment tasks' shapes: SST-2 (train, dev) and MR (10-fold CV).
const ProbeShape bench_probe_shapes[] = {
    {"sst2-l2", 6920, 872, 4096, 0, 1 << PEN_L2, 30},
    {"sst2-both", 6920, 872, 4096, 0, 1 << PEN_L2 | 1 << PEN_L1, 120},
    {"mr-l2", 10662, 0, 4096, 10, 1 << PEN_L2, 180},
    {"mr256-both", 10662, 0, 256, 10, 1 << PEN_L2 | 1 << PEN_L1, 20},
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
