// wg_lists.cuh: the lists a wgmma step walks (wg_fwd.cu: W_h's block rows, wg_bwd.cu: its
// block columns) on the device, cut into items of one list and 128 batch rows (or half of
// them) and dealt to one persistent CTA an SM, with each entry's weights packed as the step
// reads them, and the activations packed into the slabs the steps and wg_mm.cu read (wg_lists.cu).
#pragma once
#include "base/state.cuh"
#include "sparse/item_deal.h"

// An item (sparse/item_deal.h): list j over 128-row tile m, whole or its half `half` (the
// forward: 16 of the 32 units; the backward: 64 of the 128 rows); what the deal weighs.
typedef DealItem WgItem;
typedef DealCosts WgCosts;

struct WgLists {
    const int *ptr, *idx;  // list j's entries ptr[j] .. ptr[j + 1] - 1, entry p's slab idx[p]
    const int *blk;        // entry p's gate-0 block of W_h; gate g's is blk[p] + g * gstride
    const WgItem *items;   // CTA c's items[first[c] .. first[c + 1]), in its order
    const int *first;
    bf16 *wpk;             // entry p's four gate blocks as the step's B operand, 8 KB each
    long nnz, gstride;
    int nb, nctas;
};

// From host arrays: nb lists, B rows, their items dealt to one CTA an SM (item_deal).
WgLists wg_lists_make(const int *ptr, const int *idx, const int *blk, long gstride, int nb, int B, WgCosts c);
void wg_lists_free(WgLists *l);
// The steps run H = 32 nb units and B rows (B a multiple of 128) on an sm_90 GPU.
bool wg_takes(int H, int B);

inline cudaStream_t wg_stream(void *stream) { return stream ? (cudaStream_t)stream : g_cuda.stream; }

// x [N, K], row-major bf16, as the steps' and wg_mm.cu's 8 KB slabs (base/slab.cuh), rows
// past N zero; pk holds cdiv(N, 128) * 128 * K bf16.
void wg_pack_slabs(void *pk, const bf16 *x, int N, int K, void *stream);

// Packs the weights w (bf16 blocks) into l.wpk by pack(wpk, w, blk, gstride, nnz), a thread
// for each pair of an entry's 4 x 32 x 32 elements.
template <typename Pack>
void wg_lists_pack(const WgLists &l, Pack pack, const void *w, void *stream) {
    const long n = l.nnz * 4 * 32 * 16;
    if (n == 0) return;
    pack<<<(unsigned)((n + 255) / 256), 256, 0, wg_stream(stream)>>>(l.wpk, (const bf16 *)w, l.blk, l.gstride, l.nnz);
    LAUNCH_CHECK();
}

// A step's host object: Args a, the kernel's argument, holding the lists as a.l and the
// step's operands as a.s. Made where the steps run the shape (else NULL), launched one CTA
// an SM of 640 threads, freed with its lists.
template <typename Step, typename Kernel>
Step *wg_step_make(const int *ptr, const int *idx, const int *blk, long gstride, int H, int B, WgCosts c, Kernel k, size_t smem) {
    if (!wg_takes(H, B)) return NULL;
    Step *s = (Step *)xcalloc(1, sizeof(Step));
    s->a.l = wg_lists_make(ptr, idx, blk, gstride, H / 32, B, c);
    s->a.B = B, s->a.H = H;
    allow_smem(k, smem);
    return s;
}

template <typename Step, typename Kernel, typename Ops>
void wg_step_launch(const Step *st, Kernel k, const Ops &ops, size_t smem, void *stream) {
    auto a = st->a;
    a.s = ops;
    k<<<a.l.nctas, 640, smem, wg_stream(stream)>>>(a);
    LAUNCH_CHECK();
}

template <typename Step>
void wg_step_free(Step *s) {
    if (!s) return;
    wg_lists_free(&s->a.l);
    free(s);
}
