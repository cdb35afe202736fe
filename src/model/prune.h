// prune.h: block pruning of a trained model (a pruned model's weights move with remask.h). Each
// block-sparse matrix keeps the blocks of largest norm (the four gates of a W_h or W_x share
// one mask, so a block's norm is taken over its four copies); every block row and column
// keeps at least one block.
#pragma once
#include "model/model.h"

// New masks for m (model_create_with_masks's order) keeping round(density * blocks) of each
// matrix's current blocks, at least one, from the weights params (host memory, m's layout).
// Dies with a one-line message if density cannot keep a block in every row and column (a
// square mask needs as many blocks as it has rows, where it holds a matching of them all).
void model_prune_masks(const Model *m, const real *params, double density, Mask *out);
// Squared norms of the blocks of mask k of layer l over their gate copies, from vals (host
// memory in m's layout: weights, or gradients): [nr * nc], 0 where absent. Caller frees.
double *model_block_norms(const Model *m, const real *vals, int l, int k);
// The `want` blocks of mk of largest norm, the largest of every row and column among them
// whatever their rank; where those are more than `want`, the fewest blocks that leave no row
// or column empty instead (a maximum matching of rows to columns, largest blocks first, and
// the largest block of each line it leaves out). *floor gets how many those are, and the mask
// holds max(want, *floor).
Mask mask_keep_largest(const Mask *mk, const double *norm, long want, long *floor);
// The blocks of mk that are present (present = 1) or absent (0), by score, largest first,
// ties to the lower index; *cnt gets their count. Caller frees.
long *mask_order(const Mask *mk, const double *score, int present, long *cnt);
// The name of the tensor of mask k of layer l ("l0.wh"), for messages.
const char *model_mask_name(const Model *m, int l, int k);
