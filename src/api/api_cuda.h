// api_cuda.h: the binding's device side (cuda/api/api_cuda.cu); the CPU build has none.
#pragma once
#include "sparse/bsmat.h"
#ifdef __cplusplus
extern "C" {
#endif

// Makes this thread's CUDA state on `device` (the process keeps to one device).
void api_cuda_init(int device);
void api_cuda_upload(BsMat *w);   // the layout's device indices (w->dev)
void api_cuda_release(BsMat *w);
// op 0 fwd, 1 bwd_data, 2 bwd_weight (a, b as in swlstm_api.h) on `stream`, inputs bf16 when
// bf, out bf16 when out_bf (fwd and bwd_data; bwd_weight's is fp32).
void api_cuda_product(int op, int bf, void *out, int out_bf, const void *a, const void *b, const BsMat *w, int N,
                      int acc, void *stream);

#ifdef __cplusplus
}
#endif
