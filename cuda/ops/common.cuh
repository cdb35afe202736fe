// common.cuh: what the CUDA backend's files share: checked calls, the backend state
// (cuBLAS handle, bf16 weight shadow, scratch buffers) and the op entry points.
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

// Which of two values the environment variable `name` holds: 0 for a, 1 for b, -1 where it is
// unset or empty; any other value is a fatal error naming both.
static inline int env_choice(const char *name, const char *a, const char *b) {
    const char *e = getenv(name);
    if (!e || !*e) return -1;
    if (strcmp(e, a) && strcmp(e, b)) die("%s=%s: expected %s or %s", name, e, a, b);
    return strcmp(e, a) ? 1 : 0;
}

void *cuda_scratch(int slot, size_t bytes);
void *cu_alloc(size_t bytes);  // zero-filled device memory (the backend's alloc)

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

// ---- the ops (names and shapes as in backend.h; BF selects bf16 tensor-core math) ----
void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E, cudaStream_t stream);
void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E);  // on g_cuda.stream
void embed_bwd_cuda(real *dtable, const real *dout, const int *tok, int N, int E);
template <bool BF>
void matmul_fwd_cuda(real *y, const real *x, const real *W, const real *bias, int N, int C, int R, int acc);
template <bool BF>
void matmul_bwd_cuda(real *dx, real *dW, real *dbias, const real *dy, const real *x, const real *W,
                     int N, int C, int R);
template <bool BF>
void bsmm_fwd_cuda(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc);
template <bool BF>
void bsmm_bwd_data_cuda(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc);
template <bool BF>
void bsmm_bwd_weight_cuda(real *dvals, const real *dy, const real *x, const BsMat *w, int N);
void lstm_fwd_cuda(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                   const real *bias, const real *ln_gain, int B, int H);
void lstm_bwd_cuda(real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh, const real *dc,
                   const real *act, const real *c, const real *c_prev, const real *z, const real *lnstat,
                   const real *ln_gain, int B, int H);
// The same two on a given stream (the recurrent engine captures them into a graph), and with
// a bf16 copy of their result where hb / dzb is given (what the next product reads).
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
// bsmm_stream.cu: the bf16 forward for few rows (a stream of weights), where it applies.
bool bsmm_stream_takes(const BsMat *w, int N);
void bsmm_stream_fwd(real *y, const real *x, const BsMat *w, const bf16 *wb, int N, int acc);
// dvals += dy^T x over N rows with inputs already in the kernel's type (bf16 when bf).
void bsmm_bwd_weight_typed(real *dvals, const void *dy, const void *x, const BsMat *w, int N, int bf);
template <bool BF>
void *seq_create_cuda(SeqArgs *a);  // the recurrent engine (lstm_seq_host.cu)
template <bool BF>
void seq_fwd_cuda(void *s, int T);
template <bool BF>
void seq_bwd_cuda(void *s, int T);
void seq_free_cuda(void *s);
template <bool BF>
void *gen_create_cuda(const GenArgs *a);  // the sampling loop (gen_host.cu)
void gen_run_cuda(void *g, const int *feed, int nfeed, int nsample, uint64_t rng[4], unsigned char *out, float *logits);
void gen_state_cuda(void *g, real *h, real *c);
void gen_free_cuda(void *g);
const char *gen_path_cuda(void *g);
const char *seq_path_cuda(void *s);
void replay_cuda(const void *owner, int key, int T, void (*body)(void *), void *ctx);
void replay_forget_cuda(const void *owner);
void layernorm_fwd_cuda(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C);
void layernorm_bwd_cuda(real *dx, real *dgain, real *dbias, const real *dy, const real *x, const real *stat,
                        const real *gain, int N, int C);
void norm_act_fwd_cuda(real *u, real *s, real *stat, const real *x, const real *gain, const real *bias, const real *mul,
                       const real *add, int N, int C);
void mul_bwd_cuda(real *da, real *db, const real *dy, const real *a, const real *b, size_t n);
void relu_bwd_cuda(real *dx, const real *dy, const real *y, size_t n);
void gather_blocks_cuda(real *dst, const real *src, const int *from, int n, int bb);
template <bool BF>
void dense_grad_cuda(real *dW, const real *dy, int ldy, int c0, const real *x, int N, int C, int R);
void block_sumsq_cuda(real *sq, const real *W, int R, int C, int bs);
void softmax_xent_cuda(real *loss, real *dlogits, const real *logits, const int *target, int N, int V, real dscale);
void adam_cuda(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a);
double sumsq_cuda(const real *x, size_t n);
void axpy_cuda(real *y, const real *x, real alpha, size_t n);
void ema_cuda(real *avg, const real *p, real decay, size_t n);
void dyn_update_cuda(real *p, const real *g, const real *p0, const real *rms, size_t n, DynArgs a);

// A piece of one output block column's list: entries [beg, end) of its CSR (fwd) or CSC
// (bwd_data) list, piece `rank` of `nparts`; pieces of one column are consecutive.
typedef struct { int ob, beg, end, rank, nparts; } MmPiece;
// Most entries in a piece: long lists (hub nodes of small-world masks) are cut so that no
// CTA walks far longer than the others; the pieces' partial sums are added in a fixed order.
static inline int mm_piece_len(int bs) { return 2048 / bs; }

// Device copies for bsmat_upload and the engine: ints, and n lists (ptr[i]..ptr[i+1]) cut
// into pieces of at most `most` entries, longest list first (cut_pieces: the host array).
int *upload_ints(const int *h, int n);
MmPiece *cut_pieces(const int *ptr, int n, int most, int *npieces);
MmPiece *pieces_to_device(const MmPiece *pc, int n);
void *upload_pieces(const int *ptr, int n, int most, int *npieces);
int count_pieces(const int *ptr, int n, int most);  // how many upload_pieces makes

// bwd_weight groups: group g owns blocks [k0[g], k0[g] + cnt[g]) of block row row[g] (at most
// 256/bs blocks of one row, so they share their dy slab).
typedef struct {
    int n;
    int *row, *k0, *cnt;
} BwGroups;

// bsmat_upload's device copy of the indices (w->dev).
typedef struct {
    int *row_ptr, *col_idx, *col_ptr, *csc_row, *csc_blk;
    // fwd / bwd_data work: each output block column's list cut into pieces (bsmm.cu, MmPiece)
    void *fwd_pieces, *bwd_pieces;
    int fwd_npieces, bwd_npieces;
    // bwd_weight work lists (backend_cuda.cu upload_groups): grp for the cp.async kernel,
    // wgrp for the bulk-copy one; with grp_gates = 4 the rows are the first gate's and a group
    // covers all 4 gates' copies.
    BwGroups grp, wgrp;
    int grp_gates;
} DevBsMat;
