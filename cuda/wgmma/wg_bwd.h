// wg_bwd.h: the backward data step of a plain LSTM layer on Hopper's warpgroup matrix
// instructions (wg_bwd.cu), the twin of wg_fwd.h: bf16, blocks of 32, a batch of a multiple
// of 128 rows, no layer norm. Step t takes dz_{t+1} in a packed image, adds dz_{t+1} W_h to
// the upstream dh_{t+1} and applies the cell's gradient, giving dz_t (packed for step t - 1,
// and row-major for the weights' gradient) and dc_t. Under construction (issue 57):
// `swlstm bench --wgmma` times it and tests/gpu/test_gpu_wgmma.c checks it.
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct WgBwd WgBwd;

// One step's operands, device pointers, as the engine's backward step takes them
// (engine/lstm_seq.cuh SeqStep): dzpk = dz_{t+1} packed (NULL at the window's last step: no
// product), dzpk1 = dz_t packed out; dh = dh_{t+1}, the upstream gradient in [B, H] (the total
// is taken in registers: no later step reads it); dc = dc_{t+1} in, dc_t out [B, H]; actb =
// act_t, a unit's four gates side by side, bf16 [B][H][4]; c0 = c_t, c1 = c_{t+1} [B, H];
// dzb = dz_t in bf16 [B, 4H]; dbpart = dz_t's sums over each 64 rows [B / 64][4H] (NULL:
// none). dc NULL: the carried state's step, dh += dz_{t+1} W_h, its one output (nothing
// else read or written).
typedef struct {
    const void *dzpk;
    void *dzpk1;
    float *dh, *dc;
    const void *actb;
    const float *c0, *c1;
    void *dzb;
    float *dbpart;
} WgBwdStep;

// W_h's mask as lists by block column, host arrays: column j's entries are colptr[j] ..
// colptr[j + 1] - 1, entry p reads block row row[p], and gate g's weights are stored block
// blk[p] + g * gstride of w (device, bf16, 32 x 32 row-major). NULL where the kernel does not
// run the shape (H not a multiple of 32, B not a multiple of 128, no sm_90a device).
WgBwd *wg_bwd_create(const int *colptr, const int *row, const int *blk, long gstride, const void *w, int H, int B);
// The rest run on `stream`, a cudaStream_t (NULL: the backend's, g_cuda.stream).
void wg_bwd_pack_w(WgBwd *b, const void *w, void *stream);  // the weights changed: packs them again
size_t wg_bwd_dzpk_bytes(const WgBwd *b);                    // one packed dz: B * 4H bf16
void wg_bwd_step(const WgBwd *b, const WgBwdStep *s, void *stream);
void wg_bwd_free(WgBwd *b);

#ifdef __cplusplus
}
#endif
