// layernorm.h: one span's layer-norm statistics and backward, shared by the LSTM cell's
// per-gate norms (lstm_cpu.c) and the row layer norm (layernorm_cpu.c). CPU reference.
#pragma once
#include <tgmath.h>
#include "base/common.h"

#define LN_EPS 1e-5

// Mean and 1/sqrt(biased variance + eps) of n values (two passes: the variance is summed
// around the mean, which keeps it accurate in float).
static inline void ln_span_stats(const real *x, int n, real *mean, real *rstd) {
    real s = 0, ss = 0;
    for (int j = 0; j < n; j++) s += x[j];
    real m = s / n;
    for (int j = 0; j < n; j++) ss += (x[j] - m) * (x[j] - m);
    *mean = m;
    *rstd = 1 / sqrt(ss / n + (real)LN_EPS);
}

// d <- the gradient at x of a span whose normalised values went through gain, in place
// (d holds the gradient at the gained output): d = rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)),
// dxh = d * gain, xh = (x - mean) * rstd.
static inline void ln_span_bwd(real *d, const real *x, real mean, real rstd, const real *gain, int n) {
    real s1 = 0, s2 = 0;
    for (int j = 0; j < n; j++) {
        real dxh = d[j] * gain[j];
        s1 += dxh;
        s2 += dxh * (x[j] - mean) * rstd;
    }
    real m1 = s1 / n, m2 = s2 / n;
    for (int j = 0; j < n; j++) d[j] = rstd * (d[j] * gain[j] - m1 - (x[j] - mean) * rstd * m2);
}
