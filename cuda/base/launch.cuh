// launch.cuh: kernel launches with attributes (programmatic dependent launch, cooperative),
// and grid arithmetic.
#pragma once
#include <utility>
#include "base/state.cuh"

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

// An op's kernel on g_cuda.stream, programmatically dependent (its kernel starts with pdl_enter).
template <typename... P, typename... A>
void launch_pdl(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A &&...args) {
    launch_attr(attr_pdl(true), kernel, grid, block, smem, g_cuda.stream, std::forward<A>(args)...);
}

static inline int cdiv(long a, long b) { return (int)((a + b - 1) / b); }
static inline unsigned grid_for(size_t n, int threads) {
    size_t g = (n + threads - 1) / threads;
    return (unsigned)(g < 65535u * 16 ? (g ? g : 1) : 65535u * 16);
}
