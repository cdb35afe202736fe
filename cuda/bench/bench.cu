// bench.cu: timing helpers for `swlstm bench` (bench_cuda.h): CUDA-event medians, the copy
// bandwidth ceiling, and the library baselines (cuBLAS dense GEMM, cuSPARSE BSR SpMM) that
// the block-sparse kernels are compared with. Not used in training.
#include <cusparse.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>
#include "bench/bench_cuda.h"
#include "bsmm/bsmat_dev.cuh"

extern "C" double cb_time_ms(BenchFn fn, void *arg, int warmup, int reps) {
    enum { GROUP = 10 };  // calls issued back to back per timed group, as in training
    for (int i = 0; i < warmup; i++) fn(arg, i);
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    int groups = (reps + GROUP - 1) / GROUP;
    std::vector<float> ms(groups);
    for (int i = 0; i < groups; i++) {
        CUDA_CHECK(cudaEventRecord(e0));
        for (int j = 0; j < GROUP; j++) fn(arg, warmup + i * GROUP + j);
        CUDA_CHECK(cudaEventRecord(e1));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], e0, e1));
        ms[i] /= GROUP;
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    std::sort(ms.begin(), ms.end());
    return ms[groups / 2];
}

typedef struct { void *dst; const void *src; size_t bytes; } CopyArg;
static void copy_once(void *arg, int iter) {
    CopyArg *c = (CopyArg *)arg;
    CUDA_CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice));
}

extern "C" double cb_copy_gbps(void) {
    CopyArg c = {NULL, NULL, (size_t)1 << 30};
    CUDA_CHECK(cudaMalloc(&c.dst, c.bytes));
    CUDA_CHECK(cudaMalloc((void **)&c.src, c.bytes));
    CUDA_CHECK(cudaMemset(c.dst, 1, c.bytes));
    CUDA_CHECK(cudaMemset((void *)c.src, 2, c.bytes));
    double ms = cb_time_ms(copy_once, &c, 2, 10);
    CUDA_CHECK(cudaFree(c.dst));
    CUDA_CHECK(cudaFree((void *)c.src));
    return 2.0 * c.bytes / (ms * 1e-3) / 1e9;
}

// The L2 read ceiling: every CTA of a full grid reads a buffer that fits in L2 (a quarter of
// it) again and again, 16 bytes a load, 4 loads in flight a thread, around L1 (ld.global.cg).
__global__ void l2_read_kernel(const uint4 *p, long n, int passes, unsigned *sink) {
    unsigned x = 0;
    const long stride = (long)gridDim.x * blockDim.x;
    for (int pass = 0; pass < passes; pass++)
        for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += 4 * stride) {
            uint4 v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = i + u * stride < n ? __ldcg(p + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int u = 0; u < 4; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
    if (x == 0x9e3779b9u) *sink = x;  // never true for the buffer's bytes; keeps the loads
}

typedef struct { const uint4 *p; long n; unsigned *sink; int ctas; } L2Arg;
enum { L2_PASSES = 20 };
static void l2_once(void *arg, int iter) {
    L2Arg *a = (L2Arg *)arg;
    l2_read_kernel<<<a->ctas, 256>>>(a->p, a->n, L2_PASSES, a->sink);  // the default stream, as the copy's
    LAUNCH_CHECK();
}

extern "C" double cb_read_gbps(size_t bytes) {
    bytes = bytes / 16 * 16;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    L2Arg a = {NULL, (long)(bytes / 16), NULL, prop.multiProcessorCount * 8};
    CUDA_CHECK(cudaMalloc((void **)&a.p, bytes));
    CUDA_CHECK(cudaMalloc(&a.sink, sizeof(unsigned)));
    CUDA_CHECK(cudaMemset((void *)a.p, 1, bytes));
    double ms = cb_time_ms(l2_once, &a, 2, 20);
    CUDA_CHECK(cudaFree((void *)a.p));
    CUDA_CHECK(cudaFree(a.sink));
    return (double)L2_PASSES * bytes / (ms * 1e-3) / 1e9;
}

extern "C" double cb_l2_gbps(size_t l2_bytes) { return cb_read_gbps(l2_bytes / 4); }

// ---- cuBLAS dense baseline: two weight copies (each far larger than L2) alternate ----
typedef struct {
    int N, R, C, bf;
    void *W[2], *x;
    float *y;
} DenseArg;

static void dense_once(void *arg, int iter) {
    DenseArg *d = (DenseArg *)arg;
    const float one = 1, zero = 0;
    cudaDataType t = d->bf ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasGemmEx(g_cuda.blas, CUBLAS_OP_T, CUBLAS_OP_N, d->R, d->N, d->C, &one, d->W[iter % 2], t, d->C,
                              d->x, t, d->C, &zero, d->y, CUDA_R_32F, d->R,
                              d->bf ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
}

static void *random_buffer(size_t n, int bf) {
    float *f;
    CUDA_CHECK(cudaMalloc(&f, n * sizeof(float)));
    std::vector<float> h(n < (1 << 20) ? n : (1 << 20));
    for (size_t i = 0; i < h.size(); i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    for (size_t o = 0; o < n; o += h.size())
        CUDA_CHECK(cudaMemcpy(f + o, h.data(), std::min(h.size(), n - o) * sizeof(float), cudaMemcpyHostToDevice));
    if (!bf) return f;
    bf16 *b;
    CUDA_CHECK(cudaMalloc(&b, n * sizeof(bf16)));
    to_bf16(b, f, n);
    CUDA_CHECK(cudaFree(f));
    return b;
}

extern "C" double cb_dense_ms(int N, int R, int C, int bf, int reps) {
    DenseArg d = {N, R, C, bf, {random_buffer((size_t)R * C, bf), random_buffer((size_t)R * C, bf)},
                  random_buffer((size_t)N * C, bf), NULL};
    CUDA_CHECK(cudaMalloc(&d.y, sizeof(float) * N * R));
    double ms = cb_time_ms(dense_once, &d, 5, reps);
    CUDA_CHECK(cudaFree(d.W[0])); CUDA_CHECK(cudaFree(d.W[1])); CUDA_CHECK(cudaFree(d.x)); CUDA_CHECK(cudaFree(d.y));
    return ms;
}

// ---- cuSPARSE BSR SpMM: y^T[rows,N] = W[rows,cols] x^T[cols,N], column-major dense sides ----
typedef struct {
    cusparseHandle_t h;
    std::vector<cusparseSpMatDescr_t> A;
    cusparseDnMatDescr_t B, C;
    cudaDataType ct;
    void *buf;
} SparseArg;

static void sparse_once(void *arg, int iter) {
    SparseArg *s = (SparseArg *)arg;
    const float one = 1, zero = 0;
    cusparseStatus_t st = cusparseSpMM(s->h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                       s->A[iter % s->A.size()], s->B, &zero, s->C, CUDA_R_32F, CUSPARSE_SPMM_BSR_ALG1, s->buf);
    if (st != CUSPARSE_STATUS_SUCCESS) die("cusparseSpMM failed during timing: %s", cusparseGetErrorString(st));
}

#define SP_TRY(call)                                                                                    \
    do { cusparseStatus_t st_ = (call);                                                                 \
         if (st_ != CUSPARSE_STATUS_SUCCESS) { snprintf(why, whylen, "%s: %s", #call, cusparseGetErrorString(st_)); \
                                               ok = 0; goto done; } } while (0)

extern "C" double cb_sparse_ms(const BsMat *w, const real *vals, int nsets, int N, int bf, int reps, char *why,
                               size_t whylen) {
    const DevBsMat *d = (const DevBsMat *)w->dev;
    size_t nv = (size_t)bsmat_nvals(w);
    cudaDataType t = bf ? CUDA_R_16BF : CUDA_R_32F;
    SparseArg s = {};
    void *x = random_buffer((size_t)N * w->cols, bf), *wv = (void *)vals, *y;
    int ok = 1;
    double ms = -1;
    size_t bytes = 0;
    CUDA_CHECK(cudaMalloc(&y, sizeof(float) * (size_t)N * w->rows));
    if (bf) {
        CUDA_CHECK(cudaMalloc(&wv, nv * nsets * sizeof(bf16)));
        to_bf16((bf16 *)wv, vals, nv * nsets);
    }
    SP_TRY(cusparseCreate(&s.h));
    s.A.assign(nsets, NULL);
    for (int i = 0; i < nsets; i++)
        SP_TRY(cusparseCreateBsr(&s.A[i], w->nbr, w->nbc, w->nnzb, w->bs, w->bs, d->row_ptr, d->col_idx,
                                 (char *)wv + i * nv * (bf ? 2 : 4), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_BASE_ZERO, t, CUSPARSE_ORDER_ROW));
    SP_TRY(cusparseCreateDnMat(&s.B, w->cols, N, w->cols, x, t, CUSPARSE_ORDER_COL));
    SP_TRY(cusparseCreateDnMat(&s.C, w->rows, N, w->rows, y, CUDA_R_32F, CUSPARSE_ORDER_COL));
    {
        const float one = 1, zero = 0;
        SP_TRY(cusparseSpMM_bufferSize(s.h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                       s.A[0], s.B, &zero, s.C, CUDA_R_32F, CUSPARSE_SPMM_BSR_ALG1, &bytes));
        CUDA_CHECK(cudaMalloc(&s.buf, bytes ? bytes : 1));
        SP_TRY(cusparseSpMM(s.h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, s.A[0],
                            s.B, &zero, s.C, CUDA_R_32F, CUSPARSE_SPMM_BSR_ALG1, s.buf));
    }
    ms = cb_time_ms(sparse_once, &s, 3, reps);
done:
    for (auto a : s.A)
        if (a) cusparseDestroySpMat(a);
    if (s.B) cusparseDestroyDnMat(s.B);
    if (s.C) cusparseDestroyDnMat(s.C);
    if (s.h) cusparseDestroy(s.h);
    if (s.buf) CUDA_CHECK(cudaFree(s.buf));
    if (bf) CUDA_CHECK(cudaFree(wv));
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    return ok ? ms : -1;
}

extern "C" void cb_device(char *buf, size_t n, size_t *l2_bytes) {
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    snprintf(buf, n, "%s, %d SMs, %d MB L2", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
    *l2_bytes = (size_t)p.l2CacheSize;
}

extern "C" double cb_mem_used_gib(void) {
    size_t free_b = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
    return (double)(total - free_b) / (1 << 30);
}
