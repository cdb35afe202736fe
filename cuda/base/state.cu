// state.cu: the per-thread CUDA state, its scratch buffers and device memory (state.cuh).
#include "base/lowp.cuh"

thread_local CudaState g_cuda;

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

void *cu_alloc(size_t bytes) {
    void *p = NULL;
    bytes = bytes ? bytes : 1;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMemset(p, 0, bytes));
    return p;
}

void cu_free(void *p) {
    if (!p) return;
    if (p == g_cuda.params) register_params_cuda(NULL, 0, 0);  // a later buffer may reuse the address
    twin_release((const real *)p);
    CUDA_CHECK(cudaFree(p));
    g_cuda.gen++;  // and a recorded graph may hold it
}
