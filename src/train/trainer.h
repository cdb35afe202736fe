// trainer.h: one training rank's state, shared by train.c (setup, the step loop, evaluation
// and checkpoints) and train_dist.c (what data-parallel ranks add: starting the ranks,
// summing gradients across them, gathering the carried state for checkpoints).
#pragma once
#include "train/data.h"
#include "train/dist.h"
#include "model/model_io.h"
#include "train/train_log.h"

typedef struct {
    Config cfg;
    int rank, world;       // data-parallel rank; 0 of 1 alone
    const char *resume_path;
    int overwrite;         // --overwrite: a new run may replace another's checkpoints (run_dir.h)
    long stop_after;       // --stop-after: end (with a checkpoint) after this step
    Model *m;
    Acts *a, *ea;          // training window (batch_size/world rows), validation window
    int eval_B;            // validation stripes over all ranks
    real *adam_m, *adam_v;
    real *raw;             // trained weights while validation runs on their average (ema > 0)
    Dataset ds;
    Stripes st;            // this rank's stripes
    TrainState ts;
    int *tok, *tgt;        // host window
    TrainLog log;          // rank 0 only
    int skipped_in_row;    // consecutive non-finite steps skipped (nan_policy = skip)
    int stop;              // a signal reached some rank: every rank stops after this step
    long masks_step;       // the step whose mask changes were made (train_masks.c), -1 before any
    // world > 1 (train_dist.c)
    DistPlan plan;
    int launched;          // buckets of this step's gradients already all-reduced
    real *full_h[SW_MAX_LAYERS], *full_c[SW_MAX_LAYERS];  // [batch_size, H] gathered carried state
} Trainer;

// The training run of the `train` verb: every rank of this process (train_ranks) sets up,
// loops until the last step or a signal, and finishes. proto: config and options. Returns the
// exit status: 0, or 128 + the signal that stopped it (after its checkpoint was saved).
int train_run(Trainer *proto);
// Before the step after tr->ts.step: prunes the masks or moves some of their blocks where the
// config's schedules say so, rebuilding tr->m, its Adam moments and windows on the new masks
// (train_masks.c). Needs this step's window in tr->tok, tr->tgt and the carried state in tr->a.
void train_masks_update(Trainer *tr);
// Starts the ranks of this process and runs `run` on each: one in this thread alone; with
// several processes (rank and world size from the launcher, dist_env) or gpus = N, joins
// them through NCCL first, one thread and GPU per rank. Fills rank and world of each copy.
void train_ranks(const Trainer *proto, void (*run)(Trainer *tr));
// After the model is built (world > 1): bucket plan, the backward hook that all-reduces
// finished buckets, and the buffers of the gathered carried state.
void dist_trainer_setup(Trainer *tr);
void dist_trainer_free(Trainer *tr);
// After model_backward: waits until the gradients hold the sum over ranks.
void dist_grads_sum(Trainer *tr);
// The carried state of all batch_size rows for a checkpoint: tr->a alone, else every rank's
// rows gathered into *view (a collective: every rank calls it at the same step).
const Acts *dist_gather_state(Trainer *tr, Acts *view);
