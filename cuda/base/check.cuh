// check.cuh: checked CUDA and cuBLAS calls (check.cu). Every call goes through these: the
// message names the call, where it was made and what to try.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "base/common.h"

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
// A kernel's dynamic shared memory past the default 48 KB.
template <typename K>
static inline void allow_smem(K kernel, size_t bytes) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}
