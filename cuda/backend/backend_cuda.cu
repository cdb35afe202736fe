// backend_cuda.cu: the top of cuda/: the CUDA backend table (twin of src/ops/backend_cpu.c),
// device setup and memory operations. The ops live in cuda/ops, cuda/bsmm, cuda/wgmma and cuda/engine
// (backend_cuda.cuh names their entry points); the device copy of block-sparse indices in
// cuda/bsmm/bsmat_dev.cu; the state, memory and bf16 copies they all use in cuda/base.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend_cuda.cuh"
#include "wgmma/wg_mm.h"

static_assert(sizeof(real) == 4, "the CUDA backend computes in float");

// ---- memory (cu_alloc and cu_free: base/state.cu) ----
static void cu_to_device(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    shadow_refresh((const real *)dst, bytes / sizeof(real));
    twin_refresh((const real *)dst, bytes / sizeof(real));
}
static void cu_to_host(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
static void cu_copy(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    shadow_refresh((const real *)dst, bytes / sizeof(real));
    twin_refresh((const real *)dst, bytes / sizeof(real));
}
static void cu_zero(void *p, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemset(p, 0, bytes));
    shadow_refresh((const real *)p, bytes / sizeof(real));
    twin_refresh((const real *)p, bytes / sizeof(real));
}
static void cu_sync(void) { CUDA_CHECK(cudaDeviceSynchronize()); }

static void cu_register_fp32(real *params, size_t n) { register_params_cuda(params, n, 0); }
static void cu_register_bf16(real *params, size_t n) { register_params_cuda(params, n, 1); }

// ---- device setup ----
// At exit, the main thread's handle, scratch and shadow go back, so that compute-sanitizer's
// leak check sees only real leaks. Errors are ignored: the process is ending anyway.
static void cuda_release(void) {
    for (int i = 0; i < SCRATCH_N; i++) cudaFree(g_cuda.scratch[i]);
    cudaFree(g_cuda.shadow);
    if (g_cuda.blas) cublasDestroy(g_cuda.blas);
    memset(&g_cuda, 0, sizeof g_cuda);
}

extern "C" int backend_cuda_devices(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

extern "C" void backend_cuda_bind(int device) { CUDA_CHECK(cudaSetDevice(device)); }

static void cuda_init(void) {
    static thread_local int done;  // per thread, like g_cuda
    if (done) return;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        die("device = cuda: no CUDA device found (cudaGetDeviceCount: %s); set device = cpu",
            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    if (prop.major < 9)
        die("device = cuda: %s has compute capability %d.%d; this build runs on sm_90 (H100/H200) or newer; set device = cpu",
            prop.name, prop.major, prop.minor);
    g_cuda.nsm = prop.multiProcessorCount;
    CUBLAS_CHECK(cublasCreate(&g_cuda.blas));
    // No TF32 unless asked: fp32 products stay fp32 (matmul.cu also names its compute type).
    CUBLAS_CHECK(cublasSetMathMode(g_cuda.blas, CUBLAS_DEFAULT_MATH));
    // Once per process, after the runtime's own exit handler (so it runs first); a local
    // static's initialiser runs exactly once even when rank threads reach here together.
    static const bool registered = atexit(cuda_release) == 0;
    (void)registered;
    done = 1;
}

#define CUDA_TABLE(BF, REG)                                                              \
    {.name = "cuda", .alloc = cu_alloc, .free = cu_free, .to_device = cu_to_device,            \
     .to_host = cu_to_host, .copy = cu_copy, .zero = cu_zero, .sync = cu_sync,                 \
     .bsmat_upload = bsmat_upload_cuda, .bsmat_release = bsmat_release_cuda, .register_params = REG, \
     .keep_lowp = BF ? keep_lowp_cuda : NULL,                                                   \
     .embed_fwd = embed_fwd_cuda, .embed_bwd = embed_bwd_cuda,                                  \
     .matmul_fwd = matmul_fwd_cuda<BF>, .matmul_bwd = matmul_bwd_cuda<BF>,                      \
     .bsmm_fwd = wg_mm_fwd<BF>, .bsmm_bwd_data = wg_mm_bwd_data<BF>,                    \
     .bsmm_bwd_weight = wg_mm_bwd_weight<BF>,                                                   \
     .lstm_fwd = lstm_fwd_cuda, .lstm_bwd = lstm_bwd_cuda,                                      \
     .seq_create = seq_create_cuda<BF>, .seq_fwd = seq_fwd_cuda<BF>, .seq_bwd = seq_bwd_cuda<BF>,  \
     .seq_free = seq_free_cuda, .seq_route = seq_route_cuda,                                    \
     .gen_create = gen_create_cuda<BF>, .gen_run = gen_run_cuda, .gen_state = gen_state_cuda,        \
     .gen_free = gen_free_cuda, .gen_route = gen_route_cuda,                                     \
     .replay = replay_cuda, .replay_forget = replay_forget_cuda,                                \
     .layernorm_fwd = layernorm_fwd_cuda, .layernorm_bwd = layernorm_bwd_cuda,                  \
     .norm_act_fwd = norm_act_fwd_cuda, .mul_bwd = mul_bwd_cuda, .relu_bwd = relu_bwd_cuda,     \
     .gather_blocks = gather_blocks_cuda, .dense_grad = dense_grad_cuda<BF>, .block_sumsq = block_sumsq_cuda,                        \
     .softmax_xent = softmax_xent_cuda,                                                         \
     .adam = adam_cuda, .sumsq = sumsq_cuda, .axpy = axpy_cuda, .ema = ema_cuda, .dyn_update = dyn_update_cuda, \
     .sq_acc = sq_acc_cuda}

static const Backend cuda_fp32 = CUDA_TABLE(false, cu_register_fp32);
static const Backend cuda_bf16 = CUDA_TABLE(true, cu_register_bf16);

static void *load_cublas(void *) {
    cublas_lib();
    return NULL;
}

// cuBLAS's initialisers take about as long as the context: a second thread runs them beside it.
extern "C" void backend_cuda_warm(void) {
    pthread_t t;
    int loading = !pthread_create(&t, NULL, load_cublas, NULL);
    (void)cudaFree(0);
    if (loading) pthread_join(t, NULL);
}

extern "C" const Backend *backend_cuda(Precision precision) {
    cuda_init();
    return precision == PREC_BF16 ? &cuda_bf16 : &cuda_fp32;
}
