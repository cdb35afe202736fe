// check.cu: what a failed CUDA call says (check.cuh).
#include "base/check.cuh"

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
