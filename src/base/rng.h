// rng.h: xoshiro256** seeded by splitmix64. Small, fast, and its whole state (4 words)
// is saved in checkpoints so that resumed runs draw the same numbers.
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct { uint64_t s[4]; } Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
double rng_uniform(Rng *r);              // [0, 1), 53 random bits
uint64_t rng_below(Rng *r, uint64_t n);  // uniform in [0, n), unbiased
double rng_normal(Rng *r);               // standard normal (Box-Muller)

#ifdef __cplusplus
}
#endif
