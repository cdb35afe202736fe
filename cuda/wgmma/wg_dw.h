// wg_dw.h: the window's weight gradient of a gate-stacked W_h on Hopper's warpgroup matrix
// instructions (wg_dw.cu), the wgmma twin of bsmm_bwd_weight's bulk-copy kernel: dvals +=
// dz^T h over N rows for every stored block of all four gates. Under construction (issue 57):
// engine = wgmma runs it for the layers whose steps run on wgmma; tests/gpu/test_gpu_wgmma.c
// checks it.
#pragma once
#include "base/common.h"
#include "sparse/bsmat.h"
#ifdef __cplusplus
extern "C" {
#endif

// dz [N, 4H] and h [N, H]: bf16 row-major (device); w: block 32, four gates stacked, uploaded
// to the CUDA backend; on `stream` (a cudaStream_t, NULL: the backend's). 0 where it does not
// run (!wg_dw_takes(w)): nothing was done.
int wg_dw(real *dvals, const void *dz, const void *h, const BsMat *w, int N, void *stream);
// Whether wg_dw runs w's shape here (its callers convert dz and h to bf16 only if so).
int wg_dw_takes(const BsMat *w);

#ifdef __cplusplus
}
#endif
