// sampler.c: temperature, top-k and nucleus (top-p) sampling over the 256 byte values.
#include "model/sampler.h"
#include <math.h>

typedef struct { double p; int id; } Cand;

// Probability descending, ties in byte order: a total order, so any sort gives the one
// order the device loop's bitonic sort gives too.
static int before(const Cand *x, const Cand *y) { return x->p != y->p ? x->p > y->p : x->id < y->id; }

// Bottom-up merge sort of the 256 candidates (qsort's callback per comparison cost more
// than the rest of a draw).
static void sort_cands(Cand *c) {
    Cand tmp[256], *src = c, *dst = tmp;
    for (int w = 1; w < 256; w *= 2) {
        for (int lo = 0; lo < 256; lo += 2 * w) {
            int i = lo, j = lo + w, end = lo + 2 * w, k = lo;
            while (i < lo + w && j < end) dst[k++] = before(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < lo + w) dst[k++] = src[i++];
            while (j < end) dst[k++] = src[j++];
        }
        Cand *t = src;
        src = dst, dst = t;
    }
    if (src != c)
        for (int i = 0; i < 256; i++) c[i] = src[i];
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
    sort_cands(c);
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
