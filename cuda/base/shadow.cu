// shadow.cu: the bf16 copy of the parameters that bf16 kernels read their weights from.
// Adam keeps it current (adam.cu); so do to_device/copy writes into the params range.
// The CPU backend has no twin (it ignores register_params).
#include "base/launch.cuh"
#include "base/lowp.cuh"

__global__ void to_bf16_kernel(bf16 *dst, const real *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

void to_bf16(bf16 *dst, const real *src, size_t n, cudaStream_t stream) {
    if (!n) return;
    to_bf16_kernel<<<grid_for(n, 256), 256, 0, stream>>>(dst, src, n);
    LAUNCH_CHECK();
}

static int in_params(const real *p) {
    return g_cuda.params && p >= g_cuda.params && p < g_cuda.params + g_cuda.nparams;
}

void shadow_refresh(const real *p, size_t n) {
    if (!g_cuda.shadow || !n) return;
    const real *lo = p > g_cuda.params ? p : g_cuda.params;
    const real *hi = p + n < g_cuda.params + g_cuda.nparams ? p + n : g_cuda.params + g_cuda.nparams;
    if (lo < hi) to_bf16(g_cuda.shadow + (lo - g_cuda.params), lo, (size_t)(hi - lo));
}

const bf16 *weights_bf16(const real *vals, size_t n) {
    if (g_cuda.shadow && in_params(vals) && in_params(vals + n - 1)) {
        const bf16 *w = g_cuda.shadow + (vals - g_cuda.params);
        if ((uintptr_t)w % 16 == 0) return w;
    }
    bf16 *tmp = (bf16 *)cuda_scratch(SCRATCH_WBF16, n * sizeof(bf16));
    to_bf16(tmp, vals, n);
    return tmp;
}

// want_shadow: the bf16 backend registers (and keeps a shadow); fp32 only records the range.
void register_params_cuda(real *params, size_t n, int want_shadow) {
    if (g_cuda.shadow) CUDA_CHECK(cudaFree(g_cuda.shadow));
    g_cuda.shadow = NULL;
    g_cuda.gen++;
    g_cuda.params = params;
    g_cuda.nparams = n;
    if (!want_shadow || !n) return;
    CUDA_CHECK(cudaMalloc(&g_cuda.shadow, n * sizeof(bf16)));
    shadow_refresh(params, n);
}
