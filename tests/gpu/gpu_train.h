// gpu_train.h: what the GPU model tests share: small models of several shapes, a text-like
// byte stream, and trainer-like steps (clipped AdamW, carried state) that can stop and go on.
#pragma once
#include <stdio.h>
#include "model/model.h"
#include "train/optim.h"
#include "gpu_check.h"

typedef struct {
    const char *sparsity;
    int bs, ln, L;
    const char *cell, *init;  // NULL: lstm, uniform
    int depth;                // mlstm internal steps
    double ema;
} Shape;

// Block 32 runs the CUDA recurrent engine; 8 and 16 the per-step ops.
static const Shape shapes[] = {{"ba_2", 16, 0, 2, NULL, NULL, 0, 0}, {"random_0.3", 32, 1, 2, NULL, NULL, 0, 0},
                               {"ws_4_0.2", 8, 1, 1, NULL, NULL, 0, 0}, {"dense", 16, 0, 1, NULL, NULL, 0, 0},
                               {"ba_2", 32, 0, 2, NULL, NULL, 0, 0}, {"dense", 32, 0, 1, NULL, NULL, 0, 0}};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static inline Model *make_model(const Shape *sh, const Backend *be) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 8 * sh->bs;
    cfg.block_size = sh->bs;
    cfg.num_layers = sh->L;
    cfg.embed_size = 24;
    cfg.layer_norm = sh->ln;
    cfg.seed = 11;
    cfg.ema = sh->ema;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", sh->sparsity);
    if (sh->cell) {
        cfg.cell = config_parse_choice("cell", sh->cell, "test");
        cfg.init = config_parse_choice("init", sh->init, "test");
        cfg.depth = sh->depth;
    }
    return model_create(&cfg, be);
}

static inline const char *shape_cell(const Shape *sh) { return sh->cell ? sh->cell : "lstm"; }

// A text-like byte stream: words from a small list (the device machine has no corpus).
static inline unsigned char *toy_text(size_t n, unsigned long long s) {
    static const char *words[] = {"the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. ",
                                  "And ", "then ", "it ", "sleeps ", "under ", "trees\n"};
    unsigned char *t = xmalloc(n);
    for (size_t i = 0; i < n;) {
        const char *w = words[(int)(test_rand(&s) * 15)];
        for (; *w && i < n; w++) t[i++] = (unsigned char)*w;
    }
    return t;
}

// A model with its window, Adam moments and step count: what a checkpoint holds.
typedef struct {
    Model *m;
    Acts *a;
    real *am, *av;
    long step;
} Run;

static inline Run run_make(Model *m, int B, int T) {
    Run r = {m, acts_create(m, B, T), m->be->alloc(m->nparams * sizeof(real)), m->be->alloc(m->nparams * sizeof(real)), 0};
    return r;
}

static inline void run_free(Run *r) {
    r->m->be->free(r->am);
    r->m->be->free(r->av);
    acts_free(r->m, r->a);
    model_free(r->m);
}

// `steps` more steps over B stripes of the text; step s (counted over the whole run) reads
// window s, so a run that stops and goes on sees the same data. loss[i] gets step i's loss.
static inline void run_steps(Run *r, int steps, const unsigned char *text, size_t len, double *loss) {
    Model *m = r->m;
    const Backend *be = m->be;
    int B = r->a->B, T = r->a->T;
    int *tok = xmalloc(sizeof(int) * B * T), *tgt = xmalloc(sizeof(int) * B * T);
    size_t stripe = len / B;
    for (int i = 0; i < steps; i++, r->step++) {
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                size_t at = b * stripe + ((size_t)r->step * T + t) % (stripe - 1);
                tok[t * B + b] = text[at];
                tgt[t * B + b] = text[at + 1];
            }
        be->zero(m->grads, m->nparams * sizeof(real));
        loss[i] = model_forward(m, r->a, tok, tgt, T);
        model_backward(m, r->a, T);
        double scale = clip_scale(sqrt(be->sumsq(m->grads, m->nparams)), 1.0);
        for (int k = 0; k < m->ntensor; k++) {
            const ParamTensor *pt = &m->tensor[k];
            AdamArgs ad = {3e-3f, 0.9f, 0.999f, 1e-8f, pt->decay ? 0.01f : 0.f, (real)scale, r->step + 1};
            be->adam(m->params + pt->off, m->grads + pt->off, r->am + pt->off, r->av + pt->off, pt->n, ad);
        }
        acts_carry_state(m, r->a);
    }
    free(tok);
    free(tgt);
}

// Tokens, targets and a carried state (h_0, c_0), the same for every backend.
typedef struct {
    int B, T, H, *tok, *tgt;
    real *h0, *c0;
} Batch;

static inline Batch batch_make(int B, int T, int H, unsigned long long seed) {
    Batch b = {B, T, H, xmalloc(sizeof(int) * B * T), xmalloc(sizeof(int) * B * T), NULL, NULL};
    for (int i = 0; i < B * T; i++) {
        b.tok[i] = (int)(test_rand(&seed) * 256);
        b.tgt[i] = (int)(test_rand(&seed) * 256);
    }
    b.h0 = h_rand((size_t)B * H, &seed, 0.5);
    b.c0 = h_rand((size_t)B * H, &seed, 1);
    return b;
}

static inline void batch_free(Batch *b) { free(b->tok); free(b->tgt); free(b->h0); free(b->c0); }

// Loss of one window from the batch's carried state; gradients land in m->grads.
static inline double fwd_bwd(Model *m, Acts *a, const Batch *b) {
    const Backend *be = m->be;
    size_t bytes = sizeof(real) * b->B * b->H;
    for (int l = 0; l < m->L; l++) {
        be->to_device(a->h[l], b->h0, bytes);
        be->to_device(a->c[l], b->c0, bytes);
    }
    be->zero(m->grads, m->nparams * sizeof(real));
    double loss = model_forward(m, a, b->tok, b->tgt, b->T);
    model_backward(m, a, b->T);
    return loss;
}

// Largest |a - b| / |b| over n losses.
static inline double worst_rel(const double *a, const double *b, int n) {
    double w = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / fabs(b[i]);
        w = e > w ? e : w;
    }
    return w;
}

// Same config and batch on CPU and GPU: loss and every gradient tensor (and the carried
// state's gradient) within tolerance.
// How far each tensor's CPU gradient moves when every weight is scaled by 1 + u, |u| <= eps
// (eps = 2^-8: bf16 rounding). The mlstm's relus make its gradient jump where a pre-activation
// crosses zero, so at bf16 precision its gradients can only be held to this spread.
static inline double *grad_spread(Model *m, Acts *a, const Batch *b, double eps) {
    double *spread = xmalloc(sizeof(double) * m->ntensor);
    real *g0 = xmalloc(sizeof(real) * m->nparams), *p0 = xmalloc(sizeof(real) * m->nparams);
    memcpy(g0, m->grads, sizeof(real) * m->nparams);
    memcpy(p0, m->params, sizeof(real) * m->nparams);
    unsigned long long s = 7;
    for (size_t i = 0; i < m->nparams; i++) m->params[i] *= (real)(1 + eps * (2 * test_rand(&s) - 1));
    fwd_bwd(m, a, b);
    for (int t = 0; t < m->ntensor; t++) spread[t] = rel_l2(m->grads + m->tensor[t].off, g0 + m->tensor[t].off, m->tensor[t].n);
    memcpy(m->params, p0, sizeof(real) * m->nparams);
    memcpy(m->grads, g0, sizeof(real) * m->nparams);
    free(g0);
    free(p0);
    return spread;
}

// The GPU's loss and every parameter gradient against the CPU's on a B x 5 window. A tensor's
// tolerance is grad_tol, or twice its gradient spread under weight noise of size spread_eps (> 0).
static inline void check_grads_at(const Shape *shs, int nsh, const char *prec, int B, double loss_tol, double grad_tol,
                                  double spread_eps) {
    const Backend *cpu = backend_cpu(), *gpu = cuda_named(prec);
    for (int si = 0; si < nsh; si++) {
        const Shape *sh = &shs[si];
        Model *mc = make_model(sh, cpu), *mg = make_model(sh, gpu);
        Batch b = batch_make(B, 5, mc->H, 100 + si);
        Acts *ac = acts_create(mc, b.B, b.T), *ag = acts_create(mg, b.B, b.T);
        double lc = fwd_bwd(mc, ac, &b), lg = fwd_bwd(mg, ag, &b);
        double *spread = spread_eps > 0 ? grad_spread(mc, ac, &b, spread_eps) : NULL;
        double worst = 0, worst_tol = grad_tol;
        const char *worst_name = "";
        CHECK_MSG(fabs(lg - lc) < loss_tol * lc, "%s %s: loss gpu %.9g cpu %.9g", prec, sh->sparsity, lg, lc);
        for (int t = 0; t < mc->ntensor; t++) {  // every tensor over its tolerance is listed, then the check fails
            const ParamTensor *pt = &mc->tensor[t];
            double e = d_err(gpu, mg->grads + pt->off, mc->grads + pt->off, pt->n);
            double tol = spread ? fmax(grad_tol, 2 * spread[t]) : grad_tol;
            if (e / tol > worst / worst_tol) worst = e, worst_tol = tol, worst_name = pt->name;
            if (e >= tol) printf("  %s %s %s: gradient of %s: rel L2 %.3g (tol %.3g)\n", prec, shape_cell(sh), sh->sparsity, pt->name, e, tol);
        }
        CHECK_MSG(worst < worst_tol, "%s %s %s bs=%d ln=%d D=%d: gradient of %s: rel L2 %.3g (tol %.3g)", prec, shape_cell(sh),
                  sh->sparsity, sh->bs, sh->ln, sh->depth, worst_name, worst, worst_tol);
        for (int l = 0; l < mc->L && !spread; l++) {
            double e = d_err(gpu, ag->dh[l], ac->dh[l], (size_t)b.B * mc->H);
            CHECK_MSG(e < grad_tol, "%s %s: gradient of carried h of layer %d: rel L2 %.3g", prec, sh->sparsity, l, e);
        }
        printf("  %s %s %-10s bs=%2d ln=%d D=%d L=%d B=%d: loss %.7f vs %.7f, worst grad rel L2 %.2g (%s, tol %.2g)\n", prec,
               shape_cell(sh), sh->sparsity, sh->bs, sh->ln, sh->depth, sh->L, B, lg, lc, worst, worst_name, worst_tol);
        free(spread);
        acts_free(mc, ac); acts_free(mg, ag);
        model_free(mc); model_free(mg);
        batch_free(&b);
    }
}

static inline void check_grads(const Shape *shs, int nsh, const char *prec, double loss_tol, double grad_tol, double spread_eps) {
    check_grads_at(shs, nsh, prec, 7, loss_tol, grad_tol, spread_eps);
}

// `steps` Adam steps of shape sh: the GPU loss stays within tol (relative) of the CPU loss at
// every step, and falls by more than 1 nat.
static inline void check_curve(const Shape *sh, int steps, const char *prec, double tol) {
    enum { B = 8, T = 16 };
    size_t len = 64 * 1024;
    unsigned char *text = toy_text(len, 9);
    Run rc = run_make(make_model(sh, backend_cpu()), B, T);
    Run rg = run_make(make_model(sh, cuda_named(prec)), B, T);
    double *lc = xmalloc(sizeof(double) * steps), *lg = xmalloc(sizeof(double) * steps);
    run_steps(&rc, steps, text, len, lc);
    run_steps(&rg, steps, text, len, lg);
    double worst = worst_rel(lg, lc, steps), first = lg[0], last = lg[steps - 1];
    printf("  %s %s: loss %.4f -> %.4f (cpu %.4f -> %.4f), worst step rel diff %.2g\n", prec, shape_cell(sh), first, last,
           lc[0], lc[steps - 1], worst);
    run_free(&rc);
    run_free(&rg);
    free(text);
    free(lc);
    free(lg);
    CHECK_MSG(worst < tol, "%s %s: GPU loss curve leaves the CPU's by %.3g (tol %g)", prec, shape_cell(sh), worst, tol);
    CHECK_MSG(last < first - 1, "%s %s: loss did not fall over %d steps (%.4f -> %.4f)", prec, shape_cell(sh), steps, first, last);
}
