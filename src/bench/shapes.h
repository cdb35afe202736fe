// shapes.h: the rows each table of `swlstm bench` runs (shapes.c), and the model a row builds.
#pragma once
#include "model/config.h"

// Kernel table: a 12288 x 12288 weight of blocks bs at `density`, N = 32 rows.
typedef struct {
    int bs;
    double density;
    Precision prec;
} KernelShape;

// --train: a 1-layer model at batch B; depth > 0: the mlstm cell with this many internal steps.
typedef struct {
    int H, B;
    const char *mask;
    Precision prec;
    Engine engine;
    int depth;
} TrainShape;

// --sample: steps = 1: the per-step ops (infer_step and the host's draw) in place of the
// device loop, on `batch` rows at once; depth > 0: an mlstm of that depth.
typedef struct {
    int H;
    const char *mask;
    Precision prec;
    int steps, depth, batch;
} SampleShape;

// --probe: generated features at a sentiment task's shape; C chosen on n_dev rows or by
// `folds`-fold CV; `penalties` a probe.h bit mask; target_s the wall time aimed at.
typedef struct {
    const char *name;
    int n_train, n_dev, d, folds, penalties;
    double target_s;
} ProbeShape;

extern const KernelShape bench_kernel_shapes[];
extern const TrainShape bench_train_shapes[];
extern const SampleShape bench_sample_shapes[];
extern const ProbeShape bench_probe_shapes[];
extern const int bench_n_kernel_shapes, bench_n_train_shapes, bench_n_sample_shapes, bench_n_probe_shapes;

// A 1-layer, block-32 model of H units on CUDA (depth > 0: the mlstm cell of that depth); the
// rest stays at config_defaults. --sample's rows.
void bench_model_config(Config *c, int H, const char *mask, Precision prec, int depth);
// A --train row's config: the model above at its batch and engine, T = 128, the mlstm
// initialised as configs/mlstm_*.cfg.
void bench_train_config(Config *c, const TrainShape *s);
