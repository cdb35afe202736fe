// backend.c: picks the backend named by the config's `device`.
#include "ops/backend.h"

#ifndef SW_CUDA
const Backend *backend_cuda(Precision precision) {
    (void)precision;
    die("device = cuda: this swlstm was built without CUDA (nvcc was not found by make); "
        "install the CUDA Toolkit and rebuild, or set device = cpu");
}
void backend_cuda_warm(void) {}
int backend_cuda_devices(void) { return 0; }
void backend_cuda_bind(int device) {
    die("cuda device %d: this swlstm was built without CUDA (nvcc was not found by make)", device);
}
#endif

const Backend *backend_get(Device device, Precision precision) {
    if (device == DEVICE_CUDA) return backend_cuda(precision);
    if (precision != PREC_FP32)
        die("precision = bf16: the CPU backend computes in fp32 only (set precision = fp32 or device = cuda)");
    return backend_cpu();
}
