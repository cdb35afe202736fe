// wg_lists.cu: a wgmma step's lists on the device (wg_lists.cuh).
#include <algorithm>
#include "wgmma/wg_fwd.h"
#include "wgmma/wg_lists.cuh"

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
