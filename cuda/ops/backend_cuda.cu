// backend_cuda.cu: the CUDA backend table (twin of src/ops/backend_cpu.c), device setup,
// memory operations and the device copy of block-sparse indices. Ops live in the other
// cuda/*/*.cu files.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ops/common.cuh"

static_assert(sizeof(real) == 4, "the CUDA backend computes in float");

thread_local CudaState g_cuda;
void register_params_cuda(real *params, size_t n, int want_shadow);  // shadow.cu
void *cublas_lib(void);                                              // lazy_libs.cu

void cuda_fail(const char *what, const char *err, const char *file, int line, const char *hint) {
    die("CUDA call %s failed at %s:%d: %s (%s)", what, file, line, err, hint);
}

const char *cuda_hint(cudaError_t e) {
    switch (e) {
    case cudaErrorMemoryAllocation: return "out of GPU memory: lower batch_size, seq_length or hidden_size";
    case cudaErrorNoKernelImageForDevice: return "this build targets sm_90 (H100/H200)";
    case cudaErrorInsufficientDriver: return "the NVIDIA driver is older than this CUDA runtime";
    default: return "a kernel fault often shows up at the next call; rerun with CUDA_LAUNCH_BLOCKING=1";
    }
}

void *cuda_scratch(int slot, size_t bytes) {
    if (bytes > g_cuda.scratch_bytes[slot]) {
        if (g_cuda.scratch[slot]) CUDA_CHECK(cudaFree(g_cuda.scratch[slot]));
        CUDA_CHECK(cudaMalloc(&g_cuda.scratch[slot], bytes));
        CUDA_CHECK(cudaMemset(g_cuda.scratch[slot], 0, bytes));
        g_cuda.scratch_bytes[slot] = bytes;
        g_cuda.gen++;
    }
    return g_cuda.scratch[slot];
}

// ---- memory ----
void *cu_alloc(size_t bytes) {
    void *p = NULL;
    bytes = bytes ? bytes : 1;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMemset(p, 0, bytes));
    return p;
}
static void cu_free(void *p) {
    if (!p) return;
    if (p == g_cuda.params) register_params_cuda(NULL, 0, 0);  // a later buffer may reuse the address
    twin_release((const real *)p);
    CUDA_CHECK(cudaFree(p));
    g_cuda.gen++;  // and a recorded graph may hold it
}
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

// ---- block-sparse indices ----
int *upload_ints(const int *h, int n) {
    int *d = (int *)cu_alloc(sizeof(int) * (size_t)(n ? n : 1));
    if (n) CUDA_CHECK(cudaMemcpy(d, h, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    return d;
}

// bwd_weight groups: blocks of one block row, at most 256/bs per group; over the first gate's
// rows only when 4 gates share the mask (the kernels take all 4 copies). Two lists:
//   - the cp.async kernel's (one launch, bound by the products): rows cut into full groups and
//     the rest (19 as 8, 8, 3), the groups with the most blocks first, so the CTAs that run at
//     once take about as long and walk their rows of N side by side, sharing x slabs in L2
//     (more L2 hits, a faster bwd-weight);
//   - the bulk-copy kernel's (a launch a wave, bound by L2 and DRAM): a row's blocks dealt
//     evenly (19 as 7, 6, 6) and its groups side by side, rows with the fullest groups first,
//     so a wave's groups take about as long and a row's groups share its dy slab in L2.
typedef struct { int key, row, k0, cnt; } Group;
static int most_blocks_first(const void *a, const void *b) {
    const Group *x = (const Group *)a, *y = (const Group *)b;
    return x->key != y->key ? y->key - x->key : x->k0 - y->k0;
}

static void upload_group_list(BwGroups *l, const BsMat *w, int even) {
    int G = 256 / w->bs, n = 0, rows = w->ngates == 4 ? w->nbr / 4 : w->nbr;
    for (int br = 0; br < rows; br++) n += cdiv(w->row_ptr[br + 1] - w->row_ptr[br], G);
    Group *gr = (Group *)xmalloc(sizeof(Group) * (size_t)(n + 1));
    n = 0;
    for (int br = 0; br < rows; br++) {
        int k = w->row_ptr[br], len = w->row_ptr[br + 1] - k, ng = cdiv(len, G);
        for (int q = 0; q < ng; q++, n++) {
            int cnt = even ? len / ng + (q < len % ng) : (len - q * G < G ? len - q * G : G);
            gr[n] = (Group){even ? cdiv(len, ng) : cnt, br, k, cnt};
            k += cnt;
        }
    }
    qsort(gr, (size_t)n, sizeof *gr, most_blocks_first);
    int *f[3];
    for (int j = 0; j < 3; j++) f[j] = (int *)xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) f[0][i] = gr[i].row, f[1][i] = gr[i].k0, f[2][i] = gr[i].cnt;
    l->n = n;
    l->row = upload_ints(f[0], n);
    l->k0 = upload_ints(f[1], n);
    l->cnt = upload_ints(f[2], n);
    for (int j = 0; j < 3; j++) free(f[j]);
    free(gr);
}

static void upload_groups(DevBsMat *d, const BsMat *w) {
    d->grp_gates = w->ngates == 4 ? 4 : 1;
    upload_group_list(&d->grp, w, 0);
    upload_group_list(&d->wgrp, w, 1);
}

// Cuts each of the n lists ptr[i]..ptr[i+1] into pieces of at most `most` entries (an empty
// list is one empty piece: its output is still written). Lists are taken longest first, so
// CTAs launched in this order start the long work first and the last wave holds short pieces.
typedef struct { int len, i; } ListLen;
static int longest_first(const void *a, const void *b) {
    const ListLen *x = (const ListLen *)a, *y = (const ListLen *)b;
    return x->len != y->len ? y->len - x->len : x->i - y->i;
}

static int list_pieces(int len, int most) { return len ? cdiv(len, most) : 1; }

int count_pieces(const int *ptr, int n, int most) {
    int total = 0;
    for (int i = 0; i < n; i++) total += list_pieces(ptr[i + 1] - ptr[i], most);
    return total;
}

MmPiece *cut_pieces(const int *ptr, int n, int most, int *npieces) {
    ListLen *l = (ListLen *)xmalloc(sizeof(ListLen) * (size_t)(n ? n : 1));
    int total = count_pieces(ptr, n, most);
    for (int i = 0; i < n; i++) l[i] = (ListLen){ptr[i + 1] - ptr[i], i};
    qsort(l, (size_t)n, sizeof *l, longest_first);
    MmPiece *pc = (MmPiece *)xmalloc(sizeof(MmPiece) * (size_t)(total ? total : 1));
    int k = 0;
    for (int j = 0; j < n; j++) {
        int i = l[j].i, parts = list_pieces(l[j].len, most);
        for (int r = 0; r < parts; r++, k++) {
            int beg = ptr[i] + r * most, end = beg + most < ptr[i + 1] ? beg + most : ptr[i + 1];
            pc[k] = (MmPiece){i, beg, end, r, parts};
        }
    }
    free(l);
    *npieces = total;
    return pc;
}

MmPiece *pieces_to_device(const MmPiece *pc, int n) {
    MmPiece *d = (MmPiece *)cu_alloc(sizeof(MmPiece) * (size_t)(n ? n : 1));
    if (n) CUDA_CHECK(cudaMemcpy(d, pc, sizeof(MmPiece) * (size_t)n, cudaMemcpyHostToDevice));
    return d;
}

void *upload_pieces(const int *ptr, int n, int most, int *npieces) {
    MmPiece *pc = cut_pieces(ptr, n, most, npieces);
    MmPiece *d = pieces_to_device(pc, *npieces);
    free(pc);
    return d;
}

static void cu_bsmat_upload(BsMat *w) {
    if (w->bs != 8 && w->bs != 16 && w->bs != 32)
        die("block_size = %d: the CUDA backend supports 8, 16 and 32", w->bs);
    DevBsMat *d = (DevBsMat *)xcalloc(1, sizeof *d);
    d->row_ptr = upload_ints(w->row_ptr, w->nbr + 1);
    d->col_idx = upload_ints(w->col_idx, w->nnzb);
    d->col_ptr = upload_ints(w->col_ptr, w->nbc + 1);
    d->csc_row = upload_ints(w->csc_row, w->nnzb);
    d->csc_blk = upload_ints(w->csc_blk, w->nnzb);
    d->fwd_pieces = upload_pieces(w->row_ptr, w->nbr, mm_piece_len(w->bs), &d->fwd_npieces);
    d->bwd_pieces = upload_pieces(w->col_ptr, w->nbc, mm_piece_len(w->bs), &d->bwd_npieces);
    upload_groups(d, w);
    w->dev = d;
}

static void cu_bsmat_release(BsMat *w) {
    DevBsMat *d = (DevBsMat *)w->dev;
    if (!d) return;
    void *all[] = {d->row_ptr, d->col_idx, d->col_ptr, d->csc_row, d->csc_blk, d->fwd_pieces, d->bwd_pieces,
                   d->grp.row, d->grp.k0, d->grp.cnt, d->wgrp.row, d->wgrp.k0, d->wgrp.cnt};
    for (int i = 0; i < 13; i++) cu_free(all[i]);
    free(d);
    w->dev = NULL;
}

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
     .bsmat_upload = cu_bsmat_upload, .bsmat_release = cu_bsmat_release, .register_params = REG, \
     .keep_lowp = BF ? keep_lowp_cuda : NULL,                                                   \
     .embed_fwd = embed_fwd_cuda, .embed_bwd = embed_bwd_cuda,                                  \
     .matmul_fwd = matmul_fwd_cuda<BF>, .matmul_bwd = matmul_bwd_cuda<BF>,                      \
     .bsmm_fwd = bsmm_fwd_cuda<BF>, .bsmm_bwd_data = bsmm_bwd_data_cuda<BF>,                    \
     .bsmm_bwd_weight = bsmm_bwd_weight_cuda<BF>,                                               \
     .lstm_fwd = lstm_fwd_cuda, .lstm_bwd = lstm_bwd_cuda,                                      \
     .seq_create = seq_create_cuda<BF>, .seq_fwd = seq_fwd_cuda<BF>, .seq_bwd = seq_bwd_cuda<BF>,  \
     .seq_free = seq_free_cuda, .seq_path = seq_path_cuda,                                      \
     .gen_create = gen_create_cuda<BF>, .gen_run = gen_run_cuda, .gen_state = gen_state_cuda,        \
     .gen_free = gen_free_cuda, .gen_path = gen_path_cuda,                                       \
     .replay = replay_cuda, .replay_forget = replay_forget_cuda,                                \
     .layernorm_fwd = layernorm_fwd_cuda, .layernorm_bwd = layernorm_bwd_cuda,                  \
     .norm_act_fwd = norm_act_fwd_cuda, .mul_bwd = mul_bwd_cuda, .relu_bwd = relu_bwd_cuda,     \
     .gather_blocks = gather_blocks_cuda, .dense_grad = dense_grad_cuda<BF>, .block_sumsq = block_sumsq_cuda,                        \
     .softmax_xent = softmax_xent_cuda,                                                         \
     .adam = adam_cuda, .sumsq = sumsq_cuda, .axpy = axpy_cuda, .ema = ema_cuda, .dyn_update = dyn_update_cuda}

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
