// remask.c: a model's weights moved onto other masks (remask.h).
#include "model/remask.h"
#include <stdlib.h>

// The block-sparse matrix whose values start at offset off of m's parameters, or NULL.
static const BsMat *bsmat_at(const Model *m, size_t off) {
    for (int l = 0; l < m->L; l++)
        for (int k = 0; k < 2 + m->D; k++) {
            const BsMat *w;
            size_t o;
            if (model_layer_mask(m, l, k, &w, &o) && o == off) return w;
        }
    return NULL;
}

// Block (br, c) of w's CSR layout, or -1 if absent.
static int find_block(const BsMat *w, int br, int c) {
    for (int q = w->row_ptr[br]; q < w->row_ptr[br + 1]; q++)
        if (w->col_idx[q] == c) return q;
    return -1;
}

// dst (to's layout) from src (from's) through be: whole tensors copied, block-sparse ones
// gathered block by block (blocks new in `to` zero).
static void remap_on(const Backend *be, const Model *from, const real *src, const Model *to, real *dst) {
    for (int t = 0; t < to->ntensor; t++) {
        const ParamTensor *a = model_tensor(from, to->tensor[t].name), *b = &to->tensor[t];
        const BsMat *wa = bsmat_at(from, a->off), *wb = bsmat_at(to, b->off);
        if (!wb) {
            be->copy(dst + b->off, src + a->off, sizeof(real) * b->n);
            continue;
        }
        int *idx = xmalloc(sizeof(int) * ((size_t)wb->nnzb + 1)), *dev = be->alloc(sizeof(int) * ((size_t)wb->nnzb + 1));
        for (int br = 0; br < wb->nbr; br++)
            for (int q = wb->row_ptr[br]; q < wb->row_ptr[br + 1]; q++) idx[q] = find_block(wa, br, wb->col_idx[q]);
        be->to_device(dev, idx, sizeof(int) * (size_t)wb->nnzb);
        be->gather_blocks(dst + b->off, src + a->off, dev, wb->nnzb, wb->bs * wb->bs);
        be->free(dev);
        free(idx);
    }
}

void model_remap(const Model *from, const real *src, const Model *to, real *dst) { remap_on(backend_cpu(), from, src, to, dst); }

void model_remap_backend(const Model *from, const real *src, const Model *to, real *dst) { remap_on(to->be, from, src, to, dst); }

Model *model_remask(const Model *m, const Mask *masks) {
    Model *to = model_create_blank(&m->cfg, m->be, masks);
    model_remap_backend(m, m->params, to, to->params);
    if (m->ema) model_remap_backend(m, m->ema, to, to->ema);
    return to;
}
