// dyn_update_cpu.c: dynamic evaluation's update over n elements and its statistics' squared
// gradients (CPU reference; the CUDA twin is cuda/ops/dyn_update.cu).
#include "ops/dyn_update.h"

// Below this many elements threads cost more than they save.
#define PAR_MIN 32768

void dyn_update_cpu(real *p, const real *g, const real *p0, const real *rms, size_t n, DynArgs a) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) p[i] = dyn_update_step(p[i], g[i], p0[i], rms[i], a);
}

void sq_acc_cpu(double *acc, const real *g, size_t n) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) acc[i] += (double)g[i] * (double)g[i];
}
