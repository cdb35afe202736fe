// state.cuh: the CUDA backend's per-thread state (cuBLAS handle, registered parameters and
// their bf16 shadow, scratch buffers, the stream ops launch on) and device memory (state.cu).
#pragma once
#include <cuda_bf16.h>
#include "base/check.cuh"

typedef __nv_bfloat16 bf16;

enum { SCRATCH_WBF16, SCRATCH_XBF16, SCRATCH_DYBF16, SCRATCH_PART, SCRATCH_COUNT, SCRATCH_SUMSQ, SCRATCH_COLSUM, SCRATCH_EMBED, SCRATCH_XPK, SCRATCH_N };

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

void *cuda_scratch(int slot, size_t bytes);
void *cu_alloc(size_t bytes);  // zero-filled device memory (the backend's alloc)
void cu_free(void *p);         // the backend's free
void *cublas_lib(void);        // cuBLAS, opened at first use (lazy_libs.cu)
