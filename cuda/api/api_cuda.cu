// api_cuda.cu: the binding's products on the device (src/api/api_cuda.h): the backend's
// kernels on operands and outputs as the caller holds them (fp32 or bf16) and on the caller's
// stream.
#include <atomic>
#include "base/state.cuh"
#include "bsmm/bsmm_tile.cuh"
#include "api/api_cuda.h"

// The per-thread state (g_cuda: scratch, cuBLAS) lives on the device of its first use, so
// the process keeps to one device: a caller's autograd threads then share it.
static std::atomic<int> process_device(-1);

extern "C" void api_cuda_init(int device) {
    int expected = -1;
    if (!process_device.compare_exchange_strong(expected, device) && expected != device)
        die("cuda:%d: this process already runs swlstm's kernels on cuda:%d (one device per process)", device,
            expected);
    CUDA_CHECK(cudaSetDevice(device));
    backend_cuda(PREC_FP32);
}

extern "C" void api_cuda_upload(BsMat *w) { backend_cuda(PREC_FP32)->bsmat_upload(w); }
extern "C" void api_cuda_release(BsMat *w) { backend_cuda(PREC_FP32)->bsmat_release(w); }

extern "C" void api_cuda_product(int op, int bf, void *out, int out_bf, const void *a, const void *b, const BsMat *w,
                                 int N, int acc, void *stream) {
    cudaStream_t keep = g_cuda.stream;
    g_cuda.stream = (cudaStream_t)stream;
    if (op == 0) bsmm_fwd_typed({out, out_bf}, a, w, b, N, acc, bf);
    else if (op == 1) bsmm_bwd_data_typed({out, out_bf}, a, w, b, N, acc, bf);
    else bsmm_bwd_weight_typed((real *)out, a, b, w, N, bf);
    g_cuda.stream = keep;
    LAUNCH_CHECK();
}
