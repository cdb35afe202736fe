// twins_stale.cu: the GPU tests' check of the bf16 twins (twins_stale.h), over the table of
// cuda/base/twins.cuh.
#include "base/launch.cuh"
#include "base/twins.cuh"
#include "twins_stale.h"

__global__ void count_stale_kernel(unsigned long long *stale, const bf16 *b, const real *f, size_t n) {
    unsigned long long k = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        bf16 r = __float2bfloat16_rn(f[i]);
        k += *(const unsigned short *)&b[i] != *(const unsigned short *)&r;
    }
    if (k) atomicAdd(stale, k);
}

// The same of a twin's slab image: element (r, c) of its rows x cols at img_of, rounded.
__global__ void count_stale_img_kernel(unsigned long long *stale, const unsigned char *img, const real *f, int rows, int cols) {
    unsigned long long k = 0;
    const size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        bf16 r = __float2bfloat16_rn(f[i]);
        k += *(const unsigned short *)(img + slab_at((long)(i / cols), (int)(i % cols), rows / SLAB_ROWS)) !=
             *(const unsigned short *)&r;
    }
    if (k) atomicAdd(stale, k);
}

extern "C" size_t twins_stale(void) {
    unsigned long long *d = NULL, h = 0;
    CUDA_CHECK(cudaMalloc(&d, sizeof h));
    CUDA_CHECK(cudaMemset(d, 0, sizeof h));
    for (int i = 0; i < TWINS_MAX; i++)
        if (twins[i].f && twins[i].owned)
            count_stale_kernel<<<grid_for(twins[i].n, 256), 256>>>(d, twins[i].b, twins[i].f, twins[i].n);
    for (int i = 0; i < TWINS_MAX; i++)
        if (twins[i].f && twins[i].img_of)
            count_stale_img_kernel<<<grid_for((size_t)twins[i].img_rows * twins[i].img_cols, 256), 256>>>(
                d, twins[i].img, twins[i].img_of, twins[i].img_rows, twins[i].img_cols);
    CUDA_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d));
    return (size_t)h;
}
