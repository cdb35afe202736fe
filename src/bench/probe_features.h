// probe_features.h: the features `swlstm bench --probe` times the sweep on, held with their
// labels: a checkpoint's of MR and SST-2 (probe_features.c).
#pragma once
#include <stdlib.h>
#include "probe/probe.h"

typedef struct {
    float *X;
    int *y;
    int n, d;
} Owned;
static inline void owned_free(Owned *o) { free(o->X); free(o->y); }
static inline ProbeSet owned_set(const Owned *o) { return (ProbeSet){.X = o->X, .y = o->y, .n = o->n, .d = o->d}; }

// The checkpoint's features, extracted on `device`, of data_dir's mr.all into *mr (when
// want_mr) and of sst2.train and sst2.dev into *sst_tr and *sst_dev (when want_sst); the sets
// not wanted stay empty.
void ckpt_features(const char *ckpt, const char *data_dir, ProbeDevice device, int want_mr, int want_sst, Owned *mr,
                   Owned *sst_tr, Owned *sst_dev);
