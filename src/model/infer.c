// infer.c: step-by-step inference for sampling and feature extraction. Rows are streams;
// a step on the first n rows leaves the others untouched, so sorted documents of different
// lengths share a batch without padding ever changing a state.
#include <stdlib.h>
#include <string.h>
#include "model/mlstm.h"

#define P(off) (m->params + (off))

Infer *infer_create(const Model *m, int maxB, int track_mean) {
    const Backend *be = m->be;
    Infer *s = xcalloc(1, sizeof *s);
    size_t B = (size_t)maxB, H = (size_t)m->H;
    s->maxB = maxB;
    s->track_mean = track_mean;
    s->tok = be->alloc(B * sizeof(int));
    if (input_table(m)) {  // a row gather per step in place of a product
        s->xtab = be->alloc(SW_VOCAB * 4 * H * sizeof(real));
        input_table_fwd(m, s->xtab);
    } else {
        s->x0 = be->alloc(B * m->E * sizeof(real));
    }
    s->z = be->alloc(B * 4 * H * sizeof(real));
    s->act = be->alloc(B * 4 * H * sizeof(real));
    s->lnstat = be->alloc(B * 8 * sizeof(real));
    s->logits = be->alloc(B * SW_VOCAB * sizeof(real));
    s->c_prev = be->alloc(B * H * sizeof(real));
    for (int l = 0; l < m->L; l++) {
        s->h[l] = be->alloc(B * H * sizeof(real));
        s->c[l] = be->alloc(B * H * sizeof(real));
        s->hsum[l] = track_mean ? be->alloc(B * H * sizeof(real)) : NULL;
    }
    s->ml = m->mlstm ? mlstm_acts_create(m, -1, maxB, 1, 0) : NULL;
    return s;
}

void infer_free(const Model *m, Infer *s) {
    if (!s) return;
    const Backend *be = m->be;
    be->free(s->tok); be->free(s->x0); be->free(s->xtab); be->free(s->z); be->free(s->act);
    be->free(s->lnstat); be->free(s->logits); be->free(s->c_prev);
    for (int l = 0; l < m->L; l++) {
        be->free(s->h[l]); be->free(s->c[l]);
        if (s->hsum[l]) be->free(s->hsum[l]);
    }
    mlstm_acts_free(m, s->ml);
    free(s);
}

void infer_reset(const Model *m, Infer *s) {
    size_t bytes = (size_t)s->maxB * m->H * sizeof(real);
    for (int l = 0; l < m->L; l++) {
        m->be->zero(s->h[l], bytes);
        m->be->zero(s->c[l], bytes);
        if (s->hsum[l]) m->be->zero(s->hsum[l], bytes);
    }
}

void infer_step(Model *m, Infer *s, const int *tok, int n, float *logits_out) {
    const Backend *be = m->be;
    size_t H = (size_t)m->H, G = 4 * H;
    if (n < 1 || n > s->maxB) die("internal: infer_step on %d rows of %d", n, s->maxB);
    be->to_device(s->tok, tok, (size_t)n * sizeof(int));
    if (!s->xtab) be->embed_fwd(s->x0, P(m->off_emb), s->tok, n, m->E);
    const real *x = s->x0;
    for (int l = 0; l < m->L; l++) {
        const Layer *L = &m->layer[l];
        be->copy(s->c_prev, s->c[l], (size_t)n * H * sizeof(real));
        if (m->mlstm) mlstm_infer_layer(m, s, l, x, n);
        else {
            if (!l && s->xtab) be->embed_fwd(s->z, s->xtab, s->tok, n, (int)G);
            else if (L->sparse_x) be->bsmm_fwd(s->z, x, &L->wx, P(L->off_wx), n, 0);
            else be->matmul_fwd(s->z, x, P(L->off_wx), NULL, n, L->in, (int)G, 0);
            be->bsmm_fwd(s->z, s->h[l], &L->wh, P(L->off_wh), n, 1);
            be->lstm_fwd(s->h[l], s->c[l], s->act, m->ln ? s->lnstat : NULL, s->z, s->c_prev,
                         P(L->off_b), m->ln ? P(L->off_g) : NULL, n, (int)H);
        }
        if (s->track_mean) be->axpy(s->hsum[l], s->h[l], 1, (size_t)n * H);
        x = s->h[l];
    }
    if (!logits_out) return;
    be->matmul_fwd(s->logits, x, P(m->off_wo), P(m->off_bo), n, (int)H, SW_VOCAB, 0);
    real *tmp = xmalloc((size_t)n * SW_VOCAB * sizeof(real));
    be->to_host(tmp, s->logits, (size_t)n * SW_VOCAB * sizeof(real));
    for (size_t i = 0; i < (size_t)n * SW_VOCAB; i++) logits_out[i] = (float)tmp[i];
    free(tmp);
}

void infer_get(const Model *m, const Infer *s, int l, char which, int n, float *out) {
    const real *src = which == 'h' ? s->h[l] : which == 'c' ? s->c[l] : s->hsum[l];
    if (l < 0 || l >= m->L || !src) die("internal: infer_get layer %d state '%c'", l, which);
    size_t cnt = (size_t)n * m->H;
    real *tmp = xmalloc(cnt * sizeof(real));
    m->be->to_host(tmp, src, cnt * sizeof(real));
    for (size_t i = 0; i < cnt; i++) out[i] = (float)tmp[i];
    free(tmp);
}
