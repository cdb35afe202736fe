// backend.c: picks the backend named by the config's `device`.
#include "ops/backend.h"
#include <string.h>

#ifndef SW_CUDA
const Backend *backend_cuda(const char *precision) {
    (void)precision;
    die("device = cuda: this swlstm was built without CUDA (nvcc was not found by make); "
        "install the CUDA Toolkit and rebuild, or set device = cpu");
}
void backend_cuda_warm(void) {}
#endif

const Backend *backend_get(const char *device, const char *precision) {
    if (strcmp(device, "cpu") == 0) {
        if (strcmp(precision, "fp32") != 0)
            die("precision = %s: the CPU backend computes in fp32 only (set precision = fp32 or device = cuda)", precision);
        return backend_cpu();
    }
    if (strcmp(device, "cuda") == 0) return backend_cuda(precision);
    die("device = %s: expected cpu or cuda", device);
}
