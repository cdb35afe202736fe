// acts.c: activation buffers of a training window and the carried (truncated-BPTT) state.
#include <stdlib.h>
#include <string.h>
#include "mlstm.h"

static real *ralloc(const Backend *be, size_t n) { return be->alloc(n * sizeof(real)); }

Acts *acts_create(const Model *m, int B, int T) {
    const Backend *be = m->be;
    Acts *a = xcalloc(1, sizeof *a);
    size_t N = (size_t)B * T, H = (size_t)m->H, G = 4 * H;
    a->B = B;
    a->T = T;
    a->tok = be->alloc(N * sizeof(int));
    a->tgt = be->alloc(N * sizeof(int));
    a->x0 = ralloc(be, N * m->E);
    a->dx0 = ralloc(be, N * m->E);
    for (int l = 0; l < m->L; l++) {
        a->z[l] = ralloc(be, N * G);
        a->dz[l] = ralloc(be, N * G);
        a->act[l] = ralloc(be, N * G);
        a->lnstat[l] = m->ln ? ralloc(be, N * 8) : NULL;
        a->h[l] = ralloc(be, (N + B) * H);
        a->c[l] = ralloc(be, (N + B) * H);
        a->dh[l] = ralloc(be, (N + B) * H);
        a->dc[l] = ralloc(be, (size_t)B * H);
        a->ml[l] = m->mlstm ? mlstm_acts_create(m, l, B, T, 1) : NULL;
    }
    a->logits = ralloc(be, N * SW_VOCAB);
    a->loss = ralloc(be, N);
    a->loss_host = xcalloc(N, sizeof(real));
    return a;
}

void acts_free(const Model *m, Acts *a) {
    if (!a) return;
    const Backend *be = m->be;
    be->free(a->tok); be->free(a->tgt); be->free(a->x0); be->free(a->dx0);
    for (int l = 0; l < m->L; l++) {
        be->free(a->z[l]); be->free(a->dz[l]); be->free(a->act[l]);
        if (a->lnstat[l]) be->free(a->lnstat[l]);
        be->free(a->h[l]); be->free(a->c[l]); be->free(a->dh[l]); be->free(a->dc[l]);
        mlstm_acts_free(m, a->ml[l]);
    }
    be->free(a->logits); be->free(a->loss);
    free(a->loss_host);
    free(a);
}

void acts_reset_state(const Model *m, Acts *a) {
    size_t bytes = (size_t)a->B * m->H * sizeof(real);
    for (int l = 0; l < m->L; l++) {
        m->be->zero(a->h[l], bytes);
        m->be->zero(a->c[l], bytes);
    }
}

void acts_carry_state(const Model *m, Acts *a) {
    size_t blk = (size_t)a->B * m->H, bytes = blk * sizeof(real);
    for (int l = 0; l < m->L; l++) {
        m->be->copy(a->h[l], a->h[l] + (size_t)a->T_run * blk, bytes);
        m->be->copy(a->c[l], a->c[l] + (size_t)a->T_run * blk, bytes);
    }
}
