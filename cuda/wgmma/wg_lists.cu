// wg_lists.cu: a wgmma step's lists and their deal (wg_lists.cuh).
#include <algorithm>
#include <vector>
#include "sparse/piece_plan.h"
#include "wgmma/wg_fwd.h"
#include "wgmma/wg_lists.cuh"

// A plan row an item, no list cut (piece_plan): each item costs its epilogue besides its
// stages, so that no CTA gathers many short items.
static void deal(const int *ptr, int nb, int nmt, int nctas, WgCosts c, std::vector<WgItem> &items, std::vector<int> &first) {
    long total = 0;
    for (int j = 0; j < nb; j++) total += (long)c.whole * (ptr[j + 1] - ptr[j]) * nmt;
    std::vector<WgItem> cand;
    std::vector<int> cost(1, 0);  // prefix sums: the plan's rows
    auto add = [&](WgItem it, int k) { cand.push_back(it), cost.push_back(cost.back() + c.epi + k); };
    for (int j = 0; j < nb; j++)
        for (int m = 0; m < nmt; m++) {
            const int n = ptr[j + 1] - ptr[j];
            if (2L * c.whole * n * nctas <= 3 * total) {
                add({j, m, -1}, c.whole * n);
            } else {
                add({j, m, 0}, c.half * n);
                add({j, m, 1}, c.half * n);
            }
        }
    int most = 1;
    for (size_t i = 1; i < cost.size(); i++) most = std::max(most, cost[i] - cost[i - 1]);
    PiecePlan plan;
    piece_plan(&plan, cost.data(), (int)cand.size(), most, nctas);
    items.clear();
    for (int i = 0; i < plan.npieces; i++) items.push_back(cand[plan.row[i]]);
    first.assign(plan.worker_ptr, plan.worker_ptr + nctas + 1);
    piece_plan_free(&plan);
}

template <typename T>
static const T *upload(const T *h, size_t n) {
    T *d;
    CUDA_CHECK(cudaMalloc(&d, sizeof(T) * std::max(n, (size_t)1)));
    if (n) CUDA_CHECK(cudaMemcpy(d, h, sizeof(T) * n, cudaMemcpyHostToDevice));
    return d;
}

bool wg_takes(int H, int B) { return wg_fwd_runs_here() && H % 32 == 0 && B % 128 == 0 && B > 0; }

WgLists wg_lists_make(const int *ptr, const int *idx, const int *blk, long gstride, int nb, int B, WgCosts c) {
    int dev, sms;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    std::vector<WgItem> items;
    std::vector<int> first;
    deal(ptr, nb, B / 128, sms, c, items, first);
    WgLists l;
    l.nb = nb, l.nctas = sms, l.nnz = ptr[nb], l.gstride = gstride;
    CUDA_CHECK(cudaMalloc(&l.wpk, (size_t)8192 * std::max(l.nnz, 1L)));
    l.ptr = upload(ptr, (size_t)nb + 1), l.idx = upload(idx, (size_t)l.nnz), l.blk = upload(blk, (size_t)l.nnz);
    l.items = upload(items.data(), items.size()), l.first = upload(first.data(), first.size());
    return l;
}

void wg_lists_free(WgLists *l) {
    const void *p[] = {l->ptr, l->idx, l->blk, l->items, l->first, l->wpk};
    for (const void *q : p) CUDA_CHECK(cudaFree((void *)q));
}
