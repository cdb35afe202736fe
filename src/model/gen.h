// gen.h: sampling with the whole loop on the device (backend.h gen_*) where the backend has
// one for the model: a one-layer plain LSTM without layer norm, or a one-layer mLSTM; blocks of 32.
#pragma once
#include "model/model.h"
#include "model/sampler.h"

typedef struct {
    Model *m;
    void *loop;   // the backend's handle
    real *xtab;   // layer 0's input table, which the loop reads (mLSTM: m and a, [2][256][H])
} Gen;

// NULL where the model or its backend has no device loop; then why_not (if given) says why.
Gen *gen_open(Model *m, const SamplerOpts *so, const char **why_not);
void gen_close(Gen *g);
// Feeds feed[0..nfeed), then draws n bytes into out (backend.h gen_run); the state carries on
// to the next call, which should feed the last byte drawn first.
void gen_draw(Gen *g, const int *feed, int nfeed, int n, Rng *rng, unsigned char *out);
Route gen_route(const Gen *g);  // g NULL: the per-step ops (route.h)
