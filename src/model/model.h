// model.h: the block-sparse LSTM language model, written once on top of a Backend.
// Embedding 256 x E -> L LSTM layers of H -> dense head H x 256 -> softmax. The layers are
// plain LSTM cells or (cell = mlstm) the paper's deep-update mLSTM cells (mlstm_step.c).
#pragma once
#include "ops/backend.h"
#include "sparse/bsmat.h"
#include "model/config.h"
#include "sparse/mask.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;   // e.g. "l1.wh"
    size_t off, n;      // offset into the flat parameter buffer, element count
    int decay;          // weight decay applies (matrices only)
} ParamTensor;

typedef struct {
    int in;             // input width: E for layer 0, H above
    int sparse_x;       // W_x block-sparse (layers above 0)
    Mask mask_h, mask_x;
    BsMat wh, wx;       // wx unused when !sparse_x
    size_t off_wx, off_wh, off_b, off_g;  // off_g only with layer_norm
    // mlstm: wx is dense [2H, in] (W_m over W_a) with layer norms off_xln = [gain_m, bias_m,
    // gain_a, bias_a]; internal step j has W_hj (ws[j], its own mask) and off_sln[j] = [gain, bias];
    // wh holds the four gates on one mask, off_g and off_b their layer-norm gains and biases.
    Mask mask_s[SW_MAX_DEPTH];
    BsMat ws[SW_MAX_DEPTH];
    size_t off_xln, off_ws[SW_MAX_DEPTH], off_sln[SW_MAX_DEPTH];
} Layer;

typedef struct Model {
    Config cfg;
    const Backend *be;
    int E, H, L, bs, ln;
    int mlstm, D;       // cell = mlstm and its depth (D internal steps); ln is then 1
    Layer layer[SW_MAX_LAYERS];
    size_t off_emb, off_wo, off_bo;
    ParamTensor tensor[4 + (6 + 2 * SW_MAX_DEPTH) * SW_MAX_LAYERS];
    int ntensor;
    size_t nparams;     // stored (trained) parameters
    double dense_equiv; // parameters of the same model with dense masks
    real *params, *grads;  // backend memory, nparams each
    real *ema;             // moving average of params (cfg.ema > 0, else NULL), kept by the trainer
    // Called by model_backward as gradients become final: every gradient at offset >= off is
    // (the head, then each layer from the top, then the embedding at 0), so a data-parallel
    // trainer can start summing them across ranks while backward goes on. NULL: not called.
    void (*grads_ready)(void *ctx, size_t off);
    void *grads_ready_ctx;
} Model;

// Builds masks from cfg (sparsity, mask_seed), allocates and initialises the parameters from
// cfg->seed. Initial values are drawn on the host, so every backend starts from the same weights.
Model *model_create(const Config *cfg, const Backend *be);
// Same, with the masks given, model_masks_per_layer(cfg) per layer: W_h (the gates), W_x
// (ignored for layer 0 and for mlstm layers), then for mlstm W_h0 .. W_h(D-1). The model keeps
// copies. Used where a run starts from masks of its own (--init_from, a resume's checkpoint).
Model *model_create_with_masks(const Config *cfg, const Backend *be, const Mask *masks);
// The same with every parameter (and the moving average) zero, for a caller that fills them
// (model_remask, loading a checkpoint's weights): it draws nothing.
Model *model_create_blank(const Config *cfg, const Backend *be, const Mask *masks);
int model_masks_per_layer(const Config *cfg);
// Mask k of layer l in model_create_with_masks's order, with its matrix and its tensor's
// offset (w, off may be NULL); NULL where the layer has none (the dense W_x of layer 0 and of
// mlstm layers).
const Mask *model_layer_mask(const Model *m, int l, int k, const BsMat **w, size_t *off);
// The masks cfg draws (sparsity, input_sparsity, mask_seed) in that order; returns their count.
// A checkpoint's masks differ from them once pruned.
int model_draw_masks(const Config *cfg, Mask *masks);
#define SW_MAX_MASKS (SW_MAX_LAYERS * (2 + SW_MAX_DEPTH))
// Parameters of the model that cfg and masks (model_create_with_masks's order) describe;
// masks NULL: every mask dense (model_dense_params).
double model_param_count(const Config *cfg, const Mask *masks);
double model_dense_params(const Config *cfg);
// Mask seeds per layer and matrix, so that users can rebuild any mask with `swlstm mask`.
uint64_t model_mask_seed(long mask_seed, int layer, int is_input);
// The mask seed of internal step j of an mlstm layer (`swlstm mask --depth` builds these).
uint64_t model_step_mask_seed(long mask_seed, int layer, int step);
void model_free(Model *m);
const ParamTensor *model_tensor(const Model *m, const char *name);  // NULL if absent
// The block-sparse matrix a parameter tensor holds, or NULL (a dense one).
const BsMat *model_tensor_bsmat(const Model *m, const ParamTensor *t);
// A dense tensor's shape: matrices [rows, cols] (returns 2), everything else a vector (1).
int model_tensor_shape(const Model *m, const ParamTensor *t, int64_t *shape);

// ---- training window (T steps of B streams) ----
typedef struct {
    int B, T;
    int T_run;                         // steps of the last model_forward (<= T)
    int *tok, *tgt;                    // backend ints [T*B]
    real *xtab, *dxtab, *dembx;        // input_table: [256, 4H] and its gradient; Emb's share [256, E]
    real *z[SW_MAX_LAYERS], *dz[SW_MAX_LAYERS];      // [T*B, 4H]
    real *act[SW_MAX_LAYERS];                        // [T*B, 4H]
    real *lnstat[SW_MAX_LAYERS];                     // [T*B, 8] (layer_norm only)
    real *h[SW_MAX_LAYERS], *c[SW_MAX_LAYERS];       // [(T+1)*B, H]; block 0 = carried state
    real *dh[SW_MAX_LAYERS];                         // [(T+1)*B, H]; block 0 = grad of carried h
    real *dc[SW_MAX_LAYERS];                         // [B, H] running; ends as grad of carried c
    real *logits;                                    // [T*B, 256] (becomes dlogits)
    real *loss;                                      // [T*B]
    real *loss_host;                                 // host copy of loss
    void *seq[SW_MAX_LAYERS];                        // the backend's recurrent engine, or NULL
    struct MlstmActs *ml[SW_MAX_LAYERS];             // mlstm layers' own buffers (mlstm_step.c)
} Acts;

Acts *acts_create(const Model *m, int B, int T);
void acts_free(const Model *m, Acts *a);
// Which recurrent path a window runs: the fused engine or the per-step ops.
Route acts_route(const Model *m, const Acts *a);  // each layer's recurrent path (route.h)
// Whether cfg asks for the backend's recurrent engine (lstm cell only): anything but `steps`
// (acts.c: `auto` takes it in both precisions).
int engine_wanted(const Config *cfg);
// Whether layer 0's input projection is a table of the 256 bytes' rows (acts.c), and the
// table itself: xtab [256, 4H] = Emb W_x^T from the current weights (model_step.c).
int input_table(const Model *m);
void input_table_fwd(const Model *m, real *xtab);
// The window a of `old` made over for m, the same config on other masks (model_remask): its
// buffers and carried state stay; what the backend made for the old masks and weights (the
// engine's lists and graphs, recorded mlstm windows) is made anew.
void acts_remask(const Model *old, const Model *m, Acts *a);
// Zeroes the carried state (h_0, c_0) of every layer.
void acts_reset_state(const Model *m, Acts *a);
// Moves h_T, c_T into h_0, c_0 for the next window (truncated BPTT).
void acts_carry_state(const Model *m, Acts *a);

// tok/tgt are host ints [T*B] (row t*B+b); T may be below a->T (a shorter last window).
// Returns the mean loss in nats over the T*B predictions.
double model_forward(Model *m, Acts *a, const int *tok, const int *tgt, int T);
// Needs model_forward on the same window first. Accumulates into m->grads (zero them first)
// the gradient of the mean loss; leaves the gradients of the carried state in a->dh[l]
// block 0 and a->dc[l].
void model_backward(Model *m, Acts *a, int T);

// ---- step-by-step inference (sampling, features) ----
typedef struct {
    int maxB;
    int *tok;
    real *x0, *z, *act, *lnstat, *logits, *loss;
    real *xtab;                                          // input_table: built at infer_create
    real *h[SW_MAX_LAYERS], *c[SW_MAX_LAYERS], *c_prev;  // [maxB, H]
    real *hsum[SW_MAX_LAYERS];                           // sum of h over steps (track_mean)
    int track_mean;
    struct MlstmActs *ml;                                // mlstm step buffers, shared by the layers
} Infer;

// The weights must stay as they are for the Infer's life (it keeps layer 0's input table).
Infer *infer_create(const Model *m, int maxB, int track_mean);
void infer_free(const Model *m, Infer *s);
void infer_reset(const Model *m, Infer *s);  // zero state and sums of all rows
// Advances rows [0, n) by one byte each (tok: host ints [n]); rows >= n keep their state
// untouched. If logits_out is non-NULL it receives host logits [n, 256].
void infer_step(Model *m, Infer *s, const int *tok, int n, float *logits_out);
// Copies rows [0, n) of a state of layer l to host floats [n, H]: which = 'h', 'c' or 's' (hsum).
void infer_get(const Model *m, const Infer *s, int l, char which, int n, float *out);

#ifdef __cplusplus
}
#endif
