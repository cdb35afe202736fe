// softmax.cu: softmax cross-entropy (CPU twin: src/ops/softmax_cpu.c). logits[N,V], one warp per row.
// loss[n] = log sum_j exp(l_j - max) - (l_target - max); dlogits (may alias logits) =
// (softmax - onehot) * dscale, written after the row was read.
#include "ops/reduce.cuh"

__device__ inline float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__global__ void softmax_xent_kernel(real *loss, real *dlogits, const real *logits, const int *target, int N, int V,
                                    real dscale) {
    int n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (n >= N) return;  // whole warps leave together
    const real *l = logits + (long)n * V;
    int t = target[n];
    float lt = l[t];  // read before any lane writes dlogits over the row
    float mx = -INFINITY;
    for (int j = lane; j < V; j += 32) mx = fmaxf(mx, l[j]);
    mx = warp_max(mx);
    float sum = 0;
    for (int j = lane; j < V; j += 32) sum += expf(l[j] - mx);
    sum = warp_sum(sum);
    if (lane == 0) loss[n] = logf(sum) - (lt - mx);
    if (!dlogits) return;
    real *d = dlogits + (long)n * V;
    float inv = 1 / sum;
    for (int j = lane; j < V; j += 32) d[j] = (expf(l[j] - mx) * inv - (j == t)) * dscale;
}

void softmax_xent_cuda(real *loss, real *dlogits, const real *logits, const int *target, int N, int V, real dscale) {
    if (N <= 0) return;
    softmax_xent_kernel<<<cdiv(N, 8), 256, 0, g_cuda.stream>>>(loss, dlogits, logits, target, N, V, dscale);
    LAUNCH_CHECK();
}
