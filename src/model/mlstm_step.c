// mlstm_step.c: forward and backward of the deep-update mLSTM layer (mlstm.h) over a window,
// and its inference step. As for the LSTM layer, the input projections of a whole window are
// one product each, the internal steps and gates run step by step, and weight gradients are
// summed over the window in one call per matrix. Layer 0's input is one of 256 byte
// embeddings, so its m and a (LayerNorm(W Emb[v]), a function of the byte v alone) come from a
// table of the 256 bytes' rows, built once a window and gathered; their gradients are summed
// by byte before the table's backward (a layer norm's backward is linear in its upstream
// gradient), so no pass over [T*B, H] runs through the projections or their norms.
#include <stdlib.h>
#include <string.h>
#include "model/mlstm.h"

#define P(off) (m->params + (off))
#define GR(off) (m->grads + (off))

// Row-major [rows, H] buffers; "per step" ones hold every step of the window (row t*B + b).
struct MlstmActs {
    size_t N;                         // rows of the window
    size_t xrows;                     // rows of each plane of xpre and xstat: N, or 256 (bytes)
    real *xpre, *xstat;               // m then a before their norms [2][xrows][H], (mean, rstd) [2][xrows][2]
    real *xn;                         // m then a, normed, per step: [2][N][H]
    real *tab;                        // bytes: m and a of each byte, [2][256][H]
    real *spre[SW_MAX_DEPTH];         // W_hj times the step's input, per step
    real *sstat[SW_MAX_DEPTH];        // its norm's (mean, rstd), [N][2]
    real *s0;                         // lin_h0 output (before * m), per step
    real *u[SW_MAX_DEPTH];            // internal step outputs, per step
    // training only
    real *dx;                         // [2][N][H]: gradients at m, a, then at their pre-norm values
    real *ds[SW_MAX_DEPTH];           // gradients at spre, per step
    real *dact[SW_MAX_DEPTH];         // gradients at the norms' outputs, per step (j = 1: dx's a plane)
    real *du;                         // [B][H] gradient at the current internal output
    real *dxin;                       // [xrows][in]: the input gradient through W_a
    real *dtab, *demb;                // bytes: gradients at tab's rows [2][256][H] and at Emb [256][E]
};

static real *ralloc(const Model *m, size_t n) { return m->be->alloc(n * sizeof(real)); }

// l = -1: buffers that suit every layer (inference shares one set).
MlstmActs *mlstm_acts_create(const Model *m, int l, int B, int T, int for_training) {
    MlstmActs *ml = xcalloc(1, sizeof *ml);
    size_t N = (size_t)B * T, H = (size_t)m->H;
    ml->N = N;
    ml->xrows = l == 0 ? SW_VOCAB : N;
    ml->xpre = ralloc(m, 2 * ml->xrows * H);
    ml->xn = ralloc(m, 2 * N * H);
    ml->xstat = ralloc(m, 4 * ml->xrows);
    if (l == 0) ml->tab = ralloc(m, 2 * SW_VOCAB * H);
    ml->s0 = ralloc(m, N * H);
    for (int j = 0; j < m->D; j++) {
        ml->spre[j] = ralloc(m, N * H);
        ml->sstat[j] = ralloc(m, 2 * N);
        ml->u[j] = ralloc(m, N * H);
        if (for_training) ml->ds[j] = ralloc(m, N * H);
        if (for_training && j != 1) ml->dact[j] = ralloc(m, N * H);
        if (for_training && m->be->keep_lowp) {  // inputs of the step's products, each read every step
            m->be->keep_lowp(ml->u[j], N * H);
            m->be->keep_lowp(ml->ds[j], N * H);
        }
    }
    if (for_training) {
        ml->dx = ralloc(m, 2 * N * H);
        ml->du = ralloc(m, (size_t)B * H);
        ml->dxin = ralloc(m, ml->xrows * m->layer[l].in);
        if (l == 0) ml->dtab = ralloc(m, 2 * SW_VOCAB * H), ml->demb = ralloc(m, SW_VOCAB * (size_t)m->E);
    }
    return ml;
}

void mlstm_acts_free(const Model *m, MlstmActs *ml) {
    if (!ml) return;
    if (m->be->replay_forget) m->be->replay_forget(ml);
    real *all[] = {ml->xpre, ml->xn, ml->xstat, ml->tab, ml->s0, ml->dx, ml->du, ml->dxin, ml->dtab, ml->demb};
    for (int i = 0; i < 10; i++)
        if (all[i]) m->be->free(all[i]);
    for (int j = 0; j < m->D; j++) {
        m->be->free(ml->spre[j]);
        m->be->free(ml->sstat[j]);
        m->be->free(ml->u[j]);
        if (ml->ds[j]) m->be->free(ml->ds[j]);
        if (ml->dact[j]) m->be->free(ml->dact[j]);
    }
    free(ml);
}

// m = lin_m(x), a = lin_a(x) for n rows of x [n, in]: planes 0 and 1 of out, xrows rows apart.
static void inputs_fwd(Model *m, const Layer *L, MlstmActs *ml, const real *x, size_t n, real *out) {
    size_t H = (size_t)m->H, plane = ml->xrows * H;
    for (int k = 0; k < 2; k++) {
        const real *ln = P(L->off_xln) + 2 * k * H;
        m->be->matmul_fwd(ml->xpre + k * plane, x, P(L->off_wx) + k * H * L->in, NULL, (int)n, L->in, (int)H, 0);
        m->be->layernorm_fwd(out + k * plane, ml->xstat + 2 * k * ml->xrows, ml->xpre + k * plane, ln, ln + H, (int)n, (int)H);
    }
}

void mlstm_byte_table(Model *m, real *tab) {
    MlstmActs *ml = mlstm_acts_create(m, 0, 1, 1, 0);
    inputs_fwd(m, &m->layer[0], ml, P(m->off_emb), SW_VOCAB, tab);
    mlstm_acts_free(m, ml);
}

// Layer 0: m and a of the window's N bytes, rows of the bytes' table.
static void bytes_fwd(Model *m, const Layer *L, MlstmActs *ml, const int *tok, size_t N) {
    size_t H = (size_t)m->H;
    inputs_fwd(m, L, ml, P(m->off_emb), SW_VOCAB, ml->tab);
    for (int k = 0; k < 2; k++) m->be->embed_fwd(ml->xn + k * ml->N * H, ml->tab + k * SW_VOCAB * H, tok, (int)N, (int)H);
}

// One time step on B rows starting at row r0 of the buffers: from h_prev, c_prev to h, c.
// h may alias h_prev (only the first product reads it).
static void cell_step(Model *m, const Layer *L, MlstmActs *ml, size_t r0, int B, const real *h_prev,
                      const real *c_prev, real *h, real *c, real *z, real *act, real *lnstat) {
    const Backend *be = m->be;
    size_t H = (size_t)m->H, o = r0 * H;
    const real *in = h_prev;
    for (int j = 0; j < m->D; j++) {
        real *spre = ml->spre[j] + o, *u = ml->u[j] + o;
        const real *ln = P(L->off_sln[j]), *m_t = j ? NULL : ml->xn + o, *a_t = j == 1 ? ml->xn + ml->N * H + o : NULL;
        be->bsmm_fwd(spre, in, &L->ws[j], P(L->off_ws[j]), B, 0);
        be->norm_act_fwd(u, ml->s0 + o, ml->sstat[j] + 2 * r0, spre, ln, ln + H, m_t, a_t, B, (int)H);  // * m_t, or relu(. + a_t)
        in = u;
    }
    be->bsmm_fwd(z, in, &L->wh, P(L->off_wh), B, 0);
    be->lstm_fwd(h, c, act, lnstat, z, c_prev, P(L->off_b), P(L->off_g), B, (int)H);
}

int mlstm_replays(const Model *m) { return m->be->replay && m->cfg.engine != ENGINE_STEPS; }

// A window's time steps in one direction, the body the backend may replay as one launch.
typedef struct {
    Model *m;
    Acts *a;
    int l, T;
} Steps;

static void run_steps(Model *m, Acts *a, int l, int T, int bwd, void (*body)(void *)) {
    Steps s = {m, a, l, T};
    if (mlstm_replays(m)) m->be->replay(a->ml[l], bwd, T, body, &s);
    else body(&s);
}

static void fwd_steps(void *p) {
    const Steps *s = p;
    Model *m = s->m;
    Acts *a = s->a;
    const int l = s->l;
    size_t B = (size_t)a->B, H = (size_t)m->H;
    for (size_t t = 0; t < (size_t)s->T; t++)
        cell_step(m, &m->layer[l], a->ml[l], t * B, (int)B, a->h[l] + t * B * H, a->c[l] + t * B * H,
                  a->h[l] + (t + 1) * B * H, a->c[l] + (t + 1) * B * H, a->z[l] + t * B * 4 * H, a->act[l] + t * B * 4 * H,
                  a->lnstat[l] + t * B * 8);
}

void mlstm_layer_forward(Model *m, Acts *a, int l, const real *x, int T) {
    MlstmActs *ml = a->ml[l];
    size_t N = (size_t)T * a->B;
    if (ml->tab) bytes_fwd(m, &m->layer[l], ml, a->tok, N);
    else inputs_fwd(m, &m->layer[l], ml, x, N, ml->xn);
    run_steps(m, a, l, T, 0, fwd_steps);
}

// The gradient at internal step j's norm output, every step (the one at a_t is that at s_1).
static real *dact_of(const Model *m, const MlstmActs *ml, int j) { return j == 1 ? ml->dx + ml->N * m->H : ml->dact[j]; }

// Step t backward through the internal steps, from ml->du (the gradient at the gates' input):
// leaves the gradients at spre in ds[j], at m_t and a_t in dx, and adds the one at h_{t-1} to dh.
// The norms' dgain and dbias are left to norm_params_bwd, once a window: off the steps' chain.
static void internal_bwd(Model *m, const Layer *L, MlstmActs *ml, size_t r0, int B, real *dh_prev) {
    const Backend *be = m->be;
    size_t H = (size_t)m->H, o = r0 * H, n = (size_t)B * H;
    for (int j = m->D - 1; j >= 0; j--) {
        real *ds = ml->ds[j] + o, *dact = dact_of(m, ml, j) + o;
        if (j == 0) be->mul_bwd(dact, ml->dx + o, ml->du, ml->s0 + o, ml->xn + o, n);
        else be->relu_bwd(dact, ml->du, ml->u[j] + o, n);
        be->layernorm_bwd(ds, NULL, NULL, dact, ml->spre[j] + o, ml->sstat[j] + 2 * r0, P(L->off_sln[j]), B, (int)H);
        be->bsmm_bwd_data(j ? ml->du : dh_prev, ds, &L->ws[j], P(L->off_ws[j]), B, j ? 0 : 1);
    }
}

// The internal norms' dgain and dbias over the window's N rows at once.
static void norm_params_bwd(Model *m, const Layer *L, MlstmActs *ml, size_t N) {
    for (int j = 0; j < m->D; j++) {
        real *dgain = GR(L->off_sln[j]);
        m->be->layernorm_bwd(NULL, dgain, dgain + m->H, dact_of(m, ml, j), ml->spre[j], ml->sstat[j], P(L->off_sln[j]),
                             (int)N, m->H);
    }
}

// Gradients of the input projections and of x over n rows from dy, the gradients at the
// normed m and a (planes xrows rows apart, overwritten), into dx (overwritten, as the LSTM
// layer does).
static void inputs_bwd(Model *m, const Layer *L, MlstmActs *ml, real *dy, const real *x, real *dx, size_t n) {
    const Backend *be = m->be;
    size_t H = (size_t)m->H, plane = ml->xrows * H, in = (size_t)L->in;
    for (int k = 0; k < 2; k++) {
        real *dln = GR(L->off_xln) + 2 * k * H;
        be->layernorm_bwd(dy + k * plane, dln, dln + H, dy + k * plane, ml->xpre + k * plane, ml->xstat + 2 * k * ml->xrows,
                          P(L->off_xln) + 2 * k * H, (int)n, (int)H);
        be->matmul_bwd(k ? ml->dxin : dx, GR(L->off_wx) + k * H * in, NULL, dy + k * plane, x, P(L->off_wx) + k * H * in,
                       (int)n, (int)in, (int)H);
    }
    be->axpy(dx, ml->dxin, 1, n * in);
}

// Layer 0: the gradients at m and a of the window's N bytes summed by byte, then the table's
// backward; Emb's share is added to its gradient.
static void bytes_bwd(Model *m, const Layer *L, MlstmActs *ml, const int *tok, size_t N) {
    const Backend *be = m->be;
    size_t H = (size_t)m->H, V = SW_VOCAB;
    be->zero(ml->dtab, 2 * V * H * sizeof(real));
    for (int k = 0; k < 2; k++) be->embed_bwd(ml->dtab + k * V * H, ml->dx + k * ml->N * H, tok, (int)N, (int)H);
    inputs_bwd(m, L, ml, ml->dtab, P(m->off_emb), ml->demb, V);
    be->axpy(GR(m->off_emb), ml->demb, 1, V * (size_t)m->E);
}

static void bwd_steps(void *p) {
    const Steps *s = p;
    Model *m = s->m;
    Acts *a = s->a;
    const Backend *be = m->be;
    const int l = s->l;
    const Layer *L = &m->layer[l];
    MlstmActs *ml = a->ml[l];
    size_t B = (size_t)a->B, H = (size_t)m->H, G = 4 * H;
    for (size_t t = (size_t)s->T; t-- > 0;) {
        real *dz = a->dz[l] + t * B * G;
        be->lstm_bwd(dz, a->dc[l], GR(L->off_b), GR(L->off_g), a->dh[l] + (t + 1) * B * H, a->dc[l],
                     a->act[l] + t * B * G, a->c[l] + (t + 1) * B * H, a->c[l] + t * B * H, a->z[l] + t * B * G,
                     a->lnstat[l] + t * B * 8, P(L->off_g), (int)B, (int)H);
        be->bsmm_bwd_data(ml->du, dz, &L->wh, P(L->off_wh), (int)B, 0);
        internal_bwd(m, L, ml, t * B, (int)B, a->dh[l] + t * B * H);
    }
}

void mlstm_layer_backward(Model *m, Acts *a, int l, int T) {
    const Backend *be = m->be;
    const Layer *L = &m->layer[l];
    MlstmActs *ml = a->ml[l];
    size_t B = (size_t)a->B, H = (size_t)m->H, N = (size_t)T * B;
    be->zero(a->dh[l], B * H * sizeof(real));
    be->zero(a->dc[l], B * H * sizeof(real));
    run_steps(m, a, l, T, 1, bwd_steps);
    norm_params_bwd(m, L, ml, N);
    be->bsmm_bwd_weight(GR(L->off_wh), a->dz[l], ml->u[m->D - 1], &L->wh, (int)N);
    for (int j = 0; j < m->D; j++)
        be->bsmm_bwd_weight(GR(L->off_ws[j]), ml->ds[j], j ? ml->u[j - 1] : a->h[l], &L->ws[j], (int)N);
    if (ml->tab) bytes_bwd(m, L, ml, a->tok, N);
    else inputs_bwd(m, L, ml, ml->dx, a->h[l - 1] + B * H, a->dh[l - 1] + B * H, N);
}

void mlstm_grad_operands(const Model *m, const Acts *a, int l, int k, const real **dy, const real **x) {
    const MlstmActs *ml = a->ml[l];
    int j = k - 2;
    *dy = k ? ml->ds[j] : a->dz[l];
    *x = !k ? ml->u[m->D - 1] : j ? ml->u[j - 1] : a->h[l];
}

// s->c_prev already holds the state's c (infer_step copies it).
void mlstm_infer_layer(Model *m, Infer *s, int l, const real *x, int n) {
    const Layer *L = &m->layer[l];
    inputs_fwd(m, L, s->ml, x, (size_t)n, s->ml->xn);
    cell_step(m, L, s->ml, 0, n, s->h[l], s->c_prev, s->h[l], s->c[l], s->z, s->act, s->lnstat);
}
