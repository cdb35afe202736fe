// gpu_check.h: helpers shared by the GPU tests: random host data, device copies, NaN
// poisoning, relative L2 error against the CPU reference.
#pragma once
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/backend.h"
#include "model/config.h"
#include "../test.h"

#define TOL_FP32 1e-5
#define TOL_BF16 1e-2

// The tests name precisions as text, for their messages.
static inline const Backend *cuda_named(const char *prec) { return backend_cuda(config_parse_choice("precision", prec, "test")); }
static inline int prec_named(const char *prec) { return config_parse_choice("precision", prec, "test"); }

static inline double tol_for(const char *prec) { return strcmp(prec, "bf16") ? TOL_FP32 : TOL_BF16; }

// n uniform values in [-scale, scale)
static inline real *h_rand(size_t n, unsigned long long *s, double scale) {
    real *h = xmalloc(sizeof(real) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) h[i] = (real)(scale * (2 * test_rand(s) - 1));
    return h;
}

static inline void *d_from(const Backend *be, const void *h, size_t bytes) {
    void *d = be->alloc(bytes);
    be->to_device(d, h, bytes);
    return d;
}

// Fills n reals of device memory with NaN: an output element the op fails to write shows.
static inline void d_poison(const Backend *be, real *d, size_t n) {
    real *h = xmalloc(sizeof(real) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) h[i] = NAN;
    be->to_device(d, h, sizeof(real) * n);
    free(h);
}

static inline real *h_from(const Backend *be, const real *d, size_t n) {
    real *h = xmalloc(sizeof(real) * (n ? n : 1));
    be->to_host(h, d, sizeof(real) * n);
    return h;
}

// ||a - ref|| / ||ref|| (absolute when ref is 0); infinite if a holds a NaN or Inf.
static inline double rel_l2(const real *a, const real *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

// Downloads n reals from d and compares them with the host reference.
static inline double d_err(const Backend *be, const real *d, const real *ref, size_t n) {
    real *h = h_from(be, d, n);
    double e = rel_l2(h, ref, n);
    free(h);
    return e;
}
