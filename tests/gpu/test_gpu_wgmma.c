// test_gpu_wgmma.c: the wgmma forward step (cuda/wgmma/wg_fwd.h) against a double-precision
// reference of the same step on the same bf16 operands: Barabasi-Albert masks (one with a
// batch of two 128-row tiles, one with rows emptied or cut to one entry, one whose long lists
// go as half items and short ones whole), outputs poisoned with NaN first, two chained steps
// (the second reads the packed h the first wrote), and the same bits on a second run.
#include <stdint.h>
#include "sparse/bsmat.h"
#include "sparse/mask.h"
#include "wgmma/wg_fwd.h"
#include "gpu_check.h"

static uint16_t bf16_bits(double x) {  // round to nearest even, as the device does
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static double bf16_val(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double sig(double x) { return 1 / (1 + exp(-x)); }

typedef struct {
    int H, B, nb, nnz;
    int *rowptr, *col, *blk;
    uint16_t *w;        // [4 nnz][32][32]
    float *xtab;        // [256][4H]: the input projection plus the bias
    int *tok;           // [B]
} Layer;

// thin: row j keeps no entry where j % 5 == 1 and its first alone where j % 5 == 2.
static Layer layer_make(int H, int B, const char *desc, int thin, unsigned long long *s) {
    Layer L = {.H = H, .B = B, .nb = H / 32};
    Mask mk = mask_make(desc, L.nb, L.nb, 5);
    BsMat lists;  // the mask's lists by block row
    bsmat_from_mask(&lists, &mk, 32, 1);
    mask_free(&mk);
    L.rowptr = xmalloc(sizeof(int) * (L.nb + 1));
    L.col = xmalloc(sizeof(int) * lists.nnzb);
    L.blk = xmalloc(sizeof(int) * lists.nnzb);
    L.nnz = 0;
    for (int j = 0; j < L.nb; j++) {
        const int n = lists.row_ptr[j + 1] - lists.row_ptr[j], keep = !thin ? n : j % 5 == 1 ? 0 : j % 5 == 2 ? 1 : n;
        L.rowptr[j] = L.nnz;
        for (int i = 0; i < keep; i++) L.col[L.nnz++] = lists.col_idx[lists.row_ptr[j] + i];
    }
    L.rowptr[L.nb] = L.nnz;
    for (int p = 0; p < L.nnz; p++) L.blk[p] = L.nnz - 1 - p;  // stored out of list order
    bsmat_free(&lists);
    L.w = xmalloc(sizeof(uint16_t) * 4 * L.nnz * 1024);
    for (long i = 0; i < 4L * L.nnz * 1024; i++) L.w[i] = bf16_bits(0.15 * (2 * test_rand(s) - 1));
    L.xtab = h_rand(256L * 4 * H, s, 0.5);
    L.tok = xmalloc(sizeof(int) * B);
    for (int b = 0; b < B; b++) L.tok[b] = (int)(test_rand(s) * 256) & 255;
    return L;
}

// The step in double from bf16 h: c1, h1 and the gates (i, f, g, o per unit).
static void ref_step(const Layer *L, const uint16_t *h, const float *c0, double *c1, double *h1, double *gates) {
    const int H = L->H;
    for (int b = 0; b < L->B; b++)
        for (int u = 0; u < H; u++) {
            const int j = u / 32, i = u % 32;
            double pre[4];
            for (int g = 0; g < 4; g++) {
                double z = 0;
                for (int p = L->rowptr[j]; p < L->rowptr[j + 1]; p++)
                    for (int k = 0; k < 32; k++)
                        z += bf16_val(L->w[((long)(L->blk[p] + g * L->nnz) * 32 + i) * 32 + k]) *
                             bf16_val(h[(long)b * H + L->col[p] * 32 + k]);
                pre[g] = z + L->xtab[(long)L->tok[b] * 4 * H + g * H + u];
            }
            const double gi = sig(pre[0]), gf = sig(pre[1]), gg = tanh(pre[2]), go = sig(pre[3]);
            const long e = (long)b * H + u;
            c1[e] = gf * c0[e] + gi * gg, h1[e] = go * tanh(c1[e]);
            gates[4 * e] = gi, gates[4 * e + 1] = gf, gates[4 * e + 2] = gg, gates[4 * e + 3] = go;
        }
}

static double rel_d(const float *a, const double *ref, long n) {
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        num += (a[i] - ref[i]) * (a[i] - ref[i]), den += ref[i] * ref[i];
    }
    return sqrt(num / den);
}

static void check_layer(int H, int B, const char *desc, int thin) {
    unsigned long long s = 77;
    const Backend *gpu = cuda_named("bf16");
    Layer L = layer_make(H, B, desc, thin, &s);
    const long BH = (long)B * H;
    void *d_w = d_from(gpu, L.w, sizeof(uint16_t) * 4 * L.nnz * 1024);
    WgFwd *f = wg_fwd_create(L.rowptr, L.col, L.blk, L.nnz, d_w, H, B);
    if (!f) {
        test_skip("the wgmma step needs an sm_90 device");
        return;
    }
    uint16_t *h = xmalloc(sizeof(uint16_t) * BH);
    for (long i = 0; i < BH; i++) h[i] = bf16_bits(2 * test_rand(&s) - 1);
    float *c0 = h_rand(BH, &s, 1);
    void *d_h = d_from(gpu, h, sizeof(uint16_t) * BH), *d_hpk[3] = {gpu->alloc(2 * BH), gpu->alloc(2 * BH), gpu->alloc(2 * BH)};
    float *d_c[3] = {d_from(gpu, c0, sizeof(float) * BH), gpu->alloc(4 * BH), gpu->alloc(4 * BH)};
    float *d_h1 = gpu->alloc(4 * BH), *d_xtab = d_from(gpu, L.xtab, sizeof(float) * 256 * 4 * H);
    int *d_tok = d_from(gpu, L.tok, sizeof(int) * B);
    void *d_hb1 = gpu->alloc(2 * BH), *d_act = gpu->alloc(8 * BH);
    CHECK(wg_fwd_hpk_bytes(f) == (size_t)(2 * BH));
    wg_fwd_pack_h(f, d_h, d_hpk[0], NULL);
    double *c1 = xmalloc(sizeof(double) * BH), *h1 = xmalloc(sizeof(double) * BH), *gates = xmalloc(sizeof(double) * 4 * BH);
    float *got = xmalloc(sizeof(float) * BH), *c_prev = xmalloc(sizeof(float) * BH);
    uint16_t *hb = xmalloc(sizeof(uint16_t) * BH), *hp = xmalloc(sizeof(uint16_t) * BH), *act = xmalloc(sizeof(uint16_t) * 4 * BH);
    memcpy(c_prev, c0, sizeof(float) * BH);
    for (int t = 0; t < 2; t++) {
        d_poison(gpu, d_c[t + 1], BH), d_poison(gpu, d_h1, BH);
        WgStep st = {.hpk = d_hpk[t], .hpk1 = d_hpk[t + 1], .xtab = d_xtab, .c0 = d_c[t], .tok = d_tok,
                     .c1 = d_c[t + 1], .h1 = d_h1, .hb1 = d_hb1, .actb = d_act};
        wg_fwd_step(f, &st, NULL);
        ref_step(&L, h, c_prev, c1, h1, gates);
        gpu->to_host(got, d_c[t + 1], sizeof(float) * BH);
        double ec = rel_d(got, c1, BH);
        memcpy(c_prev, got, sizeof(float) * BH);
        gpu->to_host(got, d_h1, sizeof(float) * BH);
        double eh = rel_d(got, h1, BH);
        CHECK_MSG(ec < 1e-5 && eh < 1e-5, "%s H=%d B=%d step %d: c rel %.2e, h rel %.2e", desc, H, B, t, ec, eh);
        gpu->to_host(hb, d_hb1, sizeof(uint16_t) * BH);
        gpu->to_host(hp, d_hpk[t + 1], sizeof(uint16_t) * BH);
        gpu->to_host(act, d_act, sizeof(uint16_t) * 4 * BH);
        long bad_hb = 0, bad_pk = 0, bad_act = 0;
        for (int b = 0; b < B; b++)
            for (int u = 0; u < H; u++) {
                const long e = (long)b * H + u;
                bad_hb += hb[e] != bf16_bits(got[e]);
                // the packed image: 128 x 32 tiles, column block major, rows of 64 bytes swizzled
                const uint32_t o = (uint32_t)((b % 128) * 64 + (u % 32) * 2), sw = o ^ (((o >> 7) & 3) << 4);
                bad_pk += hp[((long)(u / 32) * (B / 128) + b / 128) * 4096 + sw / 2] != hb[e];
                for (int g = 0; g < 4; g++) bad_act += fabs(bf16_val(act[4 * e + g]) - gates[4 * e + g]) > 4e-3;
            }
        CHECK_MSG(!bad_hb && !bad_pk && !bad_act, "%s step %d: %ld bf16 h, %ld packed h, %ld gates wrong", desc, t, bad_hb, bad_pk,
                  bad_act);
        memcpy(h, hb, sizeof(uint16_t) * BH);
    }
    // the same bits again
    WgStep st = {.hpk = d_hpk[1], .hpk1 = d_hpk[2], .xtab = d_xtab, .c0 = d_c[1], .tok = d_tok,
                 .c1 = d_c[2], .h1 = d_h1, .hb1 = d_hb1, .actb = d_act};
    float *again = xmalloc(sizeof(float) * BH);
    wg_fwd_step(f, &st, NULL);
    gpu->to_host(again, d_h1, sizeof(float) * BH);
    CHECK_MSG(!memcmp(again, got, sizeof(float) * BH), "%s: a second run differs", desc);
    free(again), free(got), free(c_prev), free(hb), free(hp), free(act), free(c1), free(h1), free(gates), free(h), free(c0);
    wg_fwd_free(f);
    void *bufs[] = {d_w, d_h, d_hpk[0], d_hpk[1], d_hpk[2], d_c[0], d_c[1], d_c[2], d_h1, d_xtab, d_tok, d_hb1, d_act};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) gpu->free(bufs[i]);
    free(L.rowptr), free(L.col), free(L.blk), free(L.w), free(L.xtab), free(L.tok);
}

TEST(gpu_wgmma_fwd_matches_reference) {
    check_layer(512, 128, "ba_2", 0);
    check_layer(1024, 256, "ba_3", 0);
    check_layer(512, 256, "ba_4", 1);
    check_layer(4096, 128, "ba_2", 0);
}
