// common.cuh: what the CUDA backend's files share: checked calls, launches, the backend state
// (cuBLAS handle, bf16 weight shadow, scratch buffers, twins) and the few ops one cuda folder
// runs for another (the engine's cell and products). The ops' table entry points are in
// backend/backend_cuda.cuh, the block-sparse device layout in bsmm/bsmat_dev.cuh.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <string.h>
#include <utility>
#include "ops/backend.h"
#include "base/common.h"

typedef __nv_bfloat16 bf16;

// Every CUDA / cuBLAS call goes through these: the message names the call, where it was
// made and what to try.
void cuda_fail(const char *what, const char *err, const char *file, int line, const char *hint);
const char *cuda_hint(cudaError_t e);
#define CUDA_CHECK(call)                                                                   \
    do { cudaError_t e_ = (call);                                                          \
         if (e_ != cudaSuccess) cuda_fail(#call, cudaGetErrorString(e_), __FILE__, __LINE__, cuda_hint(e_)); } while (0)
#define CUBLAS_CHECK(call)                                                                 \
    do { cublasStatus_t s_ = (call);                                                       \
         if (s_ != CUBLAS_STATUS_SUCCESS) cuda_fail(#call, cublasGetStatusString(s_), __FILE__, __LINE__, \
             "check the matrix shapes; out of memory shows as ALLOC_FAILED"); } while (0)
// After a kernel launch: catches bad launch configurations at once.
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// Programmatic dependent launch (sm_90): a kernel launched with the attribute
// cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it
// in the stream finishes, once every CTA of that one has called pdl_trigger (or exited).
// It must call pdl_wait before it reads anything its predecessor writes (or writes
// anything that one reads): the wait returns when the predecessor has completed and its
// memory is visible.
__device__ inline void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ inline void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// kernel<<<grid, block, smem, stream>>>(args...) with one launch attribute: attr_pdl (the
// above, on or off) or attr_cooperative (every CTA resident at once, or the launch fails).
template <typename... P, typename... A>
void launch_attr(cudaLaunchAttribute attr, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                 A &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...));
}
static inline cudaLaunchAttribute attr_pdl(bool on) {
    cudaLaunchAttribute a = {};
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = on;
    return a;
}
// The per-step ops' kernels (the mlstm's ~40 a time step) launch programmatically dependent
// (launch_pdl) and start with pdl_enter: each waits for the op before it, then lets the next
// one launch, so that one's launch overlaps this one's work instead of following its end
// (a faster step op by op; inside a replayed graph it gains nothing).
__device__ inline void pdl_enter() {
    pdl_wait();
    pdl_trigger();
}
static inline cudaLaunchAttribute attr_cooperative() {
    cudaLaunchAttribute a = {};
    a.id = cudaLaunchAttributeCooperative;
    a.val.cooperative = 1;
    return a;
}

enum { SCRATCH_WBF16, SCRATCH_XBF16, SCRATCH_DYBF16, SCRATCH_PART, SCRATCH_COUNT, SCRATCH_SUMSQ, SCRATCH_COLSUM, SCRATCH_EMBED, SCRATCH_N };

typedef struct {
    int nsm;                 // multiprocessors
    cublasHandle_t blas;
    real *params;            // the registered flat parameter buffer (device)
    size_t nparams;
    bf16 *shadow;            // bf16 copy of params, NULL until a bf16 backend registers them
    void *scratch[SCRATCH_N];  // grown on demand (zero-filled when allocated), see cuda_scratch
    size_t scratch_bytes[SCRATCH_N];
    // The stream every op launches on: 0 (the legacy default stream, which every blocking
    // stream waits for) except while replay.cu records a window's ops into a graph.
    cudaStream_t stream;
    // Bumped whenever a buffer that a recorded graph may have baked in moves (scratch grown,
    // a twin or the weight shadow changed): replay.cu records such a graph again.
    unsigned long gen;
} CudaState;
// Per thread: `gpus = N` trains one rank per thread, each on its own device.
extern thread_local CudaState g_cuda;

// An op's kernel on g_cuda.stream, programmatically dependent (its kernel starts with pdl_enter).
template <typename... P, typename... A>
void launch_pdl(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A &&...args) {
    launch_attr(attr_pdl(true), kernel, grid, block, smem, g_cuda.stream, std::forward<A>(args)...);
}

void *cuda_scratch(int slot, size_t bytes);
void *cu_alloc(size_t bytes);  // zero-filled device memory (the backend's alloc)
void cu_free(void *p);         // the backend's free

// The cell's activations from the fast exponential (ex2.approx, about 2 ulp): a few
// instructions where expf and tanhf take dozens (the engine's epilogue is issue-bound). Both
// saturate cleanly (exp overflows to inf, giving 0 and 1); 1e-7-level differences from the
// CPU's exp and tanh.
__device__ inline float sigm(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }
__device__ inline float tnh(float x) { return 1.f - __fdividef(2.f, __expf(2.f * x) + 1.f); }

static inline int cdiv(long a, long b) { return (int)((a + b - 1) / b); }
static inline unsigned grid_for(size_t n, int threads) {
    size_t g = (n + threads - 1) / threads;
    return (unsigned)(g < 65535u * 16 ? (g ? g : 1) : 65535u * 16);
}

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
// y[i] = v, and its bf16 twin's (yb: twin_out's, may be NULL).
__device__ inline void put(real *y, bf16 *yb, size_t i, float v) {
    y[i] = v;
    if (yb) yb[i] = __float2bfloat16_rn(v);
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

// Column sums of a row-major [N, R] matrix: out[r] += sum_n in[n][r], n in order.
void colsum_acc(real *out, const real *in, int N, int R, cudaStream_t stream = g_cuda.stream);
// Scratch that colsum_acc needs for N rows (allocate before a stream capture).
void colsum_reserve(int N, int R);

// ---- ops the engine runs itself (on its stream, into its graphs) ----
void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E, cudaStream_t stream);
// The cell on a given stream, with a bf16 copy of its result where hb / dzb is given (what
// the next product reads).
void lstm_fwd_on(cudaStream_t s, real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                 const real *bias, const real *ln_gain, int B, int H, bf16 *hb = NULL);
void lstm_bwd_on(cudaStream_t s, real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh,
                 const real *dc, const real *act, const real *c, const real *c_prev, const real *z,
                 const real *lnstat, const real *ln_gain, int B, int H, bf16 *dzb = NULL);
// Column-major C[m,n] = A B (ops ta, tb) + beta C on g_cuda.blas (its current stream): bf16
// operands on the tensor cores when BF, else plain fp32 (no TF32); fp32 C.
template <bool BF>
void blas_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, float beta, real *Cm, int ldc);
