// acts.c: activation buffers of a training window and the carried (truncated-BPTT) state.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/mlstm.h"

static real *ralloc(const Backend *be, size_t n) { return be->alloc(n * sizeof(real)); }

// The backend's engine for layer l over these buffers (NULL: per-step ops); it sets the
// layer's z, act and dz.
static void *seq_for(const Model *m, Acts *a, int l) {
    if (!m->be->seq_create || !engine_wanted(&m->cfg)) return NULL;
    const Layer *L = &m->layer[l];
    real *P = m->params, *G = m->grads;
    SeqArgs s = {.B = a->B, .T = a->T, .H = m->H, .wh = &L->wh,
                 .wh_vals = P + L->off_wh, .bias = P + L->off_b, .ln_gain = m->ln ? P + L->off_g : NULL,
                 .dwh = G + L->off_wh, .dbias = G + L->off_b, .dln_gain = m->ln ? G + L->off_g : NULL,
                 .lnstat = a->lnstat[l], .h = a->h[l], .c = a->c[l], .dh = a->dh[l], .dc = a->dc[l],
                 .xtab = l ? NULL : a->xtab, .tok = a->tok, .wgmma = m->cfg.engine == ENGINE_WGMMA};
    void *seq = m->be->seq_create(&s);
    a->z[l] = s.z;
    a->act[l] = s.act;
    a->dz[l] = s.dz;
    return seq;
}

// The layer's z, act and dz: the engine's where it takes the layer, else buffers of its own.
static void layer_z(const Model *m, Acts *a, int l) {
    size_t N = (size_t)a->B * a->T, G = 4 * (size_t)m->H;
    a->seq[l] = seq_for(m, a, l);
    if (!a->seq[l]) a->z[l] = ralloc(m->be, N * G), a->act[l] = ralloc(m->be, N * G), a->dz[l] = ralloc(m->be, N * G);
}

static void layer_z_free(const Model *m, Acts *a, int l) {
    if (a->seq[l]) m->be->seq_free(a->seq[l]);
    else m->be->free(a->z[l]), m->be->free(a->act[l]), m->be->free(a->dz[l]);
}

// Layer 0's input is one of 256 byte embeddings, so its dense projection W_x Emb[tok] is a
// row of the table Emb W_x^T [256, 4H]: 256 rows of product a window instead of T*B (16384
// at B = T = 128), and the table's gradient is dz summed by byte (model_step.c). (Layer 0's
// W_x is always dense; the mlstm keeps its own table of the bytes' m and a, mlstm_step.c.)
int input_table(const Model *m) {
    return !m->mlstm;
}

// The mlstm runs per-step ops: its internal steps need whole-row layer norms between products.
// auto takes the engine in both precisions: it is the faster path in every shape measured
// (fp32 too since its dense path).
int engine_wanted(const Config *cfg) {
    return cfg->cell == CELL_LSTM && cfg->engine != ENGINE_STEPS;
}

// Each layer's recurrent path; layer 0 of either cell takes its input projections from a
// table of the bytes' rows.
Route acts_route(const Model *m, const Acts *a) {
    Route r = {.nlayers = m->L, .table = 1};
    for (int l = 0; l < m->L; l++)
        r.layer[l] = a->seq[l] ? m->be->seq_route(a->seq[l]) : m->mlstm && mlstm_replays(m) ? RECUR_REPLAY : RECUR_STEPS;
    return r;
}

Acts *acts_create(const Model *m, int B, int T) {
    const Backend *be = m->be;
    Acts *a = xcalloc(1, sizeof *a);
    size_t N = (size_t)B * T, H = (size_t)m->H, G = 4 * H;
    a->B = B;
    a->T = T;
    a->tok = be->alloc(N * sizeof(int));
    a->tgt = be->alloc(N * sizeof(int));
    if (input_table(m)) {  // the mlstm keeps its own (mlstm_step.c)
        a->xtab = ralloc(be, SW_VOCAB * G);
        a->dxtab = ralloc(be, SW_VOCAB * G);
        a->dembx = ralloc(be, SW_VOCAB * (size_t)m->E);
    }
    for (int l = 0; l < m->L; l++) {
        a->lnstat[l] = m->ln ? ralloc(be, N * 8) : NULL;
        a->h[l] = ralloc(be, (N + B) * H);
        a->c[l] = ralloc(be, (N + B) * H);
        a->dh[l] = ralloc(be, (N + B) * H);
        a->dc[l] = ralloc(be, (size_t)B * H);
        layer_z(m, a, l);
        a->ml[l] = m->mlstm ? mlstm_acts_create(m, l, B, T, 1) : NULL;
        if (m->mlstm && be->keep_lowp) {  // the mlstm's first internal step reads h, its gate product's backward dz
            be->keep_lowp(a->h[l], (N + B) * H);
            be->keep_lowp(a->dz[l], N * G);
        }
    }
    a->logits = ralloc(be, N * SW_VOCAB);
    a->loss = ralloc(be, N);
    a->loss_host = xcalloc(N, sizeof(real));
    return a;
}

void acts_free(const Model *m, Acts *a) {
    if (!a) return;
    const Backend *be = m->be;
    be->free(a->tok); be->free(a->tgt);
    be->free(a->xtab); be->free(a->dxtab); be->free(a->dembx);
    for (int l = 0; l < m->L; l++) {
        layer_z_free(m, a, l);
        if (a->lnstat[l]) be->free(a->lnstat[l]);
        be->free(a->h[l]); be->free(a->c[l]); be->free(a->dh[l]); be->free(a->dc[l]);
        mlstm_acts_free(m, a->ml[l]);
    }
    be->free(a->logits); be->free(a->loss);
    free(a->loss_host);
    free(a);
}

void acts_remask(const Model *old, const Model *m, Acts *a) {
    for (int l = 0; l < m->L; l++) {
        if (a->seq[l]) {  // the engine's lists are the old mask's
            layer_z_free(old, a, l);
            layer_z(m, a, l);
        }
        if (a->ml[l] && m->be->replay_forget) m->be->replay_forget(a->ml[l]);
    }
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
