// model_step.c: forward and backward over a training window (T steps of B streams).
// The input projection of a whole window is one product over N = T*B rows; only the
// recurrent product runs step by step: in the backend's engine where it has one (a->seq,
// the whole window in a few launches), else here with per-step ops (the reference).
// Weight gradients are summed over the window in one call.
#include "model/mlstm.h"

#define P(off) (m->params + (off))
#define GR(off) (m->grads + (off))

void input_table_fwd(const Model *m, real *xtab) {
    m->be->matmul_fwd(xtab, P(m->off_emb), P(m->layer[0].off_wx), NULL, SW_VOCAB, m->E, 4 * m->H, 0);
}

// z = the layer's input projection, or with input_table its table (layer 0), which the
// engine reads itself and the per-step ops gather into z.
static void input_fwd(Model *m, Acts *a, int l, const real *x, int N) {
    const Layer *L = &m->layer[l];
    real *z = a->z[l];
    if (!l) {
        input_table_fwd(m, a->xtab);
        if (!a->seq[l]) m->be->embed_fwd(z, a->xtab, a->tok, N, 4 * m->H);
    } else if (L->sparse_x) {
        m->be->bsmm_fwd(z, x, &L->wx, P(L->off_wx), N, 0);
    } else {
        m->be->matmul_fwd(z, x, P(L->off_wx), NULL, N, L->in, 4 * m->H, 0);
    }
}

// The backward of input_fwd's table: its gradient is dz summed by byte; from it W_x's
// (dtab^T Emb) and Emb's (dtab W_x, added in).
static void input_table_bwd(Model *m, Acts *a, int N) {
    const Backend *be = m->be;
    const Layer *L = &m->layer[0];
    const size_t G = 4 * (size_t)m->H;
    be->zero(a->dxtab, SW_VOCAB * G * sizeof(real));
    be->embed_bwd(a->dxtab, a->dz[0], a->tok, N, (int)G);
    be->matmul_bwd(a->dembx, GR(L->off_wx), NULL, a->dxtab, P(m->off_emb), P(L->off_wx), SW_VOCAB, m->E, (int)G);
    be->axpy(GR(m->off_emb), a->dembx, 1, SW_VOCAB * (size_t)m->E);
}

static void layer_forward(Model *m, Acts *a, int l, const real *x, int T) {
    if (m->mlstm) {
        mlstm_layer_forward(m, a, l, x, T);
        return;
    }
    const Backend *be = m->be;
    const Layer *L = &m->layer[l];
    size_t B = (size_t)a->B, H = (size_t)m->H, G = 4 * H;
    input_fwd(m, a, l, x, (int)(T * B));
    if (a->seq[l]) {
        be->seq_fwd(a->seq[l], T);
        return;
    }
    for (size_t t = 0; t < (size_t)T; t++) {
        real *z = a->z[l] + t * B * G;
        be->bsmm_fwd(z, a->h[l] + t * B * H, &L->wh, P(L->off_wh), (int)B, 1);
        be->lstm_fwd(a->h[l] + (t + 1) * B * H, a->c[l] + (t + 1) * B * H, a->act[l] + t * B * G,
                     m->ln ? a->lnstat[l] + t * B * 8 : NULL, z, a->c[l] + t * B * H,
                     P(L->off_b), m->ln ? P(L->off_g) : NULL, (int)B, (int)H);
    }
}

double model_forward(Model *m, Acts *a, const int *tok, const int *tgt, int T) {
    const Backend *be = m->be;
    size_t B = (size_t)a->B, H = (size_t)m->H, N = (size_t)T * B;
    if (T < 1 || T > a->T) die("internal: window of %d steps, buffers hold %d", T, a->T);
    a->T_run = T;
    be->to_device(a->tok, tok, N * sizeof(int));
    be->to_device(a->tgt, tgt, N * sizeof(int));
    const real *x = NULL;  // layer 0 reads the bytes (a->tok)
    for (int l = 0; l < m->L; l++) {
        layer_forward(m, a, l, x, T);
        x = a->h[l] + B * H;
    }
    be->matmul_fwd(a->logits, x, P(m->off_wo), P(m->off_bo), (int)N, (int)H, SW_VOCAB, 0);
    // The loss gradient is produced here already (in place of the logits): it is cheap and
    // saves a second pass over the logits in model_backward.
    be->softmax_xent(a->loss, a->logits, a->logits, a->tgt, (int)N, SW_VOCAB, (real)(1.0 / (double)N));
    be->to_host(a->loss_host, a->loss, N * sizeof(real));
    double sum = 0;
    for (size_t i = 0; i < N; i++) sum += a->loss_host[i];
    return sum / (double)N;
}

// The reference recurrent backward: per step the cell's gradient, then dh_t += dz_t W_h;
// dW_h over the whole window in one call.
static void recurrent_backward(Model *m, Acts *a, int l, int T) {
    const Backend *be = m->be;
    const Layer *L = &m->layer[l];
    size_t B = (size_t)a->B, H = (size_t)m->H, G = 4 * H, N = (size_t)T * B;
    be->zero(a->dh[l], B * H * sizeof(real));
    be->zero(a->dc[l], B * H * sizeof(real));
    for (size_t t = (size_t)T; t-- > 0;) {
        real *dz = a->dz[l] + t * B * G;
        be->lstm_bwd(dz, a->dc[l], GR(L->off_b), m->ln ? GR(L->off_g) : NULL, a->dh[l] + (t + 1) * B * H,
                     a->dc[l], a->act[l] + t * B * G, a->c[l] + (t + 1) * B * H, a->c[l] + t * B * H,
                     a->z[l] + t * B * G, m->ln ? a->lnstat[l] + t * B * 8 : NULL,
                     m->ln ? P(L->off_g) : NULL, (int)B, (int)H);
        be->bsmm_bwd_data(a->dh[l] + t * B * H, dz, &L->wh, P(L->off_wh), (int)B, 1);
    }
    be->bsmm_bwd_weight(GR(L->off_wh), a->dz[l], a->h[l], &L->wh, (int)N);
}

static void layer_backward(Model *m, Acts *a, int l, int T) {
    if (m->mlstm) {
        mlstm_layer_backward(m, a, l, T);
        return;
    }
    const Backend *be = m->be;
    const Layer *L = &m->layer[l];
    size_t B = (size_t)a->B, H = (size_t)m->H, G = 4 * H, N = (size_t)T * B;
    if (a->seq[l]) be->seq_bwd(a->seq[l], T);
    else recurrent_backward(m, a, l, T);
    if (!l) {
        input_table_bwd(m, a, (int)N);
        return;
    }
    const real *x = a->h[l - 1] + B * H;
    real *dx = a->dh[l - 1] + B * H;
    if (L->sparse_x) {
        be->bsmm_bwd_weight(GR(L->off_wx), a->dz[l], x, &L->wx, (int)N);
        be->bsmm_bwd_data(dx, a->dz[l], &L->wx, P(L->off_wx), (int)N, 0);
    } else {
        be->matmul_bwd(dx, GR(L->off_wx), NULL, a->dz[l], x, P(L->off_wx), (int)N, L->in, (int)G);
    }
}

static void ready(const Model *m, size_t off) {
    if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, off);
}

void model_backward(Model *m, Acts *a, int T) {
    const Backend *be = m->be;
    size_t B = (size_t)a->B, H = (size_t)m->H, N = (size_t)T * B;
    const real *htop = a->h[m->L - 1] + B * H;
    be->matmul_bwd(a->dh[m->L - 1] + B * H, GR(m->off_wo), GR(m->off_bo), a->logits, htop,
                   P(m->off_wo), (int)N, (int)H, SW_VOCAB);
    ready(m, m->off_wo);
    for (int l = m->L - 1; l >= 0; l--) {
        layer_backward(m, a, l, T);
        ready(m, m->layer[l].off_wx);
    }
    ready(m, 0);
}
