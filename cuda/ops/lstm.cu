// lstm.cu: the LSTM cell, gates i, f, g, o in blocks of H, optional per-gate layer norm
// (CPU twin: src/ops/lstm_cpu.c). z, act, dz are [B, 4H]; h, c, c_prev, dh, dc are [B, H];
// lnstat[B, 8] = (mean, rstd) per gate.
#include "ops/reduce.cuh"

// Threads of a CTA that takes one row and gate (ln_stats, ln_bwd): B = 128 rows make 4 B
// CTAs, which at 512 threads run as one wave (at ROW_THREADS, as two). Likewise the gates'
// column sums: a time step's B rows on 8 lanes, so the 4H / 32 CTAs of 256 threads fit one wave.
#define GATE_THREADS 512
#define GATE_LANES 8

// lnstat of row b = blockIdx.x, gate g = blockIdx.y (row_stats).
__global__ void ln_stats_kernel(real *lnstat, const real *z, int H) {
    __shared__ float buf[32];
    pdl_enter();
    const float2 st = row_stats(z + (long)blockIdx.x * 4 * H + (long)blockIdx.y * H, H, buf);
    put_stats(lnstat + blockIdx.x * 8 + 2 * blockIdx.y, st);
}

// One thread per (b, j): the four gates' activations, c and h (and h in bf16 where hb is
// given, and in the slab image so).
__global__ void lstm_fwd_kernel(real *h, bf16 *hb, real *c, real *act, const real *lnstat, const real *z, const real *c_prev,
                                const real *bias, const real *ln_gain, int B, int H, SlabOut so) {
    pdl_enter();
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
        const float hv = a[3] * tnh(cn);
        h[o] = hv;
        if (hb) hb[o] = __float2bfloat16_rn(hv);
        so.put(b, (int)j, hv);
    }
}

void lstm_fwd_on(cudaStream_t s, real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                 const real *bias, const real *ln_gain, int B, int H, bf16 *hb, SlabOut so) {
    if (B <= 0) return;
    if (ln_gain) launch_attr(attr_pdl(true), ln_stats_kernel, dim3(B, 4), GATE_THREADS, 0, s, lnstat, z, H);
    launch_attr(attr_pdl(true), lstm_fwd_kernel, grid_for((size_t)B * H, 256), 256, 0, s, h, hb, c, act, lnstat, z, c_prev,
                bias, ln_gain, B, H, so);
}

void lstm_fwd_cuda(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                   const real *bias, const real *ln_gain, int B, int H) {
    bf16 *hb = twin_out(h, (size_t)B * H);
    lstm_fwd_on(g_cuda.stream, h, c, act, lnstat, z, c_prev, bias, ln_gain, B, H, hb, twin_slab_out(h, B, H));
}

// One thread per (b, j): the gradient at the four gates' pre-activations (into dz) and
// dc_prev (which may alias dc: each element reads dc before writing it).
__global__ void lstm_bwd_cell_kernel(real *dz, bf16 *dzb, real *dc_prev, const real *dh, const real *dc, const real *act,
                                     const real *c, const real *c_prev, int B, int H) {
    pdl_enter();
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

// Row b = blockIdx.x of dz through the layer norm of gate g = blockIdx.y, in place (row_norm_bwd).
__global__ void ln_bwd_kernel(real *dz, bf16 *dzb, const real *z, const real *lnstat, const real *ln_gain, int H, SlabOut so) {
    pdl_enter();
    const long off = (long)blockIdx.x * 4 * H + (long)blockIdx.y * H;
    const real *st = lnstat + blockIdx.x * 8 + 2 * blockIdx.y;
    row_norm_bwd(dz + off, dzb ? dzb + off : NULL, dz + off, z + off, ln_gain + (long)blockIdx.y * H, make_float2(st[0], st[1]),
                 H, so, blockIdx.x, (int)blockIdx.y * H);
}

// Three passes as on the CPU: per element the gradient at pre (kept in dz) and dc_prev;
// per column dbias and dln_gain; per row dz through the layer norm.
void lstm_bwd_on(cudaStream_t s, real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh,
                 const real *dc, const real *act, const real *c, const real *c_prev, const real *z,
                 const real *lnstat, const real *ln_gain, int B, int H, bf16 *dzb, SlabOut so) {
    if (B <= 0) return;
    launch_attr(attr_pdl(true), lstm_bwd_cell_kernel, grid_for((size_t)B * H, 256), 256, 0, s, dz, ln_gain ? NULL : dzb,
                dc_prev, dh, dc, act, c, c_prev, B, H);
    if (!ln_gain) {
        if (dbias) colsum_acc(dbias, dz, B, 4 * H, s);
        return;
    }
    launch_attr(attr_pdl(true), norm_param_grad_kernel<8, GATE_LANES>, cdiv(4L * H, 32), col_threads(GATE_LANES), 0, s,
                dln_gain, dbias, (const real *)dz, z, lnstat, B, 4 * H, H);
    launch_attr(attr_pdl(true), ln_bwd_kernel, dim3(B, 4), GATE_THREADS, 0, s, dz, dzb, z, lnstat, ln_gain, H, so);
}

void lstm_bwd_cuda(real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh, const real *dc,
                   const real *act, const real *c, const real *c_prev, const real *z, const real *lnstat,
                   const real *ln_gain, int B, int H) {
    bf16 *dzb = twin_out(dz, 4 * (size_t)B * H);  // (the image: the layer norm's pass writes dz last)
    lstm_bwd_on(g_cuda.stream, dz, dc_prev, dbias, dln_gain, dh, dc, act, c, c_prev, z, lnstat, ln_gain, B, H, dzb,
                ln_gain ? twin_slab_out(dz, B, 4 * H) : SlabOut{NULL, 0});
}
