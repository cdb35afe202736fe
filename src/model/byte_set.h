// byte_set.h: which of the 256 byte values a training corpus holds, as a 256-bit set. A
// checkpoint records its corpus's set (in its training state), and `sample` draws only those
// bytes: a byte model can otherwise emit bytes it never saw, whose embeddings are untrained.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"
#ifdef __cplusplus
extern "C" {
#endif

#define BYTE_SET_BYTES 32

// The set of the bytes in p[0..n).
void byte_set_of(const uint8_t *p, size_t n, uint8_t set[BYTE_SET_BYTES]);
int byte_set_has(const uint8_t set[BYTE_SET_BYTES], int b);
int byte_set_count(const uint8_t set[BYTE_SET_BYTES]);
// The set recorded in checkpoint `path` (every byte for a checkpoint without one: weights
// only, or older than the record). Returns 1 if it held one.
int ckpt_byte_set(const char *path, uint8_t set[BYTE_SET_BYTES]);
// Makes m's head never pick a byte outside set: their output biases become a large negative
// number, so every sampling path (the host's and the GPU's device loop) skips them.
void model_only_bytes(Model *m, const uint8_t set[BYTE_SET_BYTES]);

#ifdef __cplusplus
}
#endif
