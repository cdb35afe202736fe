// remask.h: a model moved onto other masks of the same config (pruning, SET/RigL): its
// tensors matched by name, block-sparse ones block by block.
#pragma once
#include "model/model.h"

// dst (laid out for `to`) from src (laid out for `from`): the same config, other masks.
// Tensors are matched by name; block-sparse ones block by block, blocks new in `to` zero.
// Host memory.
void model_remap(const Model *from, const real *src, const Model *to, real *dst);
// The same from and into backend memory (n = from->nparams, to->nparams).
void model_remap_backend(const Model *from, const real *src, const Model *to, real *dst);
// m on other masks, on m's backend: its weights and moving average, blocks new to it zero.
Model *model_remask(const Model *m, const Mask *masks);
