// bench_probe.h: the parts of `swlstm bench --probe`: the table, generated and saved features
// (bench_probe.c), and a checkpoint's features of MR and SST-2 (bench_probe_ckpt.c).
#pragma once
#include <stdlib.h>
#include "probe/probe.h"

typedef struct { float *X; int *y; int n, d; } Owned;
static inline void owned_free(Owned *o) { free(o->X); free(o->y); }

// One table row: the sweep's wall time on tr, C chosen on dev or by o->folds-fold CV.
void bench_probe_row(const char *name, const ProbeSet *tr, const ProbeSet *dev, const ProbeOpts *o, double target);
// The rows "mr" (10-fold) and "sst2" (train, dev) on the checkpoint's features of data_dir's
// mr.all and sst2.train/.dev, extracted on `device`; `only` (or NULL) picks one of them.
// Returns the rows run.
int bench_probe_checkpoint(const char *ckpt, const char *data_dir, const char *device, const char *only, ProbeOpts *o,
                           const char *pen);
