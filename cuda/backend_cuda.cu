// backend_cuda.cu: entry point of the CUDA backend (kernels arrive with the CUDA issue).
#include "common.h"
#include "backend.h"

extern "C" const Backend *backend_cuda(const char *precision) {
    (void)precision;
    die("device = cuda: the CUDA backend is not implemented in this version yet; set device = cpu");
}
