// reduce.cuh: warp and block sums in a fixed order (butterfly, then warps in order), so a
// reduction gives the same bits every run.
#pragma once
#include "common.cuh"

template <typename F>
__device__ inline F warp_sum(F v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// `buf` is shared scratch of 32 elements; the call ends with a barrier so it can be reused.
template <typename F>
__device__ inline F block_sum(F v, F *buf) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    F s = 0;
    for (int w = 0; w < nw; w++) s += buf[w];
    __syncthreads();
    return s;
}
