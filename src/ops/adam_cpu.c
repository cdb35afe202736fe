// adam_cpu.c: AdamW step, the weights' moving average and the reductions used for global-norm clipping (CPU reference;
// the CUDA versions are in cuda/ops/adam.cu).
#include "ops/adam_step.h"
#include <math.h>
#include <stdlib.h>

// Below this many elements threads cost more than they save.
#define PAR_MIN 32768
// sumsq sums fixed chunks so its result never depends on the thread count.
#define SUMSQ_CHUNK 4096

// AdamW over n elements (adam_step.h), m and v updated in place.
void adam_cpu(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a) {
    real bc1, bc2;
    adam_bias_corrections(&a, &bc1, &bc2);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) p[i] = adam_step(p[i], g[i], &m[i], &v[i], a, bc1, bc2);
}

// sum_i x[i]^2 in double: each chunk summed in order, then the chunk sums in order.
double sumsq_cpu(const real *x, size_t n) {
    size_t nchunk = (n + SUMSQ_CHUNK - 1) / SUMSQ_CHUNK;
    double *part = xmalloc(nchunk * sizeof(double));
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t c = 0; c < nchunk; c++) {
        size_t lo = c * SUMSQ_CHUNK, hi = lo + SUMSQ_CHUNK < n ? lo + SUMSQ_CHUNK : n;
        double s = 0;
        for (size_t i = lo; i < hi; i++) s += (double)x[i] * (double)x[i];
        part[c] = s;
    }
    double total = 0;
    for (size_t c = 0; c < nchunk; c++) total += part[c];
    free(part);
    return total;
}

// y[n] += alpha * x[n]
void axpy_cpu(real *y, const real *x, real alpha, size_t n) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

// avg[n] = decay * avg + (1 - decay) * p (adam_step.h: the same formula on the GPU)
void ema_cpu(real *avg, const real *p, real decay, size_t n) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) avg[i] = ema_step(avg[i], p[i], decay);
}
