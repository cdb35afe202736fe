// twins.cuh: the table of bf16 activation twins (twins.cu); the GPU tests read it to check
// that every op kept its twins current (tests/gpu/twins_stale.cu).
#pragma once
#include "base/lowp.cuh"

#define TWINS_MAX 256  // train and eval acts of 8 layers: the engine keeps 2 twins a layer, the mlstm 2D + 2

typedef struct {
    const real *f;
    bf16 *b;
    size_t n;
    int owned;  // made by keep_lowp: freed with f (the engine frees its own)
} Twin;
extern thread_local Twin twins[TWINS_MAX];  // per rank thread, like g_cuda
