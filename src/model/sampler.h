// sampler.h: drawing the next byte from logits with temperature, top-k and top-p.
#pragma once
#include "base/rng.h"

typedef struct {
    double temperature;  // 0 = greedy (argmax)
    int top_k;           // 0 = off
    double top_p;        // 1 = off
} SamplerOpts;

// logits: 256 values. Deterministic for a given rng state.
int sample_byte(const float *logits, const SamplerOpts *o, Rng *rng);
