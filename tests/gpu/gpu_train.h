// gpu_train.h: what the GPU model tests share: small models of several shapes, a text-like
// byte stream, and trainer-like steps (clipped AdamW, carried state) that can stop and go on.
#pragma once
#include <stdio.h>
#include "../../src/model.h"
#include "../../src/optim.h"
#include "gpu_check.h"

typedef struct {
    const char *sparsity;
    int bs, ln, L;
} Shape;

static const Shape shapes[] = {{"ba_2", 16, 0, 2}, {"random_0.3", 32, 1, 2}, {"ws_4_0.2", 8, 1, 1}, {"dense", 16, 0, 1}};
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
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", sh->sparsity);
    return model_create(&cfg, be);
}

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
