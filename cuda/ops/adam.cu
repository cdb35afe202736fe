// adam.cu: AdamW step, axpy and the weights' moving average (CPU twins: adam_cpu, axpy_cpu,
// ema_cpu in src/ops/adam_cpu.c), n elements.
// Adam also refreshes the bf16 weight shadow of the range it updates (bf16 mode).
#include "ops/ops.cuh"
#include "ops/adam_step.h"

__global__ void adam_kernel(real *p, const real *g, real *m, real *v, bf16 *shadow, size_t n, AdamArgs a,
                            real bc1, real bc2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        real pi = adam_step(p[i], g[i], &m[i], &v[i], a, bc1, bc2);
        p[i] = pi;
        if (shadow) shadow[i] = __float2bfloat16_rn(pi);
    }
}

void adam_cuda(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a) {
    if (!n) return;
    real bc1, bc2;
    adam_bias_corrections(&a, &bc1, &bc2);
    bf16 *shadow = NULL;
    if (g_cuda.shadow && p >= g_cuda.params && p + n <= g_cuda.params + g_cuda.nparams)
        shadow = g_cuda.shadow + (p - g_cuda.params);
    adam_kernel<<<grid_for(n, 256), 256, 0, g_cuda.stream>>>(p, g, m, v, shadow, n, a, bc1, bc2);
    LAUNCH_CHECK();
    if (!shadow) shadow_refresh(p, n);  // a range that straddles the params edge
}

__global__ void axpy_kernel(real *y, const real *x, real alpha, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += alpha * x[i];
}

void axpy_cuda(real *y, const real *x, real alpha, size_t n) {
    if (!n) return;
    twin_none(y, n, "axpy");
    axpy_kernel<<<grid_for(n, 256), 256, 0, g_cuda.stream>>>(y, x, alpha, n);
    LAUNCH_CHECK();
}

__global__ void ema_kernel(real *avg, const real *p, real decay, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        avg[i] = ema_step(avg[i], p[i], decay);
}

void ema_cuda(real *avg, const real *p, real decay, size_t n) {
    if (!n) return;
    ema_kernel<<<grid_for(n, 256), 256, 0, g_cuda.stream>>>(avg, p, decay, n);
    LAUNCH_CHECK();
}
