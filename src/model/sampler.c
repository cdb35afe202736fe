// sampler.c: temperature, top-k and nucleus (top-p) sampling over the 256 byte values.
#include "model/sampler.h"
#include <math.h>
#include <stdlib.h>

typedef struct { double p; int id; } Cand;

static int by_prob_desc(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;  // ties in byte order: the sort is deterministic
}

static int argmax(const float *logits) {
    int best = 0;
    for (int i = 1; i < 256; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

int sample_byte(const float *logits, const SamplerOpts *o, Rng *rng) {
    if (o->temperature <= 0) return argmax(logits);
    Cand c[256];
    double mx = logits[argmax(logits)], sum = 0;
    for (int i = 0; i < 256; i++) {
        c[i] = (Cand){exp((logits[i] - mx) / o->temperature), i};
        sum += c[i].p;
    }
    qsort(c, 256, sizeof c[0], by_prob_desc);
    int keep = o->top_k > 0 && o->top_k < 256 ? o->top_k : 256;
    if (o->top_p < 1) {
        double cum = 0;
        for (int i = 0; i < keep; i++) {
            cum += c[i].p / sum;
            if (cum >= o->top_p) { keep = i + 1; break; }
        }
    }
    double total = 0;
    for (int i = 0; i < keep; i++) total += c[i].p;
    double u = rng_uniform(rng) * total;
    for (int i = 0; i < keep; i++) {
        u -= c[i].p;
        if (u < 0) return c[i].id;
    }
    return c[keep - 1].id;
}
