// seq_plan.h: the recurrent engine's plan where it is not the shape's (C-callable). The
// binary always plans by shape (seq_create_cuda); the GPU tests force a plan to reach shape
// paths that their small masks would not (tests/gpu/test_gpu_engine.c).
#pragma once
#include "ops/backend.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int piece;  // the most list entries a piece takes (1..32); 0: by shape
    int ring;   // the forward's ring: 1 shallow, 2 deep; 0: by shape
} SeqPlan;

// backend.h seq_create on plan (bf: the bf16 table's engine); seq_create_cuda runs it on {0, 0}.
void *seq_create_planned_cuda(SeqArgs *a, int bf, SeqPlan plan);

#ifdef __cplusplus
}
#endif
