// test_sampler.c: sample_byte draws what the plain definition draws: candidates sorted by
// probability (ties in byte order), cut by top-k and top-p, one uniform over what is kept.
// The definition here sorts with qsort; logits with many ties exercise the order.
#include <math.h>
#include <stdlib.h>
#include "model/sampler.h"
#include "test.h"

typedef struct { double p; int id; } RefCand;

static int ref_order(const void *a, const void *b) {
    const RefCand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

static int ref_draw(const float *logits, const SamplerOpts *o, Rng *rng) {
    RefCand c[256];
    double mx = logits[0], sum = 0;
    for (int i = 1; i < 256; i++) mx = logits[i] > mx ? logits[i] : mx;
    for (int i = 0; i < 256; i++) c[i] = (RefCand){exp((logits[i] - mx) / o->temperature), i}, sum += c[i].p;
    qsort(c, 256, sizeof c[0], ref_order);
    int keep = o->top_k > 0 && o->top_k < 256 ? o->top_k : 256;
    double cum = 0;
    for (int i = 0; o->top_p < 1 && i < keep; i++)
        if ((cum += c[i].p / sum) >= o->top_p) keep = i + 1;
    double total = 0;
    for (int i = 0; i < keep; i++) total += c[i].p;
    double u = rng_uniform(rng) * total;
    for (int i = 0; i < keep; i++)
        if ((u -= c[i].p) < 0) return c[i].id;
    return c[keep - 1].id;
}

TEST(sample_byte_draws_as_the_definition) {
    const SamplerOpts opts[] = {{1.0, 0, 1.0}, {0.7, 40, 1.0}, {1.3, 0, 0.9}, {0.9, 5, 0.5}};
    unsigned long long s = 5;
    float logits[256];
    int differ = 0;
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < 256; i++)  // few distinct values: ties everywhere
            logits[i] = trial % 2 ? (float)(int)(test_rand(&s) * 6) : (float)(4 * test_rand(&s) - 2);
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
            Rng a, b;
            rng_seed(&a, (uint64_t)trial * 7 + k);
            rng_seed(&b, (uint64_t)trial * 7 + k);
            for (int d = 0; d < 20; d++) differ += sample_byte(logits, &opts[k], &a) != ref_draw(logits, &opts[k], &b);
        }
    }
    CHECK_EQ(differ, 0);
}
