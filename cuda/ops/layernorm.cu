// layernorm.cu: layer norm over the C values of each row with a gain and bias per column,
// alone or followed in the same kernel by the mlstm's activation (norm_act_fwd: y * m_t, or
// relu(y + a_t)); CPU twin: src/ops/layernorm_cpu.c. x, y, dy, dx are [N, C]; stat[N, 2] =
// (mean, rstd). Fused, the activation costs no pass of its own over [N, C] (the relu and mul
// kernels it replaced were 4 launches a time step).
#include "ops/reduce.cuh"

// What follows the norm: nothing, u = y * mul (y kept in s), or u = max(0, y + add).
// operand(e) is element e's m or a, loaded with the row before the statistics are summed.
struct NormAct {
    real *s;
    const real *mul, *add;
    bool relu;
    __device__ float operand(long e) const { return mul ? mul[e] : add ? add[e] : 0.f; }
    __device__ float operator()(float y, float m, long e) const {
        if (mul) {
            s[e] = y;
            return y * m;
        }
        if (!relu) return y;
        const float v = y + m;
        return v > 0 ? v : 0.f;
    }
};

// Row n = blockIdx.x, held in registers: thread t keeps x[t + k * blockDim.x], k < V (zero
// past C), so the row is read once; up to V = 8 with the gains, biases and the activation's
// operands, all loads in flight before the first reduction (after its barrier they would
// wait one more round trip; past 8 they would spill). Its statistics as row_stats takes
// them (the same sums in the same order), then y (or the activation of y).
template <int V>
__global__ void __launch_bounds__(ROW_THREADS) layernorm_fwd_kernel(real *y, bf16 *yb, real *stat, const real *x,
                                                                    const real *gain, const real *bias, int C, NormAct act,
                                                                    SlabOut so) {
    __shared__ float buf[32];
    pdl_enter();
    const long r = (long)blockIdx.x * C;
    constexpr bool EARLY = V <= 8;
    constexpr int W = EARLY ? V : 1;
    float v[V], g[W], b[W], m[W], s = 0, ss = 0;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = threadIdx.x + k * blockDim.x;
        const bool in = j < C;
        v[k] = in ? x[r + j] : 0.f;
        if (!EARLY) continue;
        g[k] = in ? gain[j] : 0.f;
        b[k] = in ? bias[j] : 0.f;
        m[k] = in ? act.operand(r + j) : 0.f;
    }
#pragma unroll
    for (int k = 0; k < V; k++) s += v[k];
    const float mean = block_sum(s, buf) / C;
#pragma unroll
    for (int k = 0; k < V; k++)
        if (threadIdx.x + k * blockDim.x < C) ss += (v[k] - mean) * (v[k] - mean);
    const float rstd = 1 / sqrtf(block_sum(ss, buf) / C + LN_EPS);
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = threadIdx.x + k * blockDim.x;
        if (j >= C) continue;
        const float gk = EARLY ? g[k % W] : gain[j], bk = EARLY ? b[k % W] : bias[j];
        const float u = act((v[k] - mean) * rstd * gk + bk, EARLY ? m[k % W] : act.operand(r + j), r + j);
        put(y, yb, r + j, u);
        so.put(blockIdx.x, j, u);
    }
    put_stats(stat + 2 * blockIdx.x, make_float2(mean, rstd));
}

static void layernorm_fwd_with(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C, NormAct act) {
    if (N <= 0) return;
    bf16 *yb = twin_out(y, (size_t)N * C);
    const SlabOut so = twin_slab_out(y, N, C);
    switch (cdiv(C, ROW_THREADS)) {
    case 1: return launch_pdl(layernorm_fwd_kernel<1>, N, ROW_THREADS, 0, y, yb, stat, x, gain, bias, C, act, so);
    case 2: return launch_pdl(layernorm_fwd_kernel<2>, N, ROW_THREADS, 0, y, yb, stat, x, gain, bias, C, act, so);
    case 3: case 4: return launch_pdl(layernorm_fwd_kernel<4>, N, ROW_THREADS, 0, y, yb, stat, x, gain, bias, C, act, so);
    case 5: case 6: case 7: case 8: return launch_pdl(layernorm_fwd_kernel<8>, N, ROW_THREADS, 0, y, yb, stat, x, gain, bias, C, act, so);
    default:
        if (C > 32 * ROW_THREADS) die("layer norm over %d values a row: the CUDA backend takes at most %d", C, 32 * ROW_THREADS);
        if (C > 16 * ROW_THREADS) return launch_pdl(layernorm_fwd_kernel<32>, N, ROW_THREADS, 0, y, yb, stat, x, gain, bias, C, act, so);
        return launch_pdl(layernorm_fwd_kernel<16>, N, ROW_THREADS, 0, y, yb, stat, x, gain, bias, C, act, so);
    }
}

void layernorm_fwd_cuda(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C) {
    layernorm_fwd_with(y, stat, x, gain, bias, N, C, NormAct{});
}

void norm_act_fwd_cuda(real *u, real *s, real *stat, const real *x, const real *gain, const real *bias, const real *mul,
                       const real *add, int N, int C) {
    if (mul) twin_none(s, (size_t)N * C, "norm_act_fwd");
    layernorm_fwd_with(u, stat, x, gain, bias, N, C, NormAct{mul ? s : NULL, mul, add, true});
}

// Row n = blockIdx.x through its norm (row_norm_bwd); dx may alias dy.
__global__ void layernorm_bwd_kernel(real *dx, bf16 *dxb, const real *dy, const real *x, const real *stat, const real *gain,
                                     int C, SlabOut so) {
    pdl_enter();
    const long r = (long)blockIdx.x * C;
    row_norm_bwd(dx + r, dxb ? dxb + r : NULL, dy + r, x + r, gain, make_float2(stat[2 * blockIdx.x], stat[2 * blockIdx.x + 1]),
                 C, so, blockIdx.x, 0);
}

// Columns first (dbias, dgain, from one read), while dy is intact; then the rows. Without
// dgain the columns are left (a caller sums them later over more rows), without dx the rows.
void layernorm_bwd_cuda(real *dx, real *dgain, real *dbias, const real *dy, const real *x, const real *stat,
                        const real *gain, int N, int C) {
    if (N <= 0) return;
    if (dgain) launch_pdl(norm_param_grad_kernel<2, COL_LANES>, cdiv(C, 32), col_threads(), 0, dgain, dbias, dy, x, stat, N, C, C);
    if (!dx) return;
    bf16 *dxb = twin_out(dx, (size_t)N * C);
    launch_pdl(layernorm_bwd_kernel, N, ROW_THREADS, 0, dx, dxb, dy, x, stat, gain, C, twin_slab_out(dx, N, C));
}
