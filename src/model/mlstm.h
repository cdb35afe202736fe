// mlstm.h: the deep-update mLSTM layer (the paper's cell, openai/blocksparse examples/lstm):
//   m = lin_m(x), a = lin_a(x)                       dense projections of the layer input
//   u0 = lin_h0(h) * m; u1 = relu(lin_h1(u0) + a); uj = relu(lin_hj(u(j-1))), j = 2..D-1
//   i, f, o, g = lin_*(u(D-1)); c = sig(f) c + sig(i) tanh(g); h = sig(o) tanh(c)
// where lin_p(v) = LayerNorm(W_p v) * gain_p + bias_p, each W_hj block-sparse with its own mask
// and the four gate matrices sharing one (the gate part is the LSTM cell with layer norm).
#pragma once
#include "model/model.h"

typedef struct MlstmActs MlstmActs;

// Buffers for N = B*T rows (for_training adds the backward's).
MlstmActs *mlstm_acts_create(const Model *m, int l, int B, int T, int for_training);
void mlstm_acts_free(const Model *m, MlstmActs *ml);
// A window of T steps of layer l from input x [T*B, in] (layer 0: from the bytes a->tok, x
// unused), model_forward's layer step.
void mlstm_layer_forward(Model *m, Acts *a, int l, const real *x, int T);
// Its backward (model_backward's layer step), same conventions as the LSTM layer.
void mlstm_layer_backward(Model *m, Acts *a, int l, int T);
// The operands of the weight gradient dy^T x of layer l's mask k (model_create_with_masks's
// order: the gates', then W_h0 .. W_h(D-1)) after a backward of the window: [N, rows] and [N, cols].
void mlstm_grad_operands(const Model *m, const Acts *a, int l, int k, const real **dy, const real **x);
// Whether the backend replays each window's time steps as one launch per direction
// (backend.h replay; `engine = steps` turns it off).
int mlstm_replays(const Model *m);
// One inference step of layer l on rows [0, n) (infer_step), input x [n, in].
void mlstm_infer_layer(Model *m, Infer *s, int l, const real *x, int n);
// Layer 0's m then a for each of the 256 bytes, tab [2][256][H] (backend memory): the
// device sampling loop's input table.
void mlstm_byte_table(Model *m, real *tab);
