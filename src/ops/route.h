// route.h: how a backend runs a model, as values: the recurrent path of each layer in
// training, or the sampling loop's placement of its weights. The CUDA backend fills them
// (seq_route, gen_route); route_text alone turns them into words (the training log, info,
// bench, sample -v), so nothing reads the words back.
#pragma once
#include <stddef.h>
#include "base/common.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    RECUR_STEPS,       // per-step ops: bsmm_fwd and lstm_fwd a time step (the reference)
    RECUR_REPLAY,      // per-step ops, each window's steps replayed as one launch per direction (the mlstm)
    RECUR_GRAPH,       // the engine: a kernel per time step, a window per launch graph
    RECUR_DENSE,       // the engine for dense W_h: a cuBLAS product and the cell per step, a window per graph
    RECUR_WGMMA,       // the engine with its steps and dW_h on wgmma (engine = wgmma, cuda/wgmma)
    RECUR_NPATHS
} RecurPath;

typedef enum {
    LOOP_NONE,  // no device loop: the per-step ops and the host's draw
    LOOP_SMEM,  // every weight held in shared memory
    LOOP_PART,  // some held in shared memory, the rest read from L2/HBM every step
    LOOP_L2,    // every weight read from L2/HBM every step
    LOOP_NPLACES
} LoopPlace;

typedef struct {
    int sampling;                   // 0: a training window's route (layers); 1: the sampling loop's
    // training
    int nlayers;
    RecurPath layer[SW_MAX_LAYERS];
    int table;                      // layer 0's input projections from a table of the 256 bytes' rows
    // sampling
    LoopPlace place;
    int ctas, products, bf16;       // one cooperative launch of ctas CTAs, products a step
    double mb, held_mb;             // the weights' MB, and those held in shared memory
} Route;

// A word per path and placement (bench's column): "steps", "replay", "graph", ...
const char *recur_name(RecurPath p);
const char *loop_name(LoopPlace p);
// The route in words, into buf (n bytes); returns buf.
const char *route_text(const Route *r, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
