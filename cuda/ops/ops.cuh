// ops.cuh: the ops other cuda folders run themselves (the engine on its stream, into its
// graphs), and the cell's device activations. The table's entry points are in
// backend/backend_cuda.cuh.
#pragma once
#include "base/launch.cuh"
#include "base/lowp.cuh"
#include "ops/backend.h"

// The cell's activations from the fast exponential (ex2.approx, about 2 ulp): a few
// instructions where expf and tanhf take dozens (the engine's epilogue is issue-bound). Both
// saturate cleanly (exp overflows to inf, giving 0 and 1); 1e-7-level differences from the
// CPU's exp and tanh.
__device__ inline float sigm(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }
__device__ inline float tnh(float x) { return 1.f - __fdividef(2.f, __expf(2.f * x) + 1.f); }

// Column sums of a row-major [N, R] matrix: out[r] += sum_n in[n][r], n in order.
void colsum_acc(real *out, const real *in, int N, int R, cudaStream_t stream = g_cuda.stream);
// Scratch that colsum_acc needs for N rows (allocate before a stream capture).
void colsum_reserve(int N, int R);

void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E, cudaStream_t stream);
// The cell on a given stream, with a bf16 copy of its result where hb / dzb is given and its
// slab image where so has one (what the next product reads; dz's with the layer norm alone).
void lstm_fwd_on(cudaStream_t s, real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                 const real *bias, const real *ln_gain, int B, int H, bf16 *hb = NULL, SlabOut so = SlabOut{NULL, 0});
void lstm_bwd_on(cudaStream_t s, real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh,
                 const real *dc, const real *act, const real *c, const real *c_prev, const real *z,
                 const real *lnstat, const real *ln_gain, int B, int H, bf16 *dzb = NULL, SlabOut so = SlabOut{NULL, 0});
// Column-major C[m,n] = A B (ops ta, tb) + beta C on g_cuda.blas (its current stream): bf16
// operands on the tensor cores when BF, else plain fp32 (no TF32); fp32 C.
template <bool BF>
void blas_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, float beta, real *Cm, int ldc);
