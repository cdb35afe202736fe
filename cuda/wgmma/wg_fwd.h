// wg_fwd.h: the forward time step of a plain LSTM layer on Hopper's warpgroup matrix
// instructions (wg_fwd.cu): bf16, blocks of 32, a batch of a multiple of 128 rows, layer 0's
// input table, no layer norm. Under construction (issue 57): the recurrent engine runs it for
// layer 0's forward with engine = wgmma (engine/lstm_seq_host.cu), `swlstm bench --wgmma`
// times it and tests/gpu/test_gpu_wgmma.c checks it.
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct WgFwd WgFwd;

// One step's operands, device pointers, as the engine's forward step takes them
// (engine/lstm_seq.cuh SeqStep) except h and the bias: h_t arrives in the packed image
// (wg_fwd_pack_h) and h_{t+1} leaves in it too (hpk1) beside its row-major copies; row b's
// input projection plus the bias is row tok[b] of xtab [256, 4H] (the bias folded in once a
// window, not loaded every step); c0 = c_t, c1 = c_{t+1} [B, H]; h1 = h_{t+1} in fp32 and
// hb1 in bf16 [B, H]; actb = the four gate activations of a unit side by side, bf16 [B][H][4].
typedef struct {
    const void *hpk;
    void *hpk1;
    const float *xtab, *c0;
    const int *tok;
    float *c1, *h1;
    void *hb1, *actb;
} WgStep;

// W_h's mask as lists by block row, host arrays: row j's entries are rowptr[j] ..
// rowptr[j + 1] - 1, entry p reads block column col[p], and gate g's weights are stored
// block blk[p] + g * gstride of w (device, bf16, 32 x 32 row-major). NULL where the kernel
// does not run the shape (H not a multiple of 32, B not a multiple of 128, no sm_90a device).
WgFwd *wg_fwd_create(const int *rowptr, const int *col, const int *blk, long gstride, const void *w, int H, int B);
int wg_fwd_runs_here(void);  // the current device runs the step (sm_90a code on an sm_90 GPU)
// The rest run on `stream`, a cudaStream_t (NULL: the backend's, g_cuda.stream).
void wg_fwd_pack_w(WgFwd *f, const void *w, void *stream);  // the weights changed: packs them again
size_t wg_fwd_hpk_bytes(const WgFwd *f);                     // one packed h: B * H bf16
void wg_fwd_pack_h(const WgFwd *f, const void *hb, void *hpk, void *stream);  // row-major bf16 [B, H] in
// xb = the input table xtab [256, 4H] plus the bias [4H] in every row, as WgStep takes it.
void wg_fwd_fold_bias(const WgFwd *f, float *xb, const float *xtab, const float *bias, void *stream);
void wg_fwd_step(const WgFwd *f, const WgStep *s, void *stream);
void wg_fwd_free(WgFwd *f);

#ifdef __cplusplus
}
#endif
