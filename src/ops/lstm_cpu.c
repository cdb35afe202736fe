// lstm_cpu.c: the LSTM cell, gates i, f, g, o in blocks of H, optional per-gate layer
// norm. CPU reference.
#include "ops/backend.h"
#include "ops/layernorm.h"

static inline real sigmoid(real x) { return 1 / (1 + exp(-x)); }

// The normalised value of z[b, j] (j in [0, 4H)), from the stats the forward kept.
static inline real xhat_at(const real *z, const real *lnstat, int b, int j, int H) {
    const real *st = lnstat + b * 8 + 2 * (j / H);
    return (z[(long)b * 4 * H + j] - st[0]) * st[1];
}

// h[B,H], c[B,H], act[B,4H], lnstat[B,8] (if ln_gain) from z[B,4H] and c_prev[B,H].
void lstm_fwd_cpu(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                  const real *bias, const real *ln_gain, int B, int H) {
    int G = 4 * H;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const real *zb = z + (long)b * G;
        real *ab = act + (long)b * G;
        for (int g = 0; g < 4; g++) {
            real mean = 0, rstd = 1;
            if (ln_gain) {
                ln_span_stats(zb + g * H, H, &mean, &rstd);
                lnstat[b * 8 + 2 * g] = mean;
                lnstat[b * 8 + 2 * g + 1] = rstd;
            }
            for (int j = g * H; j < (g + 1) * H; j++) {
                real pre = ln_gain ? (zb[j] - mean) * rstd * ln_gain[j] : zb[j];
                if (bias) pre += bias[j];
                ab[j] = g == 2 ? tanh(pre) : sigmoid(pre);
            }
        }
        for (int j = 0; j < H; j++) {
            long o = (long)b * H + j;
            c[o] = ab[H + j] * c_prev[o] + ab[j] * ab[2 * H + j];
            h[o] = ab[3 * H + j] * tanh(c[o]);
        }
    }
}

// dz <- dz_pre (the gradient at pre, laid out like z) of one row through that row's four
// layer norms.
static void ln_bwd_row(real *dz, const real *z, const real *lnstat, const real *ln_gain, int b, int H) {
    const real *st = lnstat + b * 8;
    for (int g = 0; g < 4; g++)
        ln_span_bwd(dz + g * H, z + (long)b * 4 * H + g * H, st[2 * g], st[2 * g + 1], ln_gain + g * H, H);
}

// Three passes: per row, the gradient at pre (kept in dz) and dc_prev; per column, dbias and
// dln_gain summed over rows in order (deterministic); per row, dz through the layer norm.
void lstm_bwd_cpu(real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh, const real *dc,
                  const real *act, const real *c, const real *c_prev, const real *z, const real *lnstat,
                  const real *ln_gain, int B, int H) {
    int G = 4 * H;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const real *ab = act + (long)b * G;
        real *db = dz + (long)b * G;
        for (int j = 0; j < H; j++) {
            long o = (long)b * H + j;
            real i = ab[j], f = ab[H + j], g = ab[2 * H + j], og = ab[3 * H + j];
            real tc = tanh(c[o]);
            real dct = dc[o] + dh[o] * og * (1 - tc * tc);  // read dc before dc_prev (may alias)
            db[j] = dct * g * i * (1 - i);
            db[H + j] = dct * c_prev[o] * f * (1 - f);
            db[2 * H + j] = dct * i * (1 - g * g);
            db[3 * H + j] = dh[o] * tc * og * (1 - og);
            dc_prev[o] = dct * f;
        }
    }
    #pragma omp parallel for schedule(static)
    for (int j0 = 0; j0 < G; j0 += 64)
        for (int b = 0; b < B; b++)
            for (int j = j0; j < j0 + 64 && j < G; j++) {
                real d = dz[(long)b * G + j];
                if (dbias) dbias[j] += d;
                if (ln_gain && dln_gain) dln_gain[j] += d * xhat_at(z, lnstat, b, j, H);
            }
    if (ln_gain) {
        #pragma omp parallel for schedule(static)
        for (int b = 0; b < B; b++) ln_bwd_row(dz + (long)b * G, z, lnstat, ln_gain, b, H);
    }
}
