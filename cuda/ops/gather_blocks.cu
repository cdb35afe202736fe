// gather_blocks.cu: blocks of weights moved onto other masks on the device, so that a mask
// update sends no buffer it moves (weights, average, both moments) to the host and back (CPU
// twin: src/ops/gather_blocks_cpu.c).
#include "ops/ops.cuh"

__global__ void gather_blocks_kernel(real *dst, const real *src, const int *from, int n, int bb) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)n * bb; i += (long)gridDim.x * blockDim.x) {
        int f = from[i / bb];
        dst[i] = f < 0 ? 0.f : src[(long)f * bb + i % bb];
    }
}

void gather_blocks_cuda(real *dst, const real *src, const int *from, int n, int bb) {
    if (n <= 0) return;
    gather_blocks_kernel<<<grid_for((size_t)n * bb, 256), 256, 0, g_cuda.stream>>>(dst, src, from, n, bb);
    LAUNCH_CHECK();
    shadow_refresh(dst, (size_t)n * bb);
    twin_refresh(dst, (size_t)n * bb);
}
