// lazy_libs.cu: cuBLAS and cuSPARSE are opened at their first use, not at process start:
// linked, their libraries' initialisers (libcublasLt's above all) ran before main in every
// start of swlstm, `--help` and device = cpu included (docs/PERF_HISTORY.md). Each of their
// functions that swlstm calls is defined here (the headers' declarations check the
// signatures) and calls the library's own, looked up once. backend_cuda_warm opens cuBLAS
// while inference reads the checkpoint.
#include <dlfcn.h>
#include <cusparse.h>
#include "base/state.cuh"

#define SONAME_(lib, major) "lib" lib ".so." #major
#define SONAME(lib, major) SONAME_(lib, major)

static void *open_lib(const char *name) {
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) die("cannot load %s: %s (install the CUDA Toolkit's libraries or add their folder to LD_LIBRARY_PATH)", name, dlerror());
    return h;
}

void *cublas_lib(void) {
    static void *h = open_lib(SONAME("cublas", CUBLAS_VER_MAJOR));  // once, even from threads at once
    return h;
}

static void *cusparse_lib(void) {
    static void *h = open_lib(SONAME("cusparse", CUSPARSE_VER_MAJOR));
    return h;
}

static void *find(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) die("the CUDA library loaded lacks %s: it is older than the headers this swlstm was built with", name);
    return f;
}

// Defines `name` (of its header's signature) as a call of the library's own.
#define FORWARD(lib, ret, name, params, args)                                    \
    extern "C" ret name params {                                                 \
        static const auto fn = (ret(*) params)find(lib(), #name);                \
        return fn args;                                                          \
    }

FORWARD(cublas_lib, cublasStatus_t, cublasCreate_v2, (cublasHandle_t *h), (h))
FORWARD(cublas_lib, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t h), (h))
FORWARD(cublas_lib, cublasStatus_t, cublasSetMathMode, (cublasHandle_t h, cublasMath_t mode), (h, mode))
FORWARD(cublas_lib, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))
FORWARD(cublas_lib, const char *, cublasGetStatusString, (cublasStatus_t s), (s))
FORWARD(cublas_lib, cublasStatus_t, cublasGemmEx,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
         const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb, const void *beta, void *C,
         cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo),
        (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo))
FORWARD(cublas_lib, cublasStatus_t, cublasDgemm_v2,
        (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double *alpha,
         const double *A, int lda, const double *B, int ldb, const double *beta, double *C, int ldc),
        (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
FORWARD(cublas_lib, cublasStatus_t, cublasDgemv_v2,
        (cublasHandle_t h, cublasOperation_t t, int m, int n, const double *alpha, const double *A, int lda,
         const double *x, int incx, const double *beta, double *y, int incy),
        (h, t, m, n, alpha, A, lda, x, incx, beta, y, incy))

FORWARD(cusparse_lib, cusparseStatus_t, cusparseCreate, (cusparseHandle_t *h), (h))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseDestroy, (cusparseHandle_t h), (h))
FORWARD(cusparse_lib, const char *, cusparseGetErrorString, (cusparseStatus_t s), (s))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseCreateBsr,
        (cusparseSpMatDescr_t *d, int64_t brows, int64_t bcols, int64_t bnnz, int64_t rbs, int64_t cbs, void *rows,
         void *cols, void *vals, cusparseIndexType_t rt, cusparseIndexType_t ct, cusparseIndexBase_t base,
         cudaDataType vt, cusparseOrder_t order),
        (d, brows, bcols, bnnz, rbs, cbs, rows, cols, vals, rt, ct, base, vt, order))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseCreateDnMat,
        (cusparseDnMatDescr_t *d, int64_t rows, int64_t cols, int64_t ld, void *vals, cudaDataType vt,
         cusparseOrder_t order),
        (d, rows, cols, ld, vals, vt, order))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseDestroySpMat, (cusparseConstSpMatDescr_t d), (d))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseDestroyDnMat, (cusparseConstDnMatDescr_t d), (d))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseSpMM_bufferSize,
        (cusparseHandle_t h, cusparseOperation_t oa, cusparseOperation_t ob, const void *alpha,
         cusparseConstSpMatDescr_t A, cusparseConstDnMatDescr_t B, const void *beta, cusparseDnMatDescr_t C,
         cudaDataType compute, cusparseSpMMAlg_t alg, size_t *bytes),
        (h, oa, ob, alpha, A, B, beta, C, compute, alg, bytes))
FORWARD(cusparse_lib, cusparseStatus_t, cusparseSpMM,
        (cusparseHandle_t h, cusparseOperation_t oa, cusparseOperation_t ob, const void *alpha,
         cusparseConstSpMatDescr_t A, cusparseConstDnMatDescr_t B, const void *beta, cusparseDnMatDescr_t C,
         cudaDataType compute, cusparseSpMMAlg_t alg, void *buf),
        (h, oa, ob, alpha, A, B, beta, C, compute, alg, buf))
