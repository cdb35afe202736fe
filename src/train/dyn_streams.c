// dyn_streams.c: several independent streams over one span (dyn_streams.h): the pieces, and
// the devices' threads that each run theirs through eval_span_nats or dyn_nats.
#include "train/dyn_streams.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "model/model_io.h"
#include "train/eval.h"

size_t dyn_piece(size_t len, int n, int k, size_t *piece_len) {
    size_t each = len / (size_t)n;
    if (each < 2) die("%d streams over %zu bytes: a stream needs 2 bytes at least (at most %zu streams)", n, len, len / 2);
    *piece_len = k == n - 1 ? len - each * (size_t)(n - 1) : each;
    return each * (size_t)k;
}

typedef struct {
    Model *m;
    DynEval *d;  // NULL: static
    DynHyper h;
    const DynStreams *s;
    const uint8_t *bytes;
    size_t len;
    double *nats;     // per piece
    size_t *count;    // per piece
    const real *rms;  // d's rms on the host, for the further devices
    int dev;
    Progress *pr;
    pthread_t thread;
} Worker;

// The pieces of device w->dev, one after another on w->m.
static void run_pieces(Worker *w) {
    const DynStreams *s = w->s;
    Acts *a = acts_create(w->m, 1, s->T);
    int mine = (s->streams - w->dev + s->devices - 1) / s->devices, done = 0;
    for (int k = w->dev; k < s->streams; k += s->devices) {
        size_t n, off = dyn_piece(w->len, s->streams, k, &n);
        Progress *p = s->streams == 1 ? w->pr : NULL;
        w->nats[k] = w->d ? dyn_nats(w->d, a, w->h, w->bytes + off, n, &w->count[k], p)
                          : eval_span_nats(w->m, a, w->bytes + off, n, 0, &w->count[k], p);
        if (w->pr && s->streams > 1) progress_show(w->pr, (double)++done / mine);
    }
    acts_free(w->m, a);
}

// A further device's thread: its own model and statistics, then its pieces.
static void *device_main(void *p) {
    Worker *w = p;
    char ctx[48];
    snprintf(ctx, sizeof ctx, "stream device %d", w->dev);
    die_context(ctx);
    const Model *m0 = w->m;
    if (m0->cfg.device == DEVICE_CUDA) backend_cuda_bind(w->dev);
    w->m = model_load_infer(w->s->ckpt, m0->cfg.device, m0->cfg.precision, w->s->raw);
    if (w->d) w->d = dyn_like(w->m, w->d, w->rms);
    run_pieces(w);
    if (w->d) dyn_free(w->d);
    model_free(w->m);
    return NULL;
}

// The further devices' threads run while this one runs device 0's pieces.
static void run_devices(Worker *w, int G) {
    for (int g = 1; g < G; g++)
        if (pthread_create(&w[g].thread, NULL, device_main, &w[g])) die("%d stream devices: cannot start thread %d", G, g);
    run_pieces(&w[0]);
    for (int g = 1; g < G; g++) pthread_join(w[g].thread, NULL);
}

double dyn_streams_bpc(Model *m, DynEval *d, DynHyper h, const DynStreams *s, const uint8_t *bytes, size_t len,
                       size_t *count, Progress *pr) {
    int n = s->streams, G = s->devices;
    if (n < 1 || G < 1 || G > n) die("internal: %d streams over %d devices", n, G);
    double *nats = xcalloc((size_t)n, sizeof *nats);
    size_t *counts = xcalloc((size_t)n, sizeof *counts), piece;
    dyn_piece(len, n, 0, &piece);  // dies here, before any thread, on a span too short
    real *rms = NULL;
    if (d && G > 1) {
        rms = xmalloc(m->nparams * sizeof(real));
        m->be->to_host(rms, d->rms, m->nparams * sizeof(real));
    }
    Worker *w = xcalloc((size_t)G, sizeof *w);
    for (int g = 0; g < G; g++) w[g] = (Worker){.m = m, .d = d, .h = h, .s = s, .bytes = bytes, .len = len, .nats = nats, .count = counts,
                        .rms = rms, .dev = g, .pr = g ? NULL : pr};
    run_devices(w, G);
    double sum = 0;
    *count = 0;
    for (int k = 0; k < n; k++) sum += nats[k], *count += counts[k];
    free(w), free(rms), free(nats), free(counts);
    return sum / (double)*count / log(2.0);
}
