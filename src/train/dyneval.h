// dyneval.h: dynamic evaluation (Krause, Kahembwe, Murray and Renals 2018): the model keeps
// learning from the text it has just scored. One stream with carried state is cut into
// segments (the windows of an Acts with B = 1); each is scored, then the weights take a step
// on that segment's loss gradient (ops/dyn_update.h):
//   theta <- theta - eta * g / (rms + eps) + min(lambda * rms / mean(rms), 1) * (theta0 - theta)
// where theta0 are the trained weights and rms the root mean square of each weight's gradient
// over windows of the training split; mean(rms) is the mean over the model's tensors of each
// tensor's mean. Every stored parameter adapts (block-sparse matrices on their stored blocks);
// the weights change in memory only.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "base/progress.h"
#include "model/model.h"

typedef struct {
    double eta, lambda, eps;
} DynHyper;

typedef struct {
    Model *m;
    real *p0, *rms;   // backend memory, m->nparams each: the trained weights, the gradients' RMS
    double mean_rms;  // mean over tensors of their mean rms
    long windows;     // training windows the statistics summed
} DynEval;

// Keeps m's weights as the trained ones and gathers the gradients' RMS over len bytes (of the
// training split) in B stripes with windows of T and carried state, the gradient of each
// window's mean loss (B is lowered for a short span). Progress (a share) on pr unless NULL.
DynEval *dyn_create(Model *m, const uint8_t *bytes, size_t len, int B, int T, Progress *pr);
// The statistics of src for m, another copy of src's model (on another device): the trained
// weights m holds, rms from rms_host (src's, on the host; m->nparams).
DynEval *dyn_like(Model *m, const DynEval *src, const real *rms_host);
void dyn_free(DynEval *d);
// Puts the trained weights back into the model.
void dyn_restore(DynEval *d);
// The dynamic bits per character of len bytes read as one stream in segments of a->T
// (a->B = 1), from the trained weights; predictions counted as eval_bpc's (into *count).
// The model keeps the adapted weights (dyn_restore brings back the trained ones). Progress (a
// share) on pr unless NULL.
double dyn_bpc(DynEval *d, Acts *a, DynHyper h, const uint8_t *bytes, size_t len, size_t *count, Progress *pr);
// dyn_bpc's sum: the loss in nats over its *count predictions.
double dyn_nats(DynEval *d, Acts *a, DynHyper h, const uint8_t *bytes, size_t len, size_t *count, Progress *pr);
