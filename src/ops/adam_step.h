// adam_step.h: one AdamW element update, shared by the CPU reference (adam_cpu.c) and the
// CUDA kernel (cuda/ops/adam.cu) so that both compute the same formula.
#pragma once
#include <math.h>
#include "ops/backend.h"
#include "ops/host_device.h"

// Bias corrections 1 - beta^step, in double, once per call.
static inline void adam_bias_corrections(const AdamArgs *a, real *bc1, real *bc2) {
    *bc1 = (real)(1.0 - pow((double)a->beta1, (double)a->step));
    *bc2 = (real)(1.0 - pow((double)a->beta2, (double)a->step));
}

// Updates *m, *v from gradient g (times grad_scale) and returns the new weight. Weight decay
// is decoupled (AdamW) and uses the old p.
static inline SW_HOST_DEVICE real adam_step(real p, real g, real *m, real *v, AdamArgs a, real bc1, real bc2) {
    real gi = g * a.grad_scale;
    real mi = a.beta1 * *m + (1 - a.beta1) * gi;
    real vi = a.beta2 * *v + (1 - a.beta2) * gi * gi;
    *m = mi;
    *v = vi;
    real mhat = mi / bc1, vhat = vi / bc2;
    return p - a.lr * (mhat / ((real)sqrt(vhat) + a.eps) + a.weight_decay * p);
}

// One element of the weights' exponential moving average.
static inline SW_HOST_DEVICE real ema_step(real avg, real p, real decay) { return decay * avg + (1 - decay) * p; }
