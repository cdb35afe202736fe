// rng.h: xoshiro256** seeded by splitmix64. Small, fast, and its whole state (4 words)
// is saved in checkpoints so that resumed runs draw the same numbers.
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct { uint64_t s[4]; } Rng;

// The generator's step and its uniform draw, inline so that device code (the CUDA sampling
// loop, cuda/engine/gen_loop.cu) draws the very numbers the host does from the same state.
#ifdef __CUDACC__
#define SW_HOST_DEVICE __host__ __device__
#else
#define SW_HOST_DEVICE
#endif
static inline SW_HOST_DEVICE uint64_t xoshiro_next(uint64_t *s) {
    uint64_t result = s[1] * 5, t = s[1] << 17;
    result = ((result << 7) | (result >> 57)) * 9;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}
static inline SW_HOST_DEVICE double xoshiro_uniform(uint64_t *s) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
double rng_uniform(Rng *r);              // [0, 1), 53 random bits
uint64_t rng_below(Rng *r, uint64_t n);  // uniform in [0, n), unbiased
double rng_normal(Rng *r);               // standard normal (Box-Muller)

#ifdef __cplusplus
}
#endif
