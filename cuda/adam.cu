// adam.cu: AdamW step and axpy (CPU twins: adam_cpu, axpy_cpu in src/adam_cpu.c), n elements.
// Adam also refreshes the bf16 weight shadow of the range it updates (bf16 mode).
#include "common.cuh"

__global__ void adam_kernel(real *p, const real *g, real *m, real *v, bf16 *shadow, size_t n, AdamArgs a,
                            real bc1, real bc2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        real gi = g[i] * a.grad_scale;
        real mi = a.beta1 * m[i] + (1 - a.beta1) * gi;
        real vi = a.beta2 * v[i] + (1 - a.beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        real mhat = mi / bc1, vhat = vi / bc2;
        real pi = p[i] - a.lr * (mhat / (sqrtf(vhat) + a.eps) + a.weight_decay * p[i]);
        p[i] = pi;
        if (shadow) shadow[i] = __float2bfloat16_rn(pi);
    }
}

void adam_cuda(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a) {
    if (!n) return;
    // Bias corrections as the CPU computes them (double pow, then rounded).
    real bc1 = (real)(1.0 - pow((double)a.beta1, (double)a.step));
    real bc2 = (real)(1.0 - pow((double)a.beta2, (double)a.step));
    bf16 *shadow = NULL;
    if (g_cuda.shadow && p >= g_cuda.params && p + n <= g_cuda.params + g_cuda.nparams)
        shadow = g_cuda.shadow + (p - g_cuda.params);
    adam_kernel<<<grid_for(n, 256), 256>>>(p, g, m, v, shadow, n, a, bc1, bc2);
    LAUNCH_CHECK();
    if (!shadow) shadow_refresh(p, n);  // a range that straddles the params edge
}

__global__ void axpy_kernel(real *y, const real *x, real alpha, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += alpha * x[i];
}

void axpy_cuda(real *y, const real *x, real alpha, size_t n) {
    if (!n) return;
    axpy_kernel<<<grid_for(n, 256), 256>>>(y, x, alpha, n);
    LAUNCH_CHECK();
}
