// wg_mm.h: the block-sparse products fwd and bwd_data (bsmm.cu's, backend.h bsmm_fwd and
// bsmm_bwd_data) of bf16 block-32 matrices on Hopper's warpgroup matrix instructions
// (wg_mm.cu), for 128 rows or more on an sm_90 GPU, and bwd_weight of a gate-stacked square
// one (wg_dw.h); elsewhere they are bsmm.cu's.
#pragma once
#include "base/common.h"
#include "sparse/bsmat.h"

template <bool BF>
void wg_mm_fwd(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc);
template <bool BF>
void wg_mm_bwd_data(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc);
template <bool BF>
void wg_mm_bwd_weight(real *dvals, const real *dy, const real *x, const BsMat *w, int N);
