// wg_lists.cu: a wgmma step's lists on the device, and the slabs it reads (wg_lists.cuh).
#include <algorithm>
#include "base/launch.cuh"
#include "wgmma/wg_fwd.h"
#include "wgmma/wg_lists.cuh"
#include "base/slab.cuh"

template <typename T>
static const T *upload(const T *h, size_t n) {
    T *d;
    CUDA_CHECK(cudaMalloc(&d, sizeof(T) * std::max(n, (size_t)1)));
    if (n) CUDA_CHECK(cudaMemcpy(d, h, sizeof(T) * n, cudaMemcpyHostToDevice));
    return d;
}

bool wg_takes(int H, int B) { return wg_fwd_runs_here() && H % 32 == 0 && B % 128 == 0 && B > 0; }

WgLists wg_lists_make(const int *ptr, const int *idx, const int *blk, long gstride, int nb, int B, WgCosts c) {
    const int sms = g_cuda.nsm;
    WgItem *items;
    int *first;
    const int n = item_deal(ptr, nb, B / 128, sms, c, &items, &first);
    WgLists l;
    l.nb = nb, l.nctas = sms, l.nnz = ptr[nb], l.gstride = gstride;
    CUDA_CHECK(cudaMalloc(&l.wpk, (size_t)8192 * std::max(l.nnz, 1L)));
    l.ptr = upload(ptr, (size_t)nb + 1), l.idx = upload(idx, (size_t)l.nnz), l.blk = upload(blk, (size_t)l.nnz);
    l.items = upload(items, (size_t)n), l.first = upload(first, (size_t)sms + 1);
    free(items), free(first);
    return l;
}

void wg_lists_free(WgLists *l) {
    const void *p[] = {l->ptr, l->idx, l->blk, l->items, l->first, l->wpk};
    for (const void *q : p) CUDA_CHECK(cudaFree((void *)q));
}

// A thread a 16-byte run (the swizzle moves whole runs); launched programmatically dependent,
// so that it waits for the op that wrote x.
__global__ void pack_slabs_kernel(unsigned char *pk, const bf16 *x, int N, int K, int ntiles) {
    pdl_enter();
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= (long)ntiles * SLAB_ROWS * (K / 8)) return;
    const int row = (int)(i / (K / 8)), col = (int)(i % (K / 8)) * 8;
    const uint4 v = row < N ? *(const uint4 *)(x + (long)row * K + col) : make_uint4(0, 0, 0, 0);
    *(uint4 *)(pk + slab_at(row, col, ntiles)) = v;
}

void wg_pack_slabs(void *pk, const bf16 *x, int N, int K, void *stream) {
    const int ntiles = (N + SLAB_ROWS - 1) / SLAB_ROWS;
    const long n = (long)ntiles * SLAB_ROWS * (K / 8);
    launch_attr(attr_pdl(true), pack_slabs_kernel, dim3((unsigned)((n + 255) / 256)), 256, 0, wg_stream(stream),
                (unsigned char *)pk, x, N, K, ntiles);
}
