// dyneval.c: dynamic evaluation (dyneval.h): the gradients' statistics, the adapted stream
// (the protocol around them: dyn_protocol.c). The scoring loop is eval.c's, with a hook per window.
#include "train/dyneval.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "train/data.h"
#include "train/eval.h"

typedef struct {
    double *ms;  // the backend's: sum of squared gradients per weight
    long windows;
} StatsCtx;

// After a training window's forward: its gradient, squared into the sums.
static void stats_hook(void *ctx, Model *m, Acts *a, int T) {
    StatsCtx *c = ctx;
    const Backend *be = m->be;
    be->zero(m->grads, m->nparams * sizeof(real));
    model_backward(m, a, T);
    be->sq_acc(c->ms, m->grads, m->nparams);
    c->windows++;
}

// m's weights kept as the trained ones; rms allocated, not filled.
static DynEval *dyn_alloc(Model *m) {
    const Backend *be = m->be;
    DynEval *d = xcalloc(1, sizeof *d);
    d->m = m;
    d->p0 = be->alloc(m->nparams * sizeof(real));
    d->rms = be->alloc(m->nparams * sizeof(real));
    be->copy(d->p0, m->params, m->nparams * sizeof(real));
    return d;
}

DynEval *dyn_like(Model *m, const DynEval *src, const real *rms_host) {
    DynEval *d = dyn_alloc(m);
    m->be->to_device(d->rms, rms_host, m->nparams * sizeof(real));
    d->mean_rms = src->mean_rms;
    d->windows = src->windows;
    return d;
}

DynEval *dyn_create(Model *m, const uint8_t *bytes, size_t len, int B, int T, Progress *pr) {
    const Backend *be = m->be;
    DynEval *d = dyn_alloc(m);
    B = eval_batch_for(len, B, T);
    Acts *a = acts_create(m, B, T);
    Stripes s = eval_stripes(bytes, len, B, T);
    StatsCtx c = {be->alloc(m->nparams * sizeof(double)), 0};
    be->zero(c.ms, m->nparams * sizeof(double));
    eval_nats_then(m, a, &s, stats_hook, &c, pr);
    acts_free(m, a);
    d->windows = c.windows;
    double *ms = xmalloc(m->nparams * sizeof(double));
    real *rms = xmalloc(m->nparams * sizeof(real));
    be->to_host(ms, c.ms, m->nparams * sizeof(double));
    be->free(c.ms);
    for (size_t i = 0; i < m->nparams; i++) rms[i] = (real)sqrt(ms[i] / (double)d->windows);
    double sum = 0;
    for (int k = 0; k < m->ntensor; k++) {
        const ParamTensor *t = &m->tensor[k];
        double ts = 0;
        for (size_t i = 0; i < t->n; i++) ts += rms[t->off + i];
        sum += ts / (double)t->n;
    }
    d->mean_rms = sum / m->ntensor;
    if (!(d->mean_rms > 0)) die("dynamic evaluation: the gradients over %zu training bytes are all zero", len);
    be->to_device(d->rms, rms, m->nparams * sizeof(real));
    free(ms);
    free(rms);
    return d;
}

void dyn_free(DynEval *d) {
    d->m->be->free(d->p0);
    d->m->be->free(d->rms);
    free(d);
}

void dyn_restore(DynEval *d) { d->m->be->copy(d->m->params, d->p0, d->m->nparams * sizeof(real)); }

typedef struct {
    DynEval *d;
    DynArgs args;
} StepCtx;

// After a segment is scored: the gradient of its mean loss, then the update.
static void step_hook(void *ctx, Model *m, Acts *a, int T) {
    StepCtx *c = ctx;
    m->be->zero(m->grads, m->nparams * sizeof(real));
    model_backward(m, a, T);
    m->be->dyn_update(m->params, m->grads, c->d->p0, c->d->rms, m->nparams, c->args);
}

double dyn_nats(DynEval *d, Acts *a, DynHyper h, const uint8_t *bytes, size_t len, size_t *count, Progress *pr) {
    if (a->B != 1) die("internal: dynamic evaluation reads one stream, buffers for %d", a->B);
    dyn_restore(d);
    StepCtx c = {d, {(real)h.eta, (real)(h.lambda / d->mean_rms), (real)h.eps}};
    Stripes s = eval_stripes(bytes, len, 1, a->T);
    *count = eval_count(&s);
    return eval_nats_then(d->m, a, &s, step_hook, &c, pr);
}

double dyn_bpc(DynEval *d, Acts *a, DynHyper h, const uint8_t *bytes, size_t len, size_t *count, Progress *pr) {
    return dyn_nats(d, a, h, bytes, len, count, pr) / (double)*count / log(2.0);
}
