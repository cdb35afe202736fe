// eltwise.cu: the backward of the mlstm's elementwise steps, h * m_t and relu(. + a_t) (their
// forward is norm_act_fwd's, layernorm.cu), over n elements (CPU twin: src/ops/eltwise_cpu.c).
// Outputs with a bf16 twin (keep_lowp) get it too.
#include "ops/ops.cuh"

#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void mul_bwd_kernel(real *da, bf16 *dab, real *db, bf16 *dbb, const real *dy, const real *a, const real *b, size_t n) {
    pdl_enter();
    GRID_STRIDE(i, n) {
        float d = dy[i], ai = a[i];
        put(da, dab, i, d * b[i]);
        put(db, dbb, i, d * ai);
    }
}

__global__ void relu_bwd_kernel(real *dx, bf16 *dxb, const real *dy, const real *y, size_t n) {
    pdl_enter();
    GRID_STRIDE(i, n) put(dx, dxb, i, y[i] > 0 ? dy[i] : 0);
}

void mul_bwd_cuda(real *da, real *db, const real *dy, const real *a, const real *b, size_t n) {
    if (!n) return;
    launch_pdl(mul_bwd_kernel, grid_for(n, 256), 256, 0, da, twin_out(da, n), db, twin_out(db, n), dy, a, b, n);
}

void relu_bwd_cuda(real *dx, const real *dy, const real *y, size_t n) {
    if (!n) return;
    launch_pdl(relu_bwd_kernel, grid_for(n, 256), 256, 0, dx, twin_out(dx, n), dy, y, n);
}
