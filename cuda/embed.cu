// embed.cu: token embedding (CPU twin: src/embed_cpu.c); table is [256, E].
//   fwd  out[N,E] = table[tok[n], :]
//   bwd  dtable[tok[n], :] += dout[n, :], each row's adds in n order (as the CPU does)
#include "common.cuh"

__global__ void embed_fwd_kernel(real *out, const real *table, const int *tok, long N, int E) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N * E; i += (long)gridDim.x * blockDim.x)
        out[i] = table[(long)tok[i / E] * E + i % E];
}

void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E) {
    if (N <= 0) return;
    embed_fwd_kernel<<<grid_for((size_t)N * E, 256), 256>>>(out, table, tok, N, E);
    LAUNCH_CHECK();
}

// One CTA per (vocabulary row v, 128 columns). Each pass takes 128 tokens, lists the
// positions holding v in order (ballots), and adds those rows: no atomics, CPU order.
__global__ void embed_bwd_kernel(real *dtable, const real *dout, const int *tok, int N, int E) {
    __shared__ int list[128], wcount[4];
    const int v = blockIdx.x, e = blockIdx.y * 128 + threadIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float acc = e < E ? dtable[(long)v * E + e] : 0.f;
    for (int n0 = 0; n0 < N; n0 += 128) {
        int n = n0 + threadIdx.x, hit = n < N && tok[n] == v;
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
    if (e < E) dtable[(long)v * E + e] = acc;
}

void embed_bwd_cuda(real *dtable, const real *dout, const int *tok, int N, int E) {
    if (N <= 0) return;
    embed_bwd_kernel<<<dim3(SW_VOCAB, cdiv(E, 128)), 128>>>(dtable, dout, tok, N, E);
    LAUNCH_CHECK();
}
