// layernorm.cu: layer norm over the C values of each row with a gain and bias per column
// (CPU twin: src/layernorm_cpu.c). x, y, dy, dx are [N, C]; stat[N, 2] = (mean, rstd).
#include "reduce.cuh"

#define ROW_THREADS 1024  // one CTA a row, and B = 128 rows a step: as many threads as fit

// Row n = blockIdx.x: its statistics (row_stats), then y.
__global__ void layernorm_fwd_kernel(real *y, bf16 *yb, real *stat, const real *x, const real *gain, const real *bias, int C) {
    __shared__ float buf[32];
    pdl_enter();
    const long r = (long)blockIdx.x * C;
    const float2 st = row_stats(x + r, C, buf);
#pragma unroll 4
    for (int j = threadIdx.x; j < C; j += blockDim.x) put(y, yb, r + j, (x[r + j] - st.x) * st.y * gain[j] + bias[j]);
    put_stats(stat + 2 * blockIdx.x, st);
}

void layernorm_fwd_cuda(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C) {
    if (N <= 0) return;
    launch_pdl(layernorm_fwd_kernel, N, ROW_THREADS, 0, y, twin_out(y, (size_t)N * C), stat, x, gain, bias, C);
}

// dbias[j] += sum_n dy[n][j], dgain[j] += sum_n dy[n][j] * xhat[n][j], in col_sum's order.
__global__ void layernorm_param_grad_kernel(real *dgain, real *dbias, const real *dy, const real *x, const real *stat, int N,
                                            int C) {
    pdl_enter();
    const int j = blockIdx.x * 32 + threadIdx.x;
    float2 s = col_sum([&](long n, int c) {
        float d = dy[n * C + c];
        return make_float2(d, d * (x[n * C + c] - stat[2 * n]) * stat[2 * n + 1]);
    }, 0, N, j, C);
    if (threadIdx.y || j >= C) return;
    dbias[j] += s.x;
    dgain[j] += s.y;
}

// Row n = blockIdx.x through its norm (row_norm_bwd); dx may alias dy.
__global__ void layernorm_bwd_kernel(real *dx, bf16 *dxb, const real *dy, const real *x, const real *stat, const real *gain,
                                     int C) {
    pdl_enter();
    const long r = (long)blockIdx.x * C;
    row_norm_bwd(dx + r, dxb ? dxb + r : NULL, dy + r, x + r, gain, make_float2(stat[2 * blockIdx.x], stat[2 * blockIdx.x + 1]),
                 C);
}

// Columns first (dbias, dgain, from one read), while dy is intact; then the rows.
void layernorm_bwd_cuda(real *dx, real *dgain, real *dbias, const real *dy, const real *x, const real *stat,
                        const real *gain, int N, int C) {
    if (N <= 0) return;
    launch_pdl(layernorm_param_grad_kernel, cdiv(C, 32), col_threads(), 0, dgain, dbias, dy, x, stat, N, C);
    launch_pdl(layernorm_bwd_kernel, N, ROW_THREADS, 0, dx, twin_out(dx, (size_t)N * C), dy, x, stat, gain, C);
}
