// backend.h: the operations the model is written in. The CPU reference (src/ops/*_cpu.c)
// and the CUDA backend (cuda/*/*.cu) implement the same table; the model never touches
// tensor memory directly, only through these calls.
//
// Conventions (both backends):
// - Pointers to `real` are backend memory (host for CPU, device for CUDA).
// - Activations are row-major [N, features]; within a window N = T*B with row t*B + b.
// - Parameter gradients ACCUMULATE (+=); the trainer zeroes them once per step.
// - Activation outputs are OVERWRITTEN unless an `accumulate` flag says otherwise.
// - Everything is deterministic: the same inputs give the same bits.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "ops/device.h"
#include "sparse/bsmat.h"
#include "ops/route.h"
#include "base/common.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    real lr, beta1, beta2, eps, weight_decay;
    real grad_scale;   // gradients are multiplied by this first (global-norm clipping)
    long step;         // 1-based, for bias correction
} AdamArgs;

// Dynamic evaluation's step (Krause et al. 2018; src/train/dyneval.h): eta, and the decay
// rate lambda / mean(rms) that each element's rms multiplies (the product capped at 1).
typedef struct {
    real eta, lambda_per_rms, eps;
} DynArgs;

// A layer's buffers for the recurrent engine (the Acts buffers of model.h, one layer).
typedef struct {
    int B, T, H;                            // T: the most steps a window runs
    const BsMat *wh;
    const real *wh_vals, *bias, *ln_gain;  // ln_gain NULL: no layer norm
    real *dwh, *dbias, *dln_gain;
    real *z, *act, *lnstat, *h, *c, *dz, *dh, *dc;
    // Layer 0's input projection as a table (model.h input_table): the forward steps add row
    // tok[t*B + b] of xtab [256, 4H] into z_t's row b themselves; xtab NULL: z holds it already.
    const real *xtab;
    const int *tok;
    int wgmma;  // engine = wgmma: the forward and backward steps and dW_h on wgmma where they run the layer (cuda/wgmma)
} SeqArgs;

// A one-layer plain LSTM's or mLSTM's sampling loop (batch 1), for the backend's gen_* ops:
// plain: layer 0's input is row `byte` of xtab (model.h input_table), then the recurrence;
// mLSTM (D > 0): m and a are rows `byte` of mtab, then the D internal steps and the gates
// (mlstm.h); then the head, the draw with temperature, top-k and top-p (src/model/sampler.c),
// and the drawn byte's row next.
typedef struct {
    int H, D;                             // D: the mLSTM's depth, 0 for the plain cell
    const BsMat *wh;                      // [4H, H], gates i, f, g, o
    const real *wh_vals, *bias;           // bias [4H]
    const real *xtab;                     // plain: [256, 4H]
    const real *wo, *bo;                  // the head: [256, H] and [256]
    const BsMat *ws[SW_MAX_DEPTH];        // mLSTM: W_h0 .. W_h(D-1), [H, H] each
    const real *ws_vals[SW_MAX_DEPTH];
    const real *sln[SW_MAX_DEPTH];        // their norms' gain then bias, [2H] each
    const real *gain, *mtab;              // mLSTM: the gates' norm gains [4H]; m then a of each byte [2][256][H]
    double temperature, top_p;
    int top_k;
} GenArgs;

typedef struct Backend {
    const char *name;  // "cpu" or "cuda"
    // ---- memory ----
    void *(*alloc)(size_t bytes);  // zero-filled
    void (*free)(void *p);
    void (*to_device)(void *dst, const void *host_src, size_t bytes);
    void (*to_host)(void *host_dst, const void *src, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    void (*sync)(void);
    void (*bsmat_upload)(BsMat *w);   // gives the backend its copy of w's indices (w->dev)
    void (*bsmat_release)(BsMat *w);
    // The model's flat parameter buffer (n elements): a backend may keep a lower-precision
    // copy of it (bf16) and refresh it in `adam`. The CPU backend ignores it.
    void (*register_params)(real *params, size_t n);
    // An activation buffer that the backend's bf16 products read often: it may keep a bf16
    // copy of x[0..n) that every op writing x updates, so that they need not convert x each
    // time (freed with x). NULL: it keeps none (the CPU and fp32).
    void (*keep_lowp)(real *x, size_t n);

    // ---- embedding ----
    // out[N,E] = table[tok[n], :]
    void (*embed_fwd)(real *out, const real *table, const int *tok, int N, int E);
    // dtable[tok[n], :] += dout[n, :]
    void (*embed_bwd)(real *dtable, const real *dout, const int *tok, int N, int E);

    // ---- dense matmul (nn.Linear): W is [R, C] row-major ----
    // y[N,R] (=|+=) x[N,C] W^T + bias (bias may be NULL)
    void (*matmul_fwd)(real *y, const real *x, const real *W, const real *bias,
                       int N, int C, int R, int accumulate);
    // dx[N,C] = dy W (dx may be NULL); dW[R,C] += dy^T x; dbias[R] += sum_n dy (may be NULL)
    void (*matmul_bwd)(real *dx, real *dW, real *dbias, const real *dy, const real *x,
                       const real *W, int N, int C, int R);

    // ---- block-sparse matmul: W is w->rows x w->cols with values `vals` ----
    // y[N,rows] (=|+=) x[N,cols] W^T
    void (*bsmm_fwd)(real *y, const real *x, const BsMat *w, const real *vals, int N, int accumulate);
    // dx[N,cols] (=|+=) dy[N,rows] W
    void (*bsmm_bwd_data)(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int accumulate);
    // dvals += (dy^T x) restricted to stored blocks; one call sums over all N rows
    void (*bsmm_bwd_weight)(real *dvals, const real *dy, const real *x, const BsMat *w, int N);

    // ---- LSTM cell, gates ordered i, f, g, o in blocks of H ----
    // pre = (ln_gain ? LN_per_gate(z) * ln_gain : z) + bias
    // i,f,o = sigmoid, g = tanh; c = f*c_prev + i*g; h = o*tanh(c)
    // act[B,4H] keeps the activated gates; lnstat[B,8] keeps mean and rstd per gate (if ln_gain).
    void (*lstm_fwd)(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                     const real *bias, const real *ln_gain, int B, int H);
    // dh[B,H], dc[B,H]: gradients arriving at h and c (dc from the next step, may be zero).
    // Writes dz[B,4H] and dc_prev[B,H] (dc_prev may alias dc); dbias, dln_gain accumulate.
    void (*lstm_bwd)(real *dz, real *dc_prev, real *dbias, real *dln_gain,
                     const real *dh, const real *dc, const real *act, const real *c,
                     const real *c_prev, const real *z, const real *lnstat,
                     const real *ln_gain, int B, int H);

    // ---- the recurrent engine: a layer's whole window in a few launches ----
    // seq_create returns a handle, or NULL where this backend or shape runs step by step (the
    // model then calls lstm_fwd/bsmm_fwd per step: the reference). With a handle, a->z,
    // a->act and a->dz come back set: the engine owns them (seq_free frees them), as it alone
    // knows whether anything writes them in fp32. seq_fwd runs T steps as
    // that loop does (z holds the input projection on entry). seq_bwd runs them backward,
    // accumulates dwh, dbias, dln_gain, and leaves the carried state's gradients in dh
    // block 0 and dc. NULL entries: the backend has no engine.
    void *(*seq_create)(SeqArgs *a);
    void (*seq_fwd)(void *s, int T);
    void (*seq_bwd)(void *s, int T);
    void (*seq_free)(void *s);
    RecurPath (*seq_route)(void *s);  // how the engine runs the window (route.h)
    // ---- the sampling loop on the device ----
    // gen_create returns a handle with a zero state, or NULL where this backend or shape has
    // no device loop (the caller then samples with infer_step). gen_run feeds the host bytes
    // feed[0..nfeed) (nfeed >= 1), then draws nsample bytes into out, feeding back every drawn
    // byte but the last; rng (rng.h) is drawn from and advanced as sample_byte would. logits
    // (NULL: not kept) receives the host logits after each step that ran: nfeed + nsample - 1
    // rows, nfeed without draws. gen_state copies the state (h, c: host [H] each) out.
    void *(*gen_create)(const GenArgs *a);
    void (*gen_run)(void *g, const int *feed, int nfeed, int nsample, uint64_t rng[4], unsigned char *out,
                    float *logits);
    void (*gen_state)(void *g, real *h, real *c);
    void (*gen_free)(void *g);
    void (*gen_route)(void *g, Route *r);  // how the loop runs (route.h: sample -v, bench --sample)
    // ---- a window's ops in one launch (the mlstm's steps) ----
    // replay runs body(ctx), whose ops must be the same on the same buffers at every call with
    // the same (owner, key, T): the backend may record them once and replay the record (the
    // CUDA backend: a graph; replay.cu says when it records). replay_forget(owner) drops the
    // records before owner's buffers are freed. NULL: the model calls body itself.
    void (*replay)(const void *owner, int key, int T, void (*body)(void *ctx), void *ctx);
    void (*replay_forget)(const void *owner);
    // ---- the mlstm's steps (src/model/mlstm_step.c) ----
    // y[N,C] = (x - mean) * rstd * gain + bias over each row's C values; stat[N,2] = (mean, rstd).
    void (*layernorm_fwd)(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C);
    // dy: gradient at y. Writes dx[N,C] (may alias dy); dgain[C], dbias[C] accumulate. Either part
    // may be left: dx NULL (no rows), or dgain and dbias NULL (no columns).
    void (*layernorm_bwd)(real *dx, real *dgain, real *dbias, const real *dy, const real *x,
                          const real *stat, const real *gain, int N, int C);
    // The mlstm's internal step after its product (mlstm.h), over N rows of C: y = the layer
    // norm above of x; then u = y * mul where mul is given (y kept in s for the backward), else
    // u = max(0, y + add) (add may be NULL; s unused).
    void (*norm_act_fwd)(real *u, real *s, real *stat, const real *x, const real *gain, const real *bias,
                         const real *mul, const real *add, int N, int C);
    // The backward of its activation: da = dy * b, db = dy * a (either may alias dy) for u = a * b
    void (*mul_bwd)(real *da, real *db, const real *dy, const real *a, const real *b, size_t n);
    // ... and dx = dy where y > 0, else 0 (dx may alias dy) for y = max(0, x + add)
    void (*relu_bwd)(real *dx, const real *dy, const real *y, size_t n);

    // ---- weights moved onto other masks (src/model/remask.c model_remap) ----
    // Block q of dst (n blocks of bb values) = block from[q] of src, zero where from[q] < 0;
    // from: backend ints [n].
    void (*gather_blocks)(real *dst, const real *src, const int *from, int n, int bb);
    // ---- RigL's grow scores (src/model/grow_scores.c): block norms of dense weight gradients ----
    // dW[R,C] = dy[:, c0 : c0+R]^T x[N,C] (overwritten), row n of dy at dy + n*ldy: a score,
    // so in whatever precision is fastest (the CUDA backend: TF32 or bf16 tensor cores).
    void (*dense_grad)(real *dW, const real *dy, int ldy, int c0, const real *x, int N, int C, int R);
    // sq[(R/bs) * (C/bs)] = the squared norm of each bs x bs block of W[R,C], block-row major.
    void (*block_sumsq)(real *sq, const real *W, int R, int C, int bs);

    // ---- loss ----
    // loss[n] = -log softmax(logits[n])[target[n]] (nats). If dlogits is non-NULL it gets
    // (softmax - onehot) * dscale; dlogits may alias logits.
    void (*softmax_xent)(real *loss, real *dlogits, const real *logits, const int *target,
                         int N, int V, real dscale);

    // ---- optimiser and reductions ----
    void (*adam)(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a);
    double (*sumsq)(const real *x, size_t n);        // sum of squares, deterministic order
    void (*axpy)(real *y, const real *x, real alpha, size_t n);  // y += alpha*x
    void (*ema)(real *avg, const real *p, real decay, size_t n);  // avg = decay*avg + (1-decay)*p
    // Dynamic evaluation (ops/dyn_update.h): p moves against g scaled by 1/(rms + eps) and
    // back towards the trained weights p0; n elements.
    void (*dyn_update)(real *p, const real *g, const real *p0, const real *rms, size_t n, DynArgs a);
    // Its statistics: acc[i] += g[i]^2 in double, n elements (acc from alloc, like every array).
    void (*sq_acc)(double *acc, const real *g, size_t n);
} Backend;

const Backend *backend_cpu(void);
// Returns the CUDA backend, or dies with a clear message when built without CUDA or
// when no GPU is usable.
const Backend *backend_cuda(Precision precision);
const Backend *backend_get(Device device, Precision precision);
// Creates the process's CUDA context and loads cuBLAS (a few tenths of a second), so that a
// thread can do it while the caller reads a checkpoint; errors are left for backend_cuda to
// report. Nothing without CUDA.
void backend_cuda_warm(void);
// The CUDA devices this process sees (0 without CUDA or without a device), and binding the
// calling thread to device k of them: its later CUDA calls, and the per-thread state its first
// backend_cuda makes, go there (one thread a GPU: multi-GPU training, eval --dynamic --gpus).
int backend_cuda_devices(void);
void backend_cuda_bind(int device);

#ifdef __cplusplus
}
#endif
