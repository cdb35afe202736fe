// feature_extract.c: batched feature extraction through the Infer API, with sorted documents.
#include "features/feature_extract.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/progress.h"
#include "model/model_io.h"

void feat_opts_default(FeatOpts *o) {
    *o = (FeatOpts){.layer = -1, .batch = 256, .progress = -1, .preprocess = 1, .device = DEVICE_CPU,
                     .precision = CKPT_CHOICE};
}

static void feat_opts_check(FeatOpts *o, const Model *m) {
    if (o->layer >= m->L) die("--layer %d: the model has %d layers (0..%d)", o->layer, m->L, m->L - 1);
    if (o->layer < 0) o->layer = m->L - 1;
    if (o->mean && (o->state || o->tanh_c)) die("--mean replaces the final state: drop --state/--tanh");
    if (o->tanh_c && o->state == 'h') die("--tanh applies to c: use --state c or both");
    if (!o->state) o->state = 'c';
}

Model *feat_model_load(const char *ckpt, FeatOpts *o) {
    Model *m = model_load_infer(ckpt, o->device, o->precision, o->raw_weights);
    feat_opts_check(o, m);
    return m;
}

int feat_dim(const Model *m, const FeatOpts *o) { return o->state == 'b' && !o->mean ? 2 * m->H : m->H; }

// ---- extraction ----

typedef struct {
    Model *m;
    Infer *s;
    const Docs *d;
    const FeatOpts *o;
    float *out, *c, *h;    // out [n, D]; c, h: host rows [maxB, H]
    int D, *tok;
    Progress prog;
    int done;              // documents
} Extract;

// Longer documents first; equal lengths keep input order (a stable, deterministic order).
static int by_len_desc(const void *a, const void *b, void *docs) {
    int i = *(const int *)a, j = *(const int *)b;
    size_t li = doc_len(docs, i), lj = doc_len(docs, j);
    return li != lj ? (li < lj ? 1 : -1) : (i > j) - (i < j);
}

// Sorted rows [a, b) just finished: their state goes to their documents' output rows.
static void collect(Extract *e, const int *rows, int a, int b) {
    const Model *m = e->m;
    int H = m->H, l = e->o->layer;
    char st = e->o->mean ? 's' : e->o->state;
    if (st != 'h') infer_get(m, e->s, l, st == 's' ? 's' : 'c', b, e->c);
    if (st == 'h' || st == 'b') infer_get(m, e->s, l, 'h', b, e->h);
    for (int r = a; r < b; r++) {
        float *dst = e->out + (size_t)rows[r] * e->D, *c = e->c + (size_t)r * H, *h = e->h + (size_t)r * H;
        float len = (float)doc_len(e->d, rows[r]);  // for the mean; empty documents give 0
        for (int j = 0; st != 'h' && j < H; j++)
            dst[j] = e->o->tanh_c ? tanhf(c[j]) : st == 's' ? (len > 0 ? c[j] / len : 0) : c[j];
        if (st == 'h' || st == 'b') memcpy(dst + (st == 'b' ? H : 0), h, H * sizeof(float));
    }
    e->done += b - a;
    progress_show(&e->prog, e->done);
}

// Rows [0, n) of a sorted batch that are longer than t bytes.
static int running(const Docs *d, const int *rows, int n, size_t t) {
    while (n > 0 && doc_len(d, rows[n - 1]) <= t) n--;
    return n;
}

static void run_batch(Extract *e, const int *rows, int nb) {
    infer_reset(e->m, e->s);
    int n = running(e->d, rows, nb, 0);
    if (n < nb) collect(e, rows, n, nb);  // empty documents: the zero state
    for (size_t t = 0; n > 0; t++) {
        for (int r = 0; r < n; r++) e->tok[r] = doc_bytes(e->d, rows[r])[t];
        infer_step(e->m, e->s, e->tok, n, NULL);
        int next = running(e->d, rows, n, t + 1);
        if (next < n) collect(e, rows, next, n);
        n = next;
    }
}

float *features_extract(Model *m, const Docs *d, const FeatOpts *o) {
    int B = d->n < o->batch ? d->n : o->batch;
    Extract e = {.m = m, .d = d, .o = o, .D = feat_dim(m, o)};
    e.out = xcalloc((size_t)d->n * e.D + 1, sizeof(float));
    if (B == 0) return e.out;
    int *order = xmalloc(d->n * sizeof(int));
    for (int i = 0; i < d->n; i++) order[i] = i;
    qsort_r(order, d->n, sizeof(int), by_len_desc, (void *)d);
    e.s = infer_create(m, B, o->mean);
    e.c = xmalloc((size_t)B * m->H * sizeof(float));
    e.h = xmalloc((size_t)B * m->H * sizeof(float));
    e.tok = xmalloc(B * sizeof(int));
    progress_init(&e.prog, "features", "docs", d->n, o->progress);
    for (int i = 0; i < d->n; i += B) run_batch(&e, order + i, d->n - i < B ? d->n - i : B);
    progress_done(&e.prog);
    infer_free(m, e.s);
    free(e.c); free(e.h); free(e.tok); free(order);
    return e.out;
}
