// lstm.cu: the LSTM cell, gates i, f, g, o in blocks of H, optional per-gate layer norm
// (CPU twin: src/lstm_cpu.c). z, act, dz are [B, 4H]; h, c, c_prev, dh, dc are [B, H];
// lnstat[B, 8] = (mean, rstd) per gate.
#include "reduce.cuh"

#define LN_EPS 1e-5f
#define ROW_THREADS 1024  // one CTA a (row, gate), and B = 128 rows a step: as many threads as fit

// lnstat of row b = blockIdx.x, gate g = blockIdx.y: mean, then the variance summed around
// it (as the CPU does).
__global__ void ln_stats_kernel(real *lnstat, const real *z, int H) {
    __shared__ float buf[32];
    const int g = blockIdx.y;
    const real *zg = z + (long)blockIdx.x * 4 * H + (long)g * H;
    float s = 0, ss = 0;
#pragma unroll 4
    for (int j = threadIdx.x; j < H; j += blockDim.x) s += zg[j];
    float mean = block_sum(s, buf) / H;
#pragma unroll 4
    for (int j = threadIdx.x; j < H; j += blockDim.x) ss += (zg[j] - mean) * (zg[j] - mean);
    float var = block_sum(ss, buf) / H;
    if (threadIdx.x == 0) {
        lnstat[blockIdx.x * 8 + 2 * g] = mean;
        lnstat[blockIdx.x * 8 + 2 * g + 1] = 1 / sqrtf(var + LN_EPS);
    }
}

// One thread per (b, j): the four gates' activations, c and h (and h in bf16 where hb is given).
__global__ void lstm_fwd_kernel(real *h, bf16 *hb, real *c, real *act, const real *lnstat, const real *z, const real *c_prev,
                                const real *bias, const real *ln_gain, int B, int H) {
    for (long o = blockIdx.x * (long)blockDim.x + threadIdx.x; o < (long)B * H; o += (long)gridDim.x * blockDim.x) {
        long b = o / H, j = o % H, G = 4L * H;
        float a[4];
#pragma unroll
        for (int g = 0; g < 4; g++) {
            long k = g * (long)H + j;
            float pre = z[b * G + k];
            if (ln_gain) pre = (pre - lnstat[b * 8 + 2 * g]) * lnstat[b * 8 + 2 * g + 1] * ln_gain[k];
            if (bias) pre += bias[k];
            a[g] = g == 2 ? tnh(pre) : sigm(pre);
            act[b * G + k] = a[g];
        }
        float cn = a[1] * c_prev[o] + a[0] * a[2];
        c[o] = cn;
        h[o] = a[3] * tnh(cn);
        if (hb) hb[o] = __float2bfloat16_rn(h[o]);
    }
}

void lstm_fwd_on(cudaStream_t s, real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                 const real *bias, const real *ln_gain, int B, int H, bf16 *hb) {
    if (B <= 0) return;
    if (ln_gain) {
        ln_stats_kernel<<<dim3(B, 4), ROW_THREADS, 0, s>>>(lnstat, z, H);
        LAUNCH_CHECK();
    }
    lstm_fwd_kernel<<<grid_for((size_t)B * H, 256), 256, 0, s>>>(h, hb, c, act, lnstat, z, c_prev, bias, ln_gain, B, H);
    LAUNCH_CHECK();
}

void lstm_fwd_cuda(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                   const real *bias, const real *ln_gain, int B, int H) {
    lstm_fwd_on(g_cuda.stream, h, c, act, lnstat, z, c_prev, bias, ln_gain, B, H);
}

// One thread per (b, j): the gradient at the four gates' pre-activations (into dz) and
// dc_prev (which may alias dc: each element reads dc before writing it).
__global__ void lstm_bwd_cell_kernel(real *dz, bf16 *dzb, real *dc_prev, const real *dh, const real *dc, const real *act,
                                     const real *c, const real *c_prev, int B, int H) {
    for (long o = blockIdx.x * (long)blockDim.x + threadIdx.x; o < (long)B * H; o += (long)gridDim.x * blockDim.x) {
        long b = o / H, j = o % H, G = 4L * H;
        const real *ab = act + b * G;
        real *db = dz + b * G;
        float i = ab[j], f = ab[H + j], g = ab[2 * H + j], og = ab[3 * H + j];
        float tc = tnh(c[o]);
        float dct = dc[o] + dh[o] * og * (1 - tc * tc);
        db[j] = dct * g * i * (1 - i);
        db[H + j] = dct * c_prev[o] * f * (1 - f);
        db[2 * H + j] = dct * i * (1 - g * g);
        db[3 * H + j] = dh[o] * tc * og * (1 - og);
        dc_prev[o] = dct * f;
        if (dzb)
            for (int g = 0; g < 4; g++) dzb[b * G + g * H + j] = __float2bfloat16_rn(db[g * H + j]);
    }
}

__device__ inline float xhat_at(const real *z, const real *lnstat, int b, long j, int H) {
    const real *st = lnstat + b * 8 + 2 * (j / H);
    return (z[(long)b * 4 * H + j] - st[0]) * st[1];
}

// dln_gain[j] += sum_b dpre[b][j] * xhat[b][j], in col_sum's order.
__global__ void ln_gain_grad_kernel(real *dgain, const real *dpre, const real *z, const real *lnstat, int B, int H) {
    const int j = blockIdx.x * 32 + threadIdx.x, G = 4 * H;
    float s = col_sum([&](long b, int k) { return dpre[b * G + k] * xhat_at(z, lnstat, (int)b, k, H); }, 0, B, j, G);
    if (!threadIdx.y && j < G) dgain[j] += s;
}

// Row b = blockIdx.x of dz through the layer norm of gate g = blockIdx.y, in place:
// dz = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dpre * gain.
__global__ void ln_bwd_kernel(real *dz, const real *z, const real *lnstat, const real *ln_gain, int H) {
    __shared__ float buf[32];
    const int b = blockIdx.x, g = blockIdx.y;
    real *db = dz + (long)b * 4 * H;
    float s1 = 0, s2 = 0;
#pragma unroll 4
    for (long j = g * (long)H + threadIdx.x; j < (g + 1) * (long)H; j += blockDim.x) {
        float dxh = db[j] * ln_gain[j];
        s1 += dxh;
        s2 += dxh * xhat_at(z, lnstat, b, j, H);
    }
    float m1 = block_sum(s1, buf) / H, m2 = block_sum(s2, buf) / H, rstd = lnstat[b * 8 + 2 * g + 1];
#pragma unroll 4
    for (long j = g * (long)H + threadIdx.x; j < (g + 1) * (long)H; j += blockDim.x)
        db[j] = rstd * (db[j] * ln_gain[j] - m1 - xhat_at(z, lnstat, b, j, H) * m2);
}

// Three passes as on the CPU: per element the gradient at pre (kept in dz) and dc_prev;
// per column dbias and dln_gain; per row dz through the layer norm.
void lstm_bwd_on(cudaStream_t s, real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh,
                 const real *dc, const real *act, const real *c, const real *c_prev, const real *z,
                 const real *lnstat, const real *ln_gain, int B, int H, bf16 *dzb) {
    if (B <= 0) return;
    lstm_bwd_cell_kernel<<<grid_for((size_t)B * H, 256), 256, 0, s>>>(dz, ln_gain ? NULL : dzb, dc_prev, dh, dc, act, c,
                                                                       c_prev, B, H);
    LAUNCH_CHECK();
    if (dbias) colsum_acc(dbias, dz, B, 4 * H, s);
    if (!ln_gain) return;
    if (dln_gain) {
        ln_gain_grad_kernel<<<cdiv(4L * H, 32), col_threads(), 0, s>>>(dln_gain, dz, z, lnstat, B, H);
        LAUNCH_CHECK();
    }
    ln_bwd_kernel<<<dim3(B, 4), ROW_THREADS, 0, s>>>(dz, z, lnstat, ln_gain, H);
    LAUNCH_CHECK();
    if (dzb) to_bf16(dzb, dz, 4 * (size_t)B * H, s);
}

void lstm_bwd_cuda(real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh, const real *dc,
                   const real *act, const real *c, const real *c_prev, const real *z, const real *lnstat,
                   const real *ln_gain, int B, int H) {
    lstm_bwd_on(g_cuda.stream, dz, dc_prev, dbias, dln_gain, dh, dc, act, c, c_prev, z, lnstat, ln_gain, B, H);
}
