// grow_scores.h: RigL's grow scores (Evci et al. 2020): for each block-sparse matrix, the block
// norms of its dense gradient dY^T X over a window, at the blocks it has and at those it lacks.
// dY and X are the matrix's output gradient and input, which the sparse model's backward
// keeps, so no model on full masks is run: each matrix's gradient is made a chunk of block
// rows at a time in backend memory and only its block norms come back.
#pragma once
#include "model/model.h"

// After model_forward and model_backward of m on window a: scores[i] for mask i
// (model_create_with_masks's order) gets the squared block norms [nr * nc] of its gradient,
// over the gate copies (as model_block_norms), NULL where m has none; the caller frees them.
// sum (NULL alone) adds a backend buffer over data-parallel ranks in place, so that the scores
// are those of the summed gradient on every rank.
void model_grow_scores(const Model *m, const Acts *a, void (*sum)(real *buf, size_t n), double **scores);
