// dyn_update.cu: dynamic evaluation's update over n elements and its statistics' squared
// gradients (CPU twins: src/ops/dyn_update_cpu.c).
// Like Adam, it refreshes the bf16 weight shadow of the range it updates (bf16 mode).
#include "ops/ops.cuh"
#include "ops/dyn_update.h"

__global__ void dyn_update_kernel(real *p, const real *g, const real *p0, const real *rms, bf16 *shadow,
                                  size_t n, DynArgs a) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        real pi = dyn_update_step(p[i], g[i], p0[i], rms[i], a);
        p[i] = pi;
        if (shadow) shadow[i] = __float2bfloat16_rn(pi);
    }
}

void dyn_update_cuda(real *p, const real *g, const real *p0, const real *rms, size_t n, DynArgs a) {
    if (!n) return;
    bf16 *shadow = NULL;
    if (g_cuda.shadow && p >= g_cuda.params && p + n <= g_cuda.params + g_cuda.nparams)
        shadow = g_cuda.shadow + (p - g_cuda.params);
    dyn_update_kernel<<<grid_for(n, 256), 256, 0, g_cuda.stream>>>(p, g, p0, rms, shadow, n, a);
    LAUNCH_CHECK();
    if (!shadow) shadow_refresh(p, n);  // a range that straddles the params edge
}

__global__ void sq_acc_kernel(double *acc, const real *g, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc[i] = __dadd_rn(acc[i], __dmul_rn((double)g[i], (double)g[i]));  // no fma: the CPU's rounding
}

void sq_acc_cuda(double *acc, const real *g, size_t n) {
    if (!n) return;
    sq_acc_kernel<<<grid_for(n, 256), 256, 0, g_cuda.stream>>>(acc, g, n);
    LAUNCH_CHECK();
}
