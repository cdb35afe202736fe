// test_gpu_wgmma.c: the wgmma steps (cuda/wgmma/wg_fwd.h, wg_bwd.h) and the window's weight
// gradient (wg_dw.h) against double-precision references on the same bf16 operands:
// Barabasi-Albert masks (one with a batch of two 128-row tiles, one with rows emptied or cut
// to one entry, one whose long lists go as half items and short ones whole), outputs poisoned
// with NaN first, chained steps (the second reads the packed h or dz the first wrote), and the
// same bits on a second run.
#include <stdint.h>
#include "sparse/bsmat.h"
#include "sparse/mask.h"
#include "wgmma/wg_bwd.h"
#include "wgmma/wg_dw.h"
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

// The shapes both steps are checked on: H, B, mask, thinned.
static const struct {
    int H, B;
    const char *desc;
    int thin;
} wshapes[] = {{512, 128, "ba_2", 0}, {1024, 256, "ba_3", 0}, {512, 256, "ba_4", 1}, {4096, 128, "ba_2", 0}};
#define NWSHAPES (sizeof wshapes / sizeof wshapes[0])

TEST(gpu_wgmma_fwd_matches_reference) {
    for (size_t i = 0; i < NWSHAPES; i++) check_layer(wshapes[i].H, wshapes[i].B, wshapes[i].desc, wshapes[i].thin);
}

// The layer's mask as lists by block column, each by ascending block row: what the backward
// walks.
typedef struct {
    int *ptr, *row, *blk;
} Cols;

static Cols cols_of(const Layer *L) {
    Cols c = {xcalloc((size_t)L->nb + 1, sizeof(int)), xmalloc(sizeof(int) * (L->nnz + 1)), xmalloc(sizeof(int) * (L->nnz + 1))};
    for (int p = 0; p < L->nnz; p++) c.ptr[L->col[p] + 1]++;
    for (int j = 0; j < L->nb; j++) c.ptr[j + 1] += c.ptr[j];
    int *fill = xmalloc(sizeof(int) * L->nb);
    memcpy(fill, c.ptr, sizeof(int) * L->nb);
    for (int i = 0; i < L->nb; i++)
        for (int p = L->rowptr[i]; p < L->rowptr[i + 1]; p++) {
            const int q = fill[L->col[p]]++;
            c.row[q] = i, c.blk[q] = L->blk[p];
        }
    free(fill);
    return c;
}

// A backward step's inputs: dh (upstream), dc, c_t, c_{t+1} [B, H]; the gates in bf16
// [B][H][4] (i, f, o in (0, 1), g in (-1, 1)).
typedef struct {
    float *dh, *dc, *c0, *c1;
    uint16_t *act;
} BwdIn;

static BwdIn bwd_in(long BH, unsigned long long *s) {
    BwdIn in = {h_rand(BH, s, 1), h_rand(BH, s, 1), h_rand(BH, s, 1), h_rand(BH, s, 1), xmalloc(sizeof(uint16_t) * 4 * BH)};
    for (long i = 0; i < 4 * BH; i++) in.act[i] = bf16_bits(i % 4 == 2 ? 2 * test_rand(s) - 1 : test_rand(s));
    return in;
}

static void bwd_in_free(BwdIn *in) { free(in->dh), free(in->dc), free(in->c0), free(in->c1), free(in->act); }

// The step in double: dh = upstream + dz W_h (dz bf16 [B, 4H]; NULL: no product); with the
// cell, dz_t [B, 4H] and dc_t.
static void ref_bwd(const Layer *L, const Cols *c, const uint16_t *dz, const BwdIn *in, int cell, double *dh, double *dzo,
                    double *dco) {
    const int H = L->H;
    const long G = 4L * H;
    for (int b = 0; b < L->B; b++)
        for (int u = 0; u < H; u++) {
            const int j = u / 32, uu = u % 32;
            double sum = 0;
            for (int q = 0; dz && q < c->ptr[j + 1] - c->ptr[j]; q++) {
                const int i = c->row[c->ptr[j] + q], bk = c->blk[c->ptr[j] + q];
                for (int g = 0; g < 4; g++)
                    for (int k = 0; k < 32; k++)
                        sum += bf16_val(dz[b * G + g * H + i * 32 + k]) * bf16_val(L->w[((long)(bk + g * L->nnz) * 32 + k) * 32 + uu]);
            }
            const long e = (long)b * H + u;
            const double d = in->dh[e] + sum;
            dh[e] = d;
            if (!cell) continue;
            const double gi = bf16_val(in->act[4 * e]), gf = bf16_val(in->act[4 * e + 1]), gg = bf16_val(in->act[4 * e + 2]),
                         go = bf16_val(in->act[4 * e + 3]), tc = tanh(in->c1[e]), dct = in->dc[e] + d * go * (1 - tc * tc);
            dzo[b * G + u] = dct * gg * gi * (1 - gi), dzo[b * G + H + u] = dct * in->c0[e] * gf * (1 - gf);
            dzo[b * G + 2 * H + u] = dct * gi * (1 - gg * gg), dzo[b * G + 3 * H + u] = d * tc * go * (1 - go);
            dco[e] = dct * gf;
        }
}

static void poison_bytes(const Backend *gpu, void *d, size_t bytes) {  // all ones: NaN in fp32 and in bf16
    void *h = xmalloc(bytes);
    memset(h, 0xff, bytes);
    gpu->to_device(d, h, bytes);
    free(h);
}

static void *d_poisoned(const Backend *gpu, size_t bytes) {
    void *d = gpu->alloc(bytes);
    poison_bytes(gpu, d, bytes);
    return d;
}

typedef struct {
    float *dh, *dc, *c0, *c1;
    void *act;
} BwdDev;

static void bwd_upload(const Backend *gpu, const BwdDev *d, const BwdIn *in, long BH) {
    gpu->to_device(d->dh, in->dh, sizeof(float) * BH), gpu->to_device(d->dc, in->dc, sizeof(float) * BH);
    gpu->to_device(d->c0, in->c0, sizeof(float) * BH), gpu->to_device(d->c1, in->c1, sizeof(float) * BH);
    gpu->to_device(d->act, in->act, sizeof(uint16_t) * 4 * BH);
}

// Steps t = 0 (the window's last: no product), 1 (the product of step 0's packed dz) and 2
// (the carried state's: dh += dz W_h alone), each on fresh inputs; step 1 twice for its bits.
static void check_bwd(int H, int B, const char *desc, int thin) {
    unsigned long long s = 91;
    const Backend *gpu = cuda_named("bf16");
    Layer L = layer_make(H, B, desc, thin, &s);
    Cols c = cols_of(&L);
    const long BH = (long)B * H, BG = 4 * BH, NDB = (long)(B / 64) * 4 * H;
    void *d_w = d_from(gpu, L.w, sizeof(uint16_t) * 4 * L.nnz * 1024);
    WgBwd *wb = wg_bwd_create(c.ptr, c.row, c.blk, L.nnz, d_w, H, B);
    if (!wb) {
        test_skip("the wgmma step needs an sm_90 device");
        return;
    }
    CHECK(wg_bwd_dzpk_bytes(wb) == (size_t)(2 * BG));
    BwdDev dv = {gpu->alloc(4 * BH), gpu->alloc(4 * BH), gpu->alloc(4 * BH), gpu->alloc(4 * BH), gpu->alloc(8 * BH)};
    void *d_pk[2] = {gpu->alloc(2 * BG), gpu->alloc(2 * BG)};
    double *rdh = xmalloc(sizeof(double) * BH), *rdc = xmalloc(sizeof(double) * BH), *rdz = xmalloc(sizeof(double) * BG);
    double *rdb = xmalloc(sizeof(double) * NDB);
    float *got = xmalloc(sizeof(float) * BG), *db = xmalloc(sizeof(float) * NDB);
    uint16_t *dz = xmalloc(sizeof(uint16_t) * BG), *pk = xmalloc(sizeof(uint16_t) * BG);
    for (int t = 0; t < 3; t++) {
        const int cell = t < 2;
        BwdIn in = bwd_in(BH, &s);
        bwd_upload(gpu, &dv, &in, BH);
        void *d_dzb = d_poisoned(gpu, 2 * BG), *d_db = d_poisoned(gpu, 4 * NDB);
        WgBwdStep st = {.dzpk = t ? d_pk[(t - 1) % 2] : NULL, .dzpk1 = d_pk[t % 2], .dh = dv.dh, .dc = cell ? dv.dc : NULL,
                        .actb = dv.act, .c0 = dv.c0, .c1 = dv.c1, .dzb = d_dzb, .dbpart = d_db};
        if (cell) poison_bytes(gpu, d_pk[t % 2], 2 * BG);
        wg_bwd_step(wb, &st, NULL);
        ref_bwd(&L, &c, t ? dz : NULL, &in, cell, rdh, rdz, rdc);
        gpu->to_host(got, dv.dh, sizeof(float) * BH);
        if (!cell) {
            const double eh = rel_d(got, rdh, BH);
            CHECK_MSG(eh < 1e-5, "%s H=%d B=%d step %d: dh rel %.2e", desc, H, B, t, eh);
        } else {  // the total dh stays in registers (dc and dz below check it): dh untouched
            CHECK_MSG(!memcmp(got, in.dh, sizeof(float) * BH), "%s H=%d B=%d step %d: dh written", desc, H, B, t);
            gpu->to_host(got, dv.dc, sizeof(float) * BH);
            const double ec = rel_d(got, rdc, BH);
            gpu->to_host(dz, d_dzb, sizeof(uint16_t) * BG);
            gpu->to_host(pk, d_pk[t % 2], sizeof(uint16_t) * BG);
            for (long i = 0; i < BG; i++) got[i] = (float)bf16_val(dz[i]);
            const double ez = rel_d(got, rdz, BG);
            gpu->to_host(db, d_db, sizeof(float) * NDB);
            memset(rdb, 0, sizeof(double) * NDB);
            for (long i = 0; i < BG; i++) rdb[(i / (64 * 4 * H)) * 4 * H + i % (4 * H)] += rdz[i];
            const double eb = rel_d(db, rdb, NDB);
            CHECK_MSG(ec < 1e-5 && ez < 4e-3 && eb < 1e-4, "%s H=%d B=%d step %d: dc rel %.2e, dz rel %.2e, dbias rel %.2e", desc, H,
                      B, t, ec, ez, eb);
            long bad_pk = 0;  // the packed image: per block row and 128-row tile, four gates' 128 x 32 slabs
            for (int b = 0; b < B; b++)
                for (int g = 0; g < 4; g++)
                    for (int u = 0; u < H; u++) {
                        const uint32_t o = (uint32_t)((b % 128) * 64 + (u % 32) * 2), sw = o ^ (((o >> 7) & 3) << 4);
                        bad_pk += pk[(((long)(u / 32) * (B / 128) + b / 128) * 4 + g) * 4096 + sw / 2] != dz[(long)b * 4 * H + g * H + u];
                    }
            CHECK_MSG(!bad_pk, "%s step %d: %ld packed dz wrong", desc, t, bad_pk);
        }
        if (t == 1) {  // the same bits again
            float *again = xmalloc(sizeof(float) * BH), *first = xmalloc(sizeof(float) * BH);
            uint16_t *dz2 = xmalloc(sizeof(uint16_t) * BG);
            gpu->to_host(first, dv.dc, sizeof(float) * BH);
            bwd_upload(gpu, &dv, &in, BH);
            wg_bwd_step(wb, &st, NULL);
            gpu->to_host(again, dv.dc, sizeof(float) * BH);
            gpu->to_host(dz2, d_dzb, sizeof(uint16_t) * BG);
            float *db2 = h_from(gpu, d_db, NDB);
            CHECK_MSG(!memcmp(again, first, sizeof(float) * BH) && !memcmp(dz2, dz, sizeof(uint16_t) * BG) &&
                          !memcmp(db2, db, sizeof(float) * NDB),
                      "%s: a second run differs", desc);
            free(again), free(first), free(dz2), free(db2);
        }
        gpu->free(d_dzb), gpu->free(d_db);
        bwd_in_free(&in);
    }
    free(rdh), free(rdc), free(rdz), free(rdb), free(got), free(db), free(dz), free(pk);
    wg_bwd_free(wb);
    void *bufs[] = {d_w, dv.dh, dv.dc, dv.c0, dv.c1, dv.act, d_pk[0], d_pk[1]};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) gpu->free(bufs[i]);
    free(c.ptr), free(c.row), free(c.blk);
    free(L.rowptr), free(L.col), free(L.blk), free(L.w), free(L.xtab), free(L.tok);
}

TEST(gpu_wgmma_bwd_matches_reference) {
    for (size_t i = 0; i < NWSHAPES; i++) check_bwd(wshapes[i].H, wshapes[i].B, wshapes[i].desc, wshapes[i].thin);
}

// The window's weight gradient of a gate-stacked mask over N rows (N % 64: a last stage cut
// short), added to random values: groups of 1 to 8 blocks (hub rows cut into several).
static void check_dw(int nb, const char *desc, int N) {
    unsigned long long s = 123;
    const Backend *gpu = cuda_named("bf16");
    Mask mk = mask_make(desc, nb, nb, 3);
    BsMat w;
    bsmat_from_mask(&w, &mk, 32, 4);
    mask_free(&mk);
    gpu->bsmat_upload(&w);
    const int H = nb * 32;
    const long nz = (long)N * 4 * H, nh = (long)N * H, nv = bsmat_nvals(&w);
    uint16_t *dz = xmalloc(sizeof(uint16_t) * nz), *h = xmalloc(sizeof(uint16_t) * nh);
    for (long i = 0; i < nz; i++) dz[i] = bf16_bits(2 * test_rand(&s) - 1);
    for (long i = 0; i < nh; i++) h[i] = bf16_bits(2 * test_rand(&s) - 1);
    float *v0 = h_rand(nv, &s, 1), *got = xmalloc(sizeof(float) * nv), *again = xmalloc(sizeof(float) * nv);
    void *d_dz = d_from(gpu, dz, sizeof(uint16_t) * nz), *d_h = d_from(gpu, h, sizeof(uint16_t) * nh);
    float *d_v = d_from(gpu, v0, sizeof(float) * nv);
    if (wg_dw(d_v, d_dz, d_h, &w, N, NULL)) {
        gpu->to_host(got, d_v, sizeof(float) * nv);
        gpu->to_device(d_v, v0, sizeof(float) * nv);
        wg_dw(d_v, d_dz, d_h, &w, N, NULL);
        gpu->to_host(again, d_v, sizeof(float) * nv);
        double *ref = xmalloc(sizeof(double) * nv), *fz = xmalloc(sizeof(double) * nz), *fh = xmalloc(sizeof(double) * nh);
        for (long i = 0; i < nz; i++) fz[i] = bf16_val(dz[i]);
        for (long i = 0; i < nh; i++) fh[i] = bf16_val(h[i]);
        for (int r = 0; r < w.nbr; r++)  // stacked block row r: dz's columns r * 32 ..
            for (int k = w.row_ptr[r]; k < w.row_ptr[r + 1]; k++)
                for (int i = 0; i < 32; i++)
                    for (int j = 0; j < 32; j++) {
                        double sum = v0[(long)k * 1024 + i * 32 + j];
                        for (int n = 0; n < N; n++) sum += fz[(long)n * 4 * H + r * 32 + i] * fh[(long)n * H + w.col_idx[k] * 32 + j];
                        ref[(long)k * 1024 + i * 32 + j] = sum;
                    }
        free(fz), free(fh);
        const double e = rel_d(got, ref, nv);
        CHECK_MSG(e < 1e-5, "%s nb=%d N=%d: dW rel %.2e", desc, nb, N, e);
        CHECK_MSG(!memcmp(got, again, sizeof(float) * nv), "%s nb=%d N=%d: a second run differs", desc, nb, N);
        free(ref);
    } else {
        test_skip("the wgmma weight gradient needs an sm_90 device");
    }
    gpu->bsmat_release(&w);
    bsmat_free(&w);
    free(dz), free(h), free(v0), free(got), free(again);
    gpu->free(d_dz), gpu->free(d_h), gpu->free(d_v);
}

TEST(gpu_wgmma_dw_matches_reference) {
    check_dw(40, "ba_8", 300);
    check_dw(24, "ba_2", 130);
}
