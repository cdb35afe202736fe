// lowp.cuh: bf16 copies of fp32 device buffers: the weights' shadow (shadow.cu), activations'
// twins (twins.cu) and conversions, and how a kernel takes its operands in precision BF.
#pragma once
#include "base/slab.cuh"
#include "base/state.cuh"

// want_shadow: the bf16 backend registers params (and keeps a shadow); fp32 only records the range.
void register_params_cuda(real *params, size_t n, int want_shadow);
// Keeps the bf16 shadow equal to params over [p, p+n) if that range overlaps them.
void shadow_refresh(const real *p, size_t n);
// bf16 weights for vals[n]: the shadow when vals lies in the registered params, else a
// converted copy in scratch (tests and benches pass their own weight buffers; kernels
// also need 16-byte alignment).
const bf16 *weights_bf16(const real *vals, size_t n);
void to_bf16(bf16 *dst, const real *src, size_t n, cudaStream_t stream = g_cuda.stream);
// bf16 activations for x[n] (twins.cu): the registered bf16 twin of the buffer holding x (the
// engine's copies of h and dz, current after its last window), else a copy in scratch `slot`.
const bf16 *acts_bf16(const real *x, size_t n, int slot);
const bf16 *twin_in(const real *x, size_t n);  // the registered twin's span over x[0..n), or NULL
void twin_register(const real *f, const bf16 *b, size_t n);
void twin_forget(const real *f);  // (freeing a twin that keep_lowp made)
// keep_lowp (backend.h): a bf16 twin of x[0..n) that this file's writers keep current.
void keep_lowp_cuda(real *x, size_t n);
void twin_release(const real *f);                   // frees f's twin of keep_lowp's, if any
bf16 *twin_out(const real *y, size_t n);            // where a write of y[0..n) also goes in bf16, or NULL
void twin_none(const real *y, size_t n, const char *op);  // dies where y has a twin op would leave stale
void twin_refresh(const real *p, size_t n);         // after a memory op wrote p[0..n)
// A writer of y's rows x cols values that can write them as slabs too (base/slab.cuh): where
// y lies in a twin of keep_lowp's (rows a multiple of 128, cols of 32), where to put them; that
// image then serves twin_slab_in(y, rows, cols) until a write over it leaves it stale.
struct SlabOut twin_slab_out(const real *y, int rows, int cols);
const void *twin_slab_in(const real *x, int rows, int cols);  // the current image of x's rows x cols, or NULL
void twin_slabs_drop(void);  // every image stale (replay.cu: ops that run unseen, in a graph)
// y[i] = v, and its bf16 twin's (yb: twin_out's, may be NULL).
__device__ inline void put(real *y, bf16 *yb, size_t i, float v) {
    y[i] = v;
    if (yb) yb[i] = __float2bfloat16_rn(v);
}
// Two floats as a bf16 pair's bits, lo first in memory; four (a unit's gate activations side
// by side, SeqStep actb) as two pairs, and back.
__device__ inline uint32_t bf16x2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}
__device__ inline uint2 bf16x4(float i, float f, float g, float o) { return make_uint2(bf16x2(i, f), bf16x2(g, o)); }
__device__ inline float4 bf16x4_unpack(uint32_t lo, uint32_t hi) {
    return make_float4(__uint_as_float(lo << 16), __uint_as_float(lo & 0xffff0000u), __uint_as_float(hi << 16),
                       __uint_as_float(hi & 0xffff0000u));
}
// A kernel's or product's operands in precision BF: fp32 as they are; in bf16 the weights'
// shadow (weights_bf16) and activations' twin or copy in scratch `slot` (acts_bf16).
template <bool BF>
inline const void *weight_operand(const real *w, size_t n) {
    return BF ? (const void *)weights_bf16(w, n) : (const void *)w;
}
template <bool BF>
inline const void *act_operand(const real *x, size_t n, int slot) {
    return BF ? (const void *)acts_bf16(x, n, slot) : (const void *)x;
}
