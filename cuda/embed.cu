// embed.cu: token embedding (CPU twin: src/embed_cpu.c); table is [256, E].
//   fwd  out[N,E] = table[tok[n], :]
//   bwd  dtable[tok[n], :] += dout[n, :], in n order within slices of tokens, then slice by slice
#include "common.cuh"

__global__ void embed_fwd_kernel(real *out, const real *table, const int *tok, long N, int E) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N * E; i += (long)gridDim.x * blockDim.x)
        out[i] = table[(long)tok[i / E] * E + i % E];
}

void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E) {
    if (N <= 0) return;
    embed_fwd_kernel<<<grid_for((size_t)N * E, 256), 256, 0, g_cuda.stream>>>(out, table, tok, N, E);
    LAUNCH_CHECK();
}

// One CTA per (vocabulary row v, 128 columns, slice of SW_EMBED_SLICE tokens). Each pass takes
// 128 tokens, lists the positions holding v in order (ballots), and adds those rows: no
// atomics. The slices' sums are then added in slice order (embed_sum_kernel): one fixed
// order, and 64x the CTAs of a scan over all N tokens (which took 0.35 ms at N = 16384).
__global__ void embed_bwd_kernel(real *part, const real *dout, const int *tok, int N, int E) {
    __shared__ int list[128], wcount[4];
    const int v = blockIdx.x, e = blockIdx.y * 128 + threadIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int beg = blockIdx.z * SW_EMBED_SLICE, end = min(N, beg + SW_EMBED_SLICE);
    float acc = 0.f;
    for (int n0 = beg; n0 < end; n0 += 128) {
        int n = n0 + threadIdx.x, hit = n < end && tok[n] == v;
        unsigned bal = __ballot_sync(0xffffffffu, hit);
        if (lane == 0) wcount[warp] = __popc(bal);
        __syncthreads();
        int off = 0, total = 0;
        for (int w = 0; w < 4; w++) {
            off += w < warp ? wcount[w] : 0;
            total += wcount[w];
        }
        if (hit) list[off + __popc(bal & ((1u << lane) - 1))] = n;
        __syncthreads();
        if (e < E)
            for (int i = 0; i < total; i++) acc += dout[(long)list[i] * E + e];
        __syncthreads();
    }
    if (e < E) part[((long)blockIdx.z * SW_VOCAB + v) * E + e] = acc;
}

// dtable[i] += the slices' sums of element i, in slice order.
__global__ void embed_sum_kernel(real *dtable, const real *part, int slices, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float s = dtable[i];
        for (int z = 0; z < slices; z++) s += part[z * n + i];
        dtable[i] = s;
    }
}

void embed_bwd_cuda(real *dtable, const real *dout, const int *tok, int N, int E) {
    if (N <= 0) return;
    const int slices = cdiv(N, SW_EMBED_SLICE);
    const long n = (long)SW_VOCAB * E;
    real *part = (real *)cuda_scratch(SCRATCH_EMBED, sizeof(real) * (size_t)slices * n);
    embed_bwd_kernel<<<dim3(SW_VOCAB, cdiv(E, 128), slices), 128, 0, g_cuda.stream>>>(part, dout, tok, N, E);
    LAUNCH_CHECK();
    embed_sum_kernel<<<grid_for((size_t)n, 256), 256, 0, g_cuda.stream>>>(dtable, part, slices, n);
    LAUNCH_CHECK();
}
