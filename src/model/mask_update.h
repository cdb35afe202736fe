// mask_update.h: masks learned during training (the config's prune_* and mask_update* keys):
// their schedules, and each matrix's next mask when a step prunes it or moves some of its
// blocks. Every function here is a deterministic function of the config, the step and the
// weights or gradients it is given, so data-parallel ranks, and a resumed run, agree.
#pragma once
#include "model/model.h"

// Gradual pruning (Zhu and Gupta 2017): the fraction of each matrix's drawn blocks kept after
// step t: 1 up to prune_start, prune_to from prune_end on, and between them
// d_f + (1 - d_f) (1 - (t - prune_start) / (prune_end - prune_start))^3 with d_f = prune_to.
double prune_density_at(const Config *cfg, long t);
// Whether the masks are pruned after step t: prune_to < 1 and t in [prune_start, prune_end] on
// the prune_every grid from prune_start, or t = prune_end.
int prune_due(const Config *cfg, long t);
// The fraction of each matrix's blocks that a mask update after step t moves: mask_update_frac
// decayed as a cosine to 0 at mask_update_end (RigL), and 0 where no update is due (t not a
// positive multiple of mask_update_every, or not before mask_update_end).
double mask_update_frac_at(const Config *cfg, long t);
// The step masks stop moving at: mask_update_end, or 3/4 of max_steps when it is 0.
long mask_update_end(const Config *cfg);
// Gradual pruning's masks for m (model_create_with_masks's order): each matrix keeps its
// round(density * blocks of drawn[i]) largest blocks by norm of params (host, m's layout),
// never more than it has, and at least the largest of each row and column.
void mask_prune_gradual(const Model *m, const real *params, const Mask *drawn, double density, Mask *out);
// A mask update: each matrix drops its round(frac * blocks) smallest blocks by norm of params
// (never the last of a row or column), at most as many as it lacks, and regrows as many of
// the blocks it lacked: those of largest grow[i] ([nr * nc] for matrix i, NULL where m has
// none), ties to the lower index, first among those whose row and column lost a block (so
// rows and columns keep their lengths), then among those that leave no row or column longer
// than the matrix's longest, then the rest. Each matrix keeps its block count.
void mask_move_blocks(const Model *m, const real *params, double frac, double *const *grow, Mask *out);
// SET's grow scores for matrix i after step t: uniform draws, seeded by seed, t and i.
double *mask_random_scores(const Mask *mk, long seed, long t, int i);
