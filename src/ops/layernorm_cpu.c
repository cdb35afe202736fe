// layernorm_cpu.c: layer norm over the C values of each row with a gain and bias per column
// (the mlstm's lin_p(v) = LN(W_p v) * gain + bias), alone or followed by the mlstm's
// activation (norm_act_fwd: y * m_t, or relu(y + a_t)). CPU reference; CUDA twin:
// cuda/ops/layernorm.cu.
#include "ops/backend.h"
#include "ops/layernorm.h"

// y[N,C] = (x - mean) * rstd * gain + bias per row; stat[N,2] = (mean, rstd).
void layernorm_fwd_cpu(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *xr = x + (long)n * C;
        real mean, rstd;
        ln_span_stats(xr, C, &mean, &rstd);
        stat[2 * n] = mean;
        stat[2 * n + 1] = rstd;
        for (int j = 0; j < C; j++) y[(long)n * C + j] = (xr[j] - mean) * rstd * gain[j] + bias[j];
    }
}

// Columns first (dgain, dbias summed over rows in order: deterministic), while dy is intact;
// then each row's dx, which may overwrite dy. Without dgain the columns are left (a caller
// sums them later over more rows), without dx the rows.
void layernorm_bwd_cpu(real *dx, real *dgain, real *dbias, const real *dy, const real *x, const real *stat,
                       const real *gain, int N, int C) {
    if (dgain) {
        #pragma omp parallel for schedule(static)
        for (int j0 = 0; j0 < C; j0 += 64)
            for (int n = 0; n < N; n++)
                for (int j = j0; j < j0 + 64 && j < C; j++) {
                    real d = dy[(long)n * C + j];
                    dbias[j] += d;
                    dgain[j] += d * (x[(long)n * C + j] - stat[2 * n]) * stat[2 * n + 1];
                }
    }
    if (!dx) return;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        real *d = dx + (long)n * C;
        if (d != dy + (long)n * C)
            for (int j = 0; j < C; j++) d[j] = dy[(long)n * C + j];
        ln_span_bwd(d, x + (long)n * C, stat[2 * n], stat[2 * n + 1], gain, C);
    }
}

#define PAR_MIN 32768

// u = y * mul (y kept in s) or u = max(0, y + add), y the layer norm of x.
void norm_act_fwd_cpu(real *u, real *s, real *stat, const real *x, const real *gain, const real *bias, const real *mul,
                      const real *add, int N, int C) {
    size_t n = (size_t)N * C;
    layernorm_fwd_cpu(mul ? s : u, stat, x, gain, bias, N, C);
    #pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        real v = mul ? s[i] * mul[i] : u[i] + (add ? add[i] : 0);
        u[i] = mul || v > 0 ? v : 0;
    }
}
