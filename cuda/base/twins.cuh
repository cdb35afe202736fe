// twins.cuh: the table of bf16 activation twins (twins.cu); the GPU tests read it to check
// that every op kept its twins current (tests/gpu/twins_stale.cu).
#pragma once
#include "base/lowp.cuh"
#include "base/slab.cuh"

#define TWINS_MAX 256  // train and eval acts of 8 layers: the engine keeps 2 twins a layer, the mlstm 2D + 2

typedef struct {
    const real *f;
    bf16 *b;
    size_t n;
    int owned;  // made by keep_lowp: freed with f (the engine frees its own)
    // keep_lowp's twins: the slab image (base/slab.cuh) of rows x cols values at img_of, which
    // its writer wrote last and whole (twin_slab_out); img_of NULL: no image is current
    unsigned char *img;
    size_t img_bytes;
    const real *img_of;
    int img_rows, img_cols;
} Twin;
extern thread_local Twin twins[TWINS_MAX];  // per rank thread, like g_cuda
