// dyn_update.h: one element of dynamic evaluation's update (Krause et al. 2018, "RMS with a
// global prior"), shared by the CPU reference (dyn_update_cpu.c) and the CUDA kernel
// (cuda/ops/dyn_update.cu) so that both compute the same formula.
#pragma once
#include "ops/backend.h"
#include "ops/host_device.h"

// p - eta * g / (rms + eps) + min(lambda * rms / mean(rms), 1) * (p0 - p): the gradient step
// normalised by the training gradients' RMS, and a pull back to the trained weight p0, faster
// for elements whose gradients are larger; capped at 1 so that it cannot overshoot p0.
static inline SW_HOST_DEVICE real dyn_update_step(real p, real g, real p0, real rms, DynArgs a) {
    real decay = a.lambda_per_rms * rms;
    if (decay > 1) decay = 1;
    return p + (decay * (p0 - p) - a.eta * g / (rms + a.eps));
}
