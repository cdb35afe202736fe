// prune.h: block pruning of a trained model. Each block-sparse matrix keeps the blocks of
// largest norm (the four gates of a W_h or W_x share one mask, so a block's norm is taken
// over its four copies); every block row and column keeps at least one block.
#pragma once
#include "model/model.h"

// New masks for m (model_create_with_masks's order) keeping round(density * blocks) of each
// matrix's current blocks, at least one, from the weights params (host memory, m's layout).
// Dies with a one-line message if density cannot keep a block in every row and column.
void model_prune_masks(const Model *m, const real *params, double density, Mask *out);
// dst (laid out for `to`) from src (laid out for `from`): the same config, the masks of `to`
// a subset of those of `from`. Tensors are matched by name; block-sparse ones block by block.
void model_remap(const Model *from, const real *src, const Model *to, real *dst);
