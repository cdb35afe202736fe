// bench.h: the tables of `swlstm bench` (src/bench/): the block-sparse kernels against the
// libraries, training throughput, sampling at batch 1 (GPU builds: the device timing is
// cuda/bench, declared in bench_cuda.h), and the probe's C sweep (CPU and CUDA builds).
// cli/cmd_bench.c parses the options and calls one of these.
#pragma once
#include "probe/probe.h"

// The rows to run; 0 (-1 for the enums) keeps all.
typedef struct {
    int bs;          // kernel table: block size
    double density;  // kernel table: fraction of blocks kept
    int prec;        // Precision: kernel table and --train
    int hidden;      // --train: hidden size
    int cell;        // --train: Cell
} BenchFilter;

void bench_kernels(const BenchFilter *f);
void bench_train(const BenchFilter *f);
void bench_sample(void);
// corpus: also a row on its bytes; ckpt: also a row on its layer 0 (on the corpus's bytes where
// given); NULL: none.
void bench_wgmma(const char *corpus, const char *ckpt);
int bench_sync(void);  // 1 if a mechanism failed its check

typedef struct {
    const char *only;     // one row by name (NULL: all)
    const char *ckpt;     // a checkpoint whose features of data's MR and SST-2 come first (NULL: none)
    const char *data;     // the folder of mr.all and sst2.train/.dev
    const char *feat[4];  // saved features in place of the rows: train .npy, labels, dev .npy, dev labels
    int penalties;        // Penalty bits in place of each row's own (0: the row's; both for files and checkpoints)
    int folds;            // CV folds where no dev set is given
    ProbeDevice device;
} BenchProbeOpts;

void bench_probe(const BenchProbeOpts *o);
