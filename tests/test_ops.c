// test_ops.c: the CPU reference ops (embed, matmul, bsmm, lstm, layernorm, mul, relu,
// softmax_xent, ema).
// Double build: each op's backward against central differences of its forward.
// Float build: each op against a plain double-precision reference written here, with
// outputs poisoned (NAN) beforehand, accumulate flags, aliasing, and bitwise-equal
// results with 1 and 2 threads.
#include "test.h"
#include "ops/backend.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static real *rand_vec(long n, double scale, unsigned long long *s) {
    real *v = xmalloc(sizeof(real) * (size_t)(n + 1));
    for (long i = 0; i < n; i++) v[i] = (real)(scale * (2 * test_rand(s) - 1));
    return v;
}

static int *rand_tokens(int n, int V, unsigned long long *s) {
    int *t = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) t[i] = (int)(test_rand(s) * V);
    return t;
}

// A random nr x nc block layout with block row 1 and block column 0 empty (so that outputs
// no block touches are checked too) and about 70% of the other blocks present.
static Mask holey_mask(int nr, int nc, unsigned long long *s) {
    Mask m = {nr, nc, xcalloc((size_t)nr * nc, 1)};
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) m.m[r * nc + c] = r != 1 && c != 0 && test_rand(s) < 0.7;
    m.m[nc - 1] = 1;
    return m;
}

// Central difference, at param[p], of L = sum(out * wt) where f(ctx, out) fills nout values.
// The outputs are differenced before the weighted sum, so the terms that do not depend on
// param[p] cancel exactly and leave no rounding noise.
typedef void (*fwd_fn)(void *ctx, double *out);
static double fd_at(fwd_fn f, void *ctx, double *param, long p, const double *wt, long nout) {
    const double eps = 1e-6;
    double *op = xmalloc(sizeof(double) * (size_t)nout), *om = xmalloc(sizeof(double) * (size_t)nout);
    double keep = param[p], d = 0;
    param[p] = keep + eps;
    f(ctx, op);
    param[p] = keep - eps;
    f(ctx, om);
    param[p] = keep;
    for (long j = 0; j < nout; j++) d += (op[j] - om[j]) * wt[j];
    free(op);
    free(om);
    return d / (2 * eps);
}

static real *copy_of(const real *v, long n) {
    real *c = xmalloc(sizeof(real) * (size_t)(n + 1));
    memcpy(c, v, sizeof(real) * (size_t)n);
    return c;
}

#ifdef SW_DOUBLE
// ---------------------------------------------------------------------------------------
// Finite-difference checks (real = double).

// Largest relative error of grad against central differences over param (every step-th
// element). Gradients below 1e-2 in size are compared against 1e-2: the differences carry
// about 1e-9 of absolute rounding noise.
static double fd_max_err(fwd_fn f, void *ctx, double *param, long np, const double *grad,
                         const double *wt, long nout, long step) {
    double worst = 0;
    for (long p = 0; p < np; p += step) {
        double num = fd_at(f, ctx, param, p, wt, nout);
        double err = fabs(num - grad[p]) / fmax(fmax(fabs(num), fabs(grad[p])), 1e-2);
        if (!(err <= worst)) worst = err;  // NaN sticks
    }
    return worst;
}

#define CHECK_GRAD(f, ctx, param, np, grad, wt, nout, step) do {                       \
    double _e = fd_max_err(f, ctx, param, np, grad, wt, nout, step);                \
    CHECK_MSG(_e < 1e-6, "%s: max relative error %.3g against finite differences", #grad, _e); \
} while (0)

typedef struct { const real *x, *W, *bias; int N, C, R; } MatmulCtx;
static void matmul_out(void *p, double *out) {
    MatmulCtx *c = p;
    backend_cpu()->matmul_fwd(out, c->x, c->W, c->bias, c->N, c->C, c->R, 0);
}

TEST(opcpu_fd_matmul) {
    unsigned long long s = 1;
    int N = 5, C = 7, R = 19;
    real *x = rand_vec((long)N * C, 1, &s), *W = rand_vec((long)R * C, 1, &s), *b = rand_vec(R, 1, &s);
    real *wt = rand_vec((long)N * R, 1, &s);
    real *dx = xcalloc((size_t)N * C, sizeof(real)), *dW = xcalloc((size_t)R * C, sizeof(real)), *db = xcalloc(R, sizeof(real));
    MatmulCtx c = {x, W, b, N, C, R};
    backend_cpu()->matmul_bwd(dx, dW, db, wt, x, W, N, C, R);
    CHECK_GRAD(matmul_out, &c, x, (long)N * C, dx, wt, (long)N * R, 1);
    CHECK_GRAD(matmul_out, &c, W, (long)R * C, dW, wt, (long)N * R, 1);
    CHECK_GRAD(matmul_out, &c, b, R, db, wt, (long)N * R, 1);
    free(x); free(W); free(b); free(wt); free(dx); free(dW); free(db);
}

typedef struct { const real *x, *vals; const BsMat *w; int N; } BsmmCtx;
static void bsmm_out(void *p, double *out) {
    BsmmCtx *c = p;
    backend_cpu()->bsmm_fwd(out, c->x, c->w, c->vals, c->N, 0);
}

TEST(opcpu_fd_bsmm) {
    const Backend *be = backend_cpu();
    unsigned long long s = 2;
    for (int bs = 8; bs <= 32; bs *= 2)
        for (int ng = 1; ng <= 4; ng += 3) {
            Mask m = holey_mask(3, 4, &s);
            BsMat w;
            bsmat_from_mask(&w, &m, bs, ng);
            int N = 3;
            long nv = bsmat_nvals(&w), ny = (long)N * w.rows, nx = (long)N * w.cols;
            real *x = rand_vec(nx, 1, &s), *vals = rand_vec(nv, 1, &s), *wt = rand_vec(ny, 1, &s);
            real *dx = rand_vec(nx, 1, &s), *dvals = xcalloc((size_t)nv, sizeof(real));
            be->bsmm_bwd_data(dx, wt, &w, vals, N, 0);
            be->bsmm_bwd_weight(dvals, wt, x, &w, N);
            BsmmCtx c = {x, vals, &w, N};
            CHECK_GRAD(bsmm_out, &c, x, nx, dx, wt, ny, 1);
            CHECK_GRAD(bsmm_out, &c, vals, nv, dvals, wt, ny, 1 + nv / 1500);
            free(x); free(vals); free(wt); free(dx); free(dvals);
            bsmat_free(&w);
            mask_free(&m);
        }
}

typedef struct { const real *z, *c_prev, *bias, *gain; int B, H; } LstmCtx;
// out = [h, c]
static void lstm_out(void *p, double *out) {
    LstmCtx *c = p;
    long BH = (long)c->B * c->H;
    real *act = xmalloc(sizeof(real) * 4 * BH), lnstat[8 * 8];
    backend_cpu()->lstm_fwd(out, out + BH, act, lnstat, c->z, c->c_prev, c->bias, c->gain, c->B, c->H);
    free(act);
}

static void lstm_fd(int ln) {
    const Backend *be = backend_cpu();
    unsigned long long s = 3 + ln;
    int B = 3, H = 5;
    long BH = (long)B * H;
    real *z = rand_vec(4 * BH, 2, &s), *cp = rand_vec(BH, 1, &s), *bias = rand_vec(4 * H, 0.5, &s);
    real *gain = ln ? rand_vec(4 * H, 1.5, &s) : NULL, *wt = rand_vec(2 * BH, 1, &s);
    real *h = xmalloc(sizeof(real) * BH), *c = xmalloc(sizeof(real) * BH), *act = xmalloc(sizeof(real) * 4 * BH);
    real lnstat[3 * 8], *dz = xmalloc(sizeof(real) * 4 * BH), *dcp = xmalloc(sizeof(real) * BH);
    real *dbias = xcalloc(4 * H, sizeof(real)), *dgain = xcalloc(4 * H, sizeof(real));
    be->lstm_fwd(h, c, act, lnstat, z, cp, bias, gain, B, H);
    be->lstm_bwd(dz, dcp, dbias, ln ? dgain : NULL, wt, wt + BH, act, c, cp, z, lnstat, gain, B, H);
    LstmCtx ctx = {z, cp, bias, gain, B, H};
    CHECK_GRAD(lstm_out, &ctx, z, 4 * BH, dz, wt, 2 * BH, 1);
    CHECK_GRAD(lstm_out, &ctx, cp, BH, dcp, wt, 2 * BH, 1);
    CHECK_GRAD(lstm_out, &ctx, bias, 4 * H, dbias, wt, 2 * BH, 1);
    if (ln) CHECK_GRAD(lstm_out, &ctx, gain, 4 * H, dgain, wt, 2 * BH, 1);
    free(z); free(cp); free(bias); free(gain); free(wt); free(h); free(c); free(act);
    free(dz); free(dcp); free(dbias); free(dgain);
}
typedef struct { const real *x, *gain, *bias; int N, C; } LnCtx;
static void ln_out(void *p, double *out) {
    LnCtx *c = p;
    real *stat = xmalloc(sizeof(real) * 2 * c->N);
    backend_cpu()->layernorm_fwd(out, stat, c->x, c->gain, c->bias, c->N, c->C);
    free(stat);
}

TEST(opcpu_fd_layernorm) {
    const Backend *be = backend_cpu();
    unsigned long long s = 7;
    int N = 4, C = 13;
    long n = (long)N * C;
    real *x = rand_vec(n, 2, &s), *gain = rand_vec(C, 1.5, &s), *bias = rand_vec(C, 1, &s), *wt = rand_vec(n, 1, &s);
    real *y = xmalloc(sizeof(real) * n), stat[8], *dx = xmalloc(sizeof(real) * n), *inplace = copy_of(wt, n);
    real *dg = xcalloc(C, sizeof(real)), *db = xcalloc(C, sizeof(real)), *dg2 = xcalloc(C, sizeof(real)), *db2 = xcalloc(C, sizeof(real));
    be->layernorm_fwd(y, stat, x, gain, bias, N, C);
    be->layernorm_bwd(dx, dg, db, wt, x, stat, gain, N, C);
    LnCtx c = {x, gain, bias, N, C};
    CHECK_GRAD(ln_out, &c, x, n, dx, wt, n, 1);
    CHECK_GRAD(ln_out, &c, gain, C, dg, wt, n, 1);
    CHECK_GRAD(ln_out, &c, bias, C, db, wt, n, 1);
    be->layernorm_bwd(inplace, dg2, db2, inplace, x, stat, gain, N, C);  // dx aliasing dy
    CHECK(memcmp(inplace, dx, sizeof(real) * n) == 0 && memcmp(dg2, dg, sizeof(real) * C) == 0);
    memset(dg2, 0, sizeof(real) * C), memset(db2, 0, sizeof(real) * C);  // the rows alone, then the columns alone
    be->layernorm_bwd(y, NULL, NULL, wt, x, stat, gain, N, C);
    be->layernorm_bwd(NULL, dg2, db2, wt, x, stat, gain, N, C);
    CHECK(memcmp(y, dx, sizeof(real) * n) == 0 && memcmp(dg2, dg, sizeof(real) * C) == 0 && memcmp(db2, db, sizeof(real) * C) == 0);
    free(x); free(gain); free(bias); free(wt); free(y); free(dx); free(inplace); free(dg); free(db); free(dg2); free(db2);
}

typedef struct { const real *x, *gain, *bias, *mul, *add; int N, C; } NaCtx;
static void na_out(void *p, double *out) {
    NaCtx *c = p;
    real *s = xmalloc(sizeof(real) * c->N * c->C), *stat = xmalloc(sizeof(real) * 2 * c->N);
    backend_cpu()->norm_act_fwd(out, s, stat, c->x, c->gain, c->bias, c->mul, c->add, c->N, c->C);
    free(s);
    free(stat);
}

// norm_act_fwd, u = LN(x) * m and relu(LN(x) + a), against the mlstm's backward of it: the
// activation's (mul_bwd, relu_bwd), then layernorm_bwd; gradients at x, gain, bias, m and a.
TEST(opcpu_fd_norm_act) {
    const Backend *be = backend_cpu();
    unsigned long long s = 8;
    int N = 3, C = 11;
    long n = (long)N * C;
    real *x = rand_vec(n, 2, &s), *gain = rand_vec(C, 1.5, &s), *bias = rand_vec(C, 1, &s), *v = rand_vec(n, 1, &s);
    real *wt = rand_vec(n, 1, &s), *u = xmalloc(sizeof(real) * n), *sy = xmalloc(sizeof(real) * n), stat[6];
    real *dx = xmalloc(sizeof(real) * n), *g = xmalloc(sizeof(real) * n), *dm = xmalloc(sizeof(real) * n);
    for (int relu = 0; relu < 2; relu++) {
        real *dg = xcalloc(C, sizeof(real)), *db = xcalloc(C, sizeof(real));
        NaCtx c = {x, gain, bias, relu ? NULL : v, relu ? v : NULL, N, C};
        be->norm_act_fwd(u, sy, stat, x, gain, bias, c.mul, c.add, N, C);
        if (relu) be->relu_bwd(g, wt, u, (size_t)n);
        else be->mul_bwd(g, dm, wt, sy, v, (size_t)n);
        be->layernorm_bwd(dx, dg, db, g, x, stat, gain, N, C);
        CHECK_GRAD(na_out, &c, x, n, dx, wt, n, 1);
        CHECK_GRAD(na_out, &c, gain, C, dg, wt, n, 1);
        CHECK_GRAD(na_out, &c, bias, C, db, wt, n, 1);
        CHECK_GRAD(na_out, &c, v, n, relu ? g : dm, wt, n, 1);  // a's gradient is the one at y
        free(dg);
        free(db);
    }
    free(x); free(gain); free(bias); free(v); free(wt); free(u); free(sy); free(dx); free(g); free(dm);
}

TEST(opcpu_fd_lstm) { lstm_fd(0); }
TEST(opcpu_fd_lstm_layernorm) { lstm_fd(1); }

typedef struct { const real *logits; const int *tgt; int N, V; } XentCtx;
static void xent_out(void *p, double *out) {
    XentCtx *c = p;
    backend_cpu()->softmax_xent(out, NULL, c->logits, c->tgt, c->N, c->V, 1);
}

TEST(opcpu_fd_softmax_xent) {
    unsigned long long s = 5;
    int N = 4, V = 11;
    real *logits = rand_vec((long)N * V, 8, &s), *dl = xmalloc(sizeof(real) * N * V), loss[4];
    int *tgt = rand_tokens(N, V, &s);
    real wt[4] = {0.37, 0.37, 0.37, 0.37};  // the op's dscale scales every row alike
    backend_cpu()->softmax_xent(loss, dl, logits, tgt, N, V, 0.37);
    XentCtx c = {logits, tgt, N, V};
    CHECK_GRAD(xent_out, &c, logits, (long)N * V, dl, wt, N, 1);
    free(logits); free(dl); free(tgt);
}

typedef struct { const real *table; const int *tok; int N, E; } EmbedCtx;
static void embed_out(void *p, double *out) {
    EmbedCtx *c = p;
    backend_cpu()->embed_fwd(out, c->table, c->tok, c->N, c->E);
}

TEST(opcpu_fd_embed) {
    unsigned long long s = 6;
    int N = 9, E = 5, V = 4;  // more tokens than rows: rows repeat
    real *table = rand_vec((long)V * E, 1, &s), *wt = rand_vec((long)N * E, 1, &s);
    real *dt = xcalloc((size_t)V * E, sizeof(real));
    int *tok = rand_tokens(N, V, &s);
    backend_cpu()->embed_bwd(dt, wt, tok, N, E);
    EmbedCtx c = {table, tok, N, E};
    CHECK_GRAD(embed_out, &c, table, (long)V * E, dt, wt, (long)N * E, 1);
    free(table); free(wt); free(dt); free(tok);
}

#else
// ---------------------------------------------------------------------------------------
// Float build: against plain double references; poisoning, accumulation, aliasing, threads.

static void poison(real *p, long n) { for (long i = 0; i < n; i++) p[i] = NAN; }

// out[m][p] = start[m][p] (or 0) + sum_k A(m,k) B(k,p), in double; mag[m][p] = |start| + sum |terms|
// (the scale of the float rounding error). A(m,k) = A[m*am + k*ak], B(k,p) = B[k*bk + p].
static void ref_matmul(double *out, double *mag, const real *start, const real *A, long am, long ak,
                       const double *Bm, long bk, int M, int K, int P) {
    for (int m = 0; m < M; m++)
        for (int p = 0; p < P; p++) {
            double v = start ? start[(long)m * P + p] : 0, a = fabs(v);
            for (int k = 0; k < K; k++) {
                double t = A[m * am + k * ak] * Bm[k * bk + p];
                v += t;
                a += fabs(t);
            }
            out[(long)m * P + p] = v;
            mag[(long)m * P + p] = a;
        }
}

static double *to_double(const real *v, long n) {
    double *d = xmalloc(sizeof(double) * (size_t)(n + 1));
    for (long i = 0; i < n; i++) d[i] = v[i];
    return d;
}

// First i where got[i] is NaN or |got - ref| > rtol * scale (scale = mag[i], or 1 + |ref|
// when mag is NULL); -1 if none.
static long mismatch(const real *got, const double *ref, const double *mag, long n, double rtol) {
    for (long i = 0; i < n; i++) {
        double scale = mag ? mag[i] : 1 + fabs(ref[i]);
        if (!(fabs(got[i] - ref[i]) <= rtol * scale)) return i;
    }
    return -1;
}

#define CHECK_CLOSE(got, ref, mag, n, rtol, ...) do {                                   \
    long _i = mismatch(got, ref, mag, n, rtol);                                        \
    if (_i >= 0) {                                                                     \
        test_fail(__FILE__, __LINE__, "%s[%ld] = %.9g, expected %.9g", #got, _i,        \
                  (double)(got)[_i], (ref)[_i]);                                       \
        test_fail(__FILE__, __LINE__, __VA_ARGS__);                                    \
        return;                                                                        \
    }                                                                                  \
} while (0)

// Block row of each stored block (CSR order).
static int *block_rows(const BsMat *w) {
    int *br = xmalloc(sizeof(int) * (size_t)(w->nnzb + 1));
    for (int r = 0; r < w->nbr; r++)
        for (int k = w->row_ptr[r]; k < w->row_ptr[r + 1]; k++) br[k] = r;
    return br;
}

// The dense W of a block-sparse one (zeros off the mask), transposed: Wt[c][r] = W[r][c].
static double *dense_wt(const BsMat *w, const real *vals) {
    double *wt = xcalloc((size_t)w->rows * w->cols, sizeof(double));
    int bs = w->bs, *brow = block_rows(w);
    for (int k = 0; k < w->nnzb; k++)
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < bs; j++)
                wt[(long)(w->col_idx[k] * bs + j) * w->rows + brow[k] * bs + i] = vals[(long)k * bs * bs + i * bs + j];
    free(brow);
    return wt;
}

static void transpose_d(double *dst, const double *src, int R, int C) {
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) dst[(long)c * R + r] = src[(long)r * C + c];
}

// One bsmm configuration: fwd and bwd_data (overwrite into NAN, or accumulate onto random
// values) and bwd_weight (accumulates onto random values) against the dense product.
static int bsmm_case(int bs, int ng, int N, int acc, unsigned long long *s) {
    const Backend *be = backend_cpu();
    Mask m = holey_mask(3, 4, s);
    BsMat w;
    bsmat_from_mask(&w, &m, bs, ng);
    long ny = (long)N * w.rows, nx = (long)N * w.cols, nv = bsmat_nvals(&w), bb = (long)bs * bs;
    real *x = rand_vec(nx, 1, s), *dy = rand_vec(ny, 1, s), *vals = rand_vec(nv, 1, s);
    real *y = rand_vec(ny, 1, s), *dx = rand_vec(nx, 1, s), *dv = rand_vec(nv, 1, s);
    real *y0 = copy_of(y, ny), *dx0 = copy_of(dx, nx), *dv0 = copy_of(dv, nv);
    if (!acc) { poison(y, ny); poison(dx, nx); }
    be->bsmm_fwd(y, x, &w, vals, N, acc);
    be->bsmm_bwd_data(dx, dy, &w, vals, N, acc);
    be->bsmm_bwd_weight(dv, dy, x, &w, N);

    double *wt = dense_wt(&w, vals), *wd = xmalloc(sizeof(double) * (size_t)w.rows * w.cols);
    transpose_d(wd, wt, w.cols, w.rows);
    double *ry = xmalloc(sizeof(double) * ny), *my = xmalloc(sizeof(double) * ny);
    double *rx = xmalloc(sizeof(double) * nx), *mx = xmalloc(sizeof(double) * nx);
    ref_matmul(ry, my, acc ? y0 : NULL, x, w.cols, 1, wt, w.rows, N, w.cols, w.rows);
    ref_matmul(rx, mx, acc ? dx0 : NULL, dy, w.rows, 1, wd, w.cols, N, w.rows, w.cols);
    // dvals of block k: dy[:, block-row rows]^T x[:, block-col cols] + dv0
    double *rv = xmalloc(sizeof(double) * (nv + 1)), *mv = xmalloc(sizeof(double) * (nv + 1));
    double *xd = to_double(x, nx);
    int *brow = block_rows(&w), ok = 1;
    for (int k = 0; k < w.nnzb; k++)
        ref_matmul(rv + k * bb, mv + k * bb, dv0 + k * bb, dy + (long)brow[k] * bs, 1, w.rows,
                   xd + (long)w.col_idx[k] * bs, w.cols, bs, N, bs);
    ok = mismatch(y, ry, my, ny, 1e-5) < 0 && mismatch(dx, rx, mx, nx, 1e-5) < 0 &&
         mismatch(dv, rv, mv, nv, 1e-5) < 0;
    free(x); free(dy); free(vals); free(y); free(dx); free(dv); free(y0); free(dx0); free(dv0);
    free(wt); free(wd); free(ry); free(my); free(rx); free(mx); free(rv); free(mv); free(xd); free(brow);
    bsmat_free(&w);
    mask_free(&m);
    return ok;
}

TEST(opcpu_bsmm_vs_dense) {
    unsigned long long s = 11;
    static const int Ns[] = {1, 7, 33, 130};
    for (int bs = 8; bs <= 32; bs *= 2)
        for (int ng = 1; ng <= 4; ng += 3)
            for (int n = 0; n < 4; n++)
                for (int acc = 0; acc < 2; acc++)
                    CHECK_MSG(bsmm_case(bs, ng, Ns[n], acc, &s), "bs %d, %d gates, N %d, accumulate %d",
                              bs, ng, Ns[n], acc);
}

static int matmul_case(int N, int C, int R, int acc, int with_bias, unsigned long long *s) {
    const Backend *be = backend_cpu();
    long ny = (long)N * R, nx = (long)N * C, nw = (long)R * C;
    real *x = rand_vec(nx, 1, s), *W = rand_vec(nw, 1, s), *b = rand_vec(R, 1, s), *dy = rand_vec(ny, 1, s);
    real *y = rand_vec(ny, 1, s), *dx = rand_vec(nx, 1, s), *dW = rand_vec(nw, 1, s), *db = rand_vec(R, 1, s);
    real *y0 = copy_of(y, ny), *dW0 = copy_of(dW, nw), *db0 = copy_of(db, R);
    if (!acc) poison(y, ny);
    poison(dx, nx);
    be->matmul_fwd(y, x, W, with_bias ? b : NULL, N, C, R, acc);
    be->matmul_bwd(dx, dW, with_bias ? db : NULL, dy, x, W, N, C, R);

    double *Wd = to_double(W, nw), *Wt = xmalloc(sizeof(double) * nw), *xd = to_double(x, nx);
    transpose_d(Wt, Wd, R, C);
    double *ry = xmalloc(sizeof(double) * ny), *my = xmalloc(sizeof(double) * ny);
    double *rx = xmalloc(sizeof(double) * nx), *mx = xmalloc(sizeof(double) * nx);
    double *rw = xmalloc(sizeof(double) * nw), *mw = xmalloc(sizeof(double) * nw);
    double *rb = xmalloc(sizeof(double) * R), *mb = xmalloc(sizeof(double) * R), one = 1;
    ref_matmul(ry, my, acc ? y0 : NULL, x, C, 1, Wt, R, N, C, R);
    if (with_bias)
        for (long i = 0; i < ny; i++) { ry[i] += b[i % R]; my[i] += fabs(b[i % R]); }
    ref_matmul(rx, mx, NULL, dy, R, 1, Wd, C, N, R, C);
    ref_matmul(rw, mw, dW0, dy, 1, R, xd, C, R, N, C);
    ref_matmul(rb, mb, db0, dy, 1, R, &one, 0, R, N, 1);
    int ok = mismatch(y, ry, my, ny, 1e-5) < 0 && mismatch(dx, rx, mx, nx, 1e-5) < 0 &&
             mismatch(dW, rw, mw, nw, 1e-5) < 0 && (!with_bias || mismatch(db, rb, mb, R, 1e-5) < 0);
    free(x); free(W); free(b); free(dy); free(y); free(dx); free(dW); free(db); free(y0); free(dW0); free(db0);
    free(Wd); free(Wt); free(xd); free(ry); free(my); free(rx); free(mx); free(rw); free(mw); free(rb); free(mb);
    return ok;
}

TEST(opcpu_matmul_vs_naive) {
    unsigned long long s = 12;
    static const int Ns[] = {1, 7, 33, 130, 300};
    for (int n = 0; n < 5; n++)
        for (int acc = 0; acc < 2; acc++)
            for (int bias = 0; bias < 2; bias++) {
                CHECK_MSG(matmul_case(Ns[n], 37, 70, acc, bias, &s), "N %d, C 37, R 70, acc %d, bias %d", Ns[n], acc, bias);
                CHECK_MSG(matmul_case(Ns[n], 64, 16, acc, bias, &s), "N %d, C 64, R 16, acc %d, bias %d", Ns[n], acc, bias);
            }
}

TEST(opcpu_matmul_bwd_without_dx_or_dbias) {
    unsigned long long s = 13;
    int N = 9, C = 20, R = 17;
    real *x = rand_vec((long)N * C, 1, &s), *W = rand_vec((long)R * C, 1, &s), *dy = rand_vec((long)N * R, 1, &s);
    real *dW = xcalloc((size_t)R * C, sizeof(real)), *dW2 = xcalloc((size_t)R * C, sizeof(real));
    real *dx = xmalloc(sizeof(real) * N * C), *db = xcalloc(R, sizeof(real));
    backend_cpu()->matmul_bwd(NULL, dW, NULL, dy, x, W, N, C, R);
    backend_cpu()->matmul_bwd(dx, dW2, db, dy, x, W, N, C, R);
    CHECK(memcmp(dW, dW2, sizeof(real) * R * C) == 0);
    free(x); free(W); free(dy); free(dW); free(dW2); free(dx); free(db);
}

// RigL's score ops: rows [c0, c0 + R) of dy^T x from a dy wider than R, then its blocks' squared norms.
TEST(opcpu_dense_grad_and_block_sumsq_vs_naive) {
    unsigned long long s = 14;
    int N = 11, C = 24, R = 16, ldy = 40, c0 = 8, bs = 8;
    real *x = rand_vec((long)N * C, 1, &s), *dy = rand_vec((long)N * ldy, 1, &s);
    real *dW = rand_vec((long)R * C, 1, &s), *sq = xmalloc(sizeof(real) * 6);
    backend_cpu()->dense_grad(dW, dy, ldy, c0, x, N, C, R);
    backend_cpu()->block_sumsq(sq, dW, R, C, bs);
    double want[6] = {0};
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            double g = 0;
            for (int n = 0; n < N; n++) g += (double)dy[n * ldy + c0 + r] * x[n * C + c];
            CHECK_NEAR(dW[r * C + c], g, 1e-5 * (1 + fabs(g)));
            want[(r / bs) * 3 + c / bs] += g * g;
        }
    for (int b = 0; b < 6; b++) CHECK_NEAR(sq[b], want[b], 1e-5 * want[b]);
    free(x); free(dy); free(dW); free(sq);
}

// The LSTM cell written plainly in double: h, c, act and lnstat of one step.
typedef struct { const double *z, *cp, *bias, *gain; int B, H; double *act, *lnstat; } RefLstm;
static void ref_lstm_fwd(void *p, double *out) {
    RefLstm *r = p;
    int B = r->B, H = r->H;
    for (int b = 0; b < B; b++) {
        const double *z = r->z + (long)b * 4 * H;
        double a[4 * 64];
        for (int g = 0; g < 4; g++) {
            double mean = 0, var = 0;
            for (int j = 0; j < H; j++) mean += z[g * H + j] / H;
            for (int j = 0; j < H; j++) var += (z[g * H + j] - mean) * (z[g * H + j] - mean) / H;
            double rstd = 1 / sqrt(var + 1e-5);
            if (r->lnstat) { r->lnstat[b * 8 + 2 * g] = mean; r->lnstat[b * 8 + 2 * g + 1] = rstd; }
            for (int j = g * H; j < (g + 1) * H; j++) {
                double pre = (r->gain ? (z[j] - mean) * rstd * r->gain[j] : z[j]) + r->bias[j];
                a[j] = g == 2 ? tanh(pre) : 1 / (1 + exp(-pre));
            }
        }
        for (int j = 0; j < H; j++) {
            long o = (long)b * H + j;
            double c = a[H + j] * r->cp[o] + a[j] * a[2 * H + j];
            out[o] = a[3 * H + j] * tanh(c);
            out[(long)B * H + o] = c;
        }
        if (r->act) memcpy(r->act + (long)b * 4 * H, a, sizeof(double) * 4 * H);
    }
}

// Float lstm_fwd/bwd against ref_lstm_fwd and central differences of it (dh, dc weights).
static void lstm_vs_ref(int ln, int alias) {
    const Backend *be = backend_cpu();
    unsigned long long s = 20 + ln + 2 * alias;
    int B = 5, H = 24;
    long BH = (long)B * H, G = 4 * BH;
    real *z = rand_vec(G, 2, &s), *cp = rand_vec(BH, 1, &s), *bias = rand_vec(4 * H, 0.5, &s);
    real *gain = rand_vec(4 * H, 1.5, &s), *dhc = rand_vec(2 * BH, 1, &s);
    real *h = xmalloc(sizeof(real) * BH), *c = xmalloc(sizeof(real) * BH), *act = xmalloc(sizeof(real) * G);
    real lnstat[5 * 8], *dz = xmalloc(sizeof(real) * G), *dcp = xmalloc(sizeof(real) * BH);
    real *dbias = rand_vec(4 * H, 1, &s), *dgain = rand_vec(4 * H, 1, &s);
    real *dbias0 = copy_of(dbias, 4 * H), *dgain0 = copy_of(dgain, 4 * H), *dc = copy_of(dhc + BH, BH);
    real *dc_prev = alias ? dc : dcp;
    poison(h, BH); poison(c, BH); poison(act, G); poison(lnstat, 40); poison(dz, G); poison(dcp, BH);
    be->lstm_fwd(h, c, act, lnstat, z, cp, bias, ln ? gain : NULL, B, H);
    be->lstm_bwd(dz, dc_prev, dbias, ln ? dgain : NULL, dhc, dc, act, c, cp, z, lnstat,
                 ln ? gain : NULL, B, H);

    double *zd = to_double(z, G), *cpd = to_double(cp, BH), *bd = to_double(bias, 4 * H), *gd = to_double(gain, 4 * H);
    double *wt = to_double(dhc, 2 * BH), *out = xmalloc(sizeof(double) * 2 * BH), *ract = xmalloc(sizeof(double) * G);
    double rstat[40], *rdz = xmalloc(sizeof(double) * G), *rdcp = xmalloc(sizeof(double) * BH);
    double rdb[4 * 24], rdg[4 * 24];
    RefLstm r = {zd, cpd, bd, ln ? gd : NULL, B, H, ract, rstat};
    ref_lstm_fwd(&r, out);
    r.act = NULL; r.lnstat = NULL;
    for (long i = 0; i < G; i++) rdz[i] = fd_at(ref_lstm_fwd, &r, zd, i, wt, 2 * BH);
    for (long i = 0; i < BH; i++) rdcp[i] = fd_at(ref_lstm_fwd, &r, cpd, i, wt, 2 * BH);
    for (int j = 0; j < 4 * H; j++) {
        rdb[j] = dbias0[j] + fd_at(ref_lstm_fwd, &r, bd, j, wt, 2 * BH);
        rdg[j] = dgain0[j] + fd_at(ref_lstm_fwd, &r, gd, j, wt, 2 * BH);
    }
    CHECK_CLOSE(h, out, NULL, BH, 1e-5, "ln %d", ln);
    CHECK_CLOSE(c, out + BH, NULL, BH, 1e-5, "ln %d", ln);
    CHECK_CLOSE(act, ract, NULL, G, 1e-5, "ln %d", ln);
    if (ln) CHECK_CLOSE(lnstat, rstat, NULL, 40, 1e-5, "ln %d", ln);
    CHECK_CLOSE(dz, rdz, NULL, G, 1e-4, "ln %d, alias %d", ln, alias);
    CHECK_CLOSE(dc_prev, rdcp, NULL, BH, 1e-4, "ln %d, alias %d", ln, alias);
    CHECK_CLOSE(dbias, rdb, NULL, 4 * H, 1e-4, "ln %d", ln);
    if (ln) CHECK_CLOSE(dgain, rdg, NULL, 4 * H, 1e-4, "ln %d", ln);
    else CHECK(memcmp(dgain, dgain0, sizeof(real) * 4 * H) == 0);
    free(z); free(cp); free(bias); free(gain); free(dhc); free(h); free(c); free(act); free(dz); free(dcp);
    free(dbias); free(dgain); free(dbias0); free(dgain0); free(dc);
    free(zd); free(cpd); free(bd); free(gd); free(wt); free(out); free(ract); free(rdz); free(rdcp);
}
TEST(opcpu_lstm_vs_reference) { lstm_vs_ref(0, 0); }
TEST(opcpu_lstm_layernorm_vs_reference) { lstm_vs_ref(1, 0); }
TEST(opcpu_lstm_bwd_dc_prev_aliases_dc) { lstm_vs_ref(1, 1); }

// Layer norm against a plain double reference; norm_act against its definition.
TEST(opcpu_layernorm_and_norm_act_vs_reference) {
    const Backend *be = backend_cpu();
    unsigned long long s = 32;
    int N = 9, C = 70;
    long n = (long)N * C;
    real *x = rand_vec(n, 3, &s), *gain = rand_vec(C, 1.5, &s), *bias = rand_vec(C, 1, &s), *dy = rand_vec(n, 1, &s);
    real *y = xmalloc(sizeof(real) * n), *stat = xmalloc(sizeof(real) * 2 * N), *dx = xmalloc(sizeof(real) * n);
    real *dg = rand_vec(C, 1, &s), *db = rand_vec(C, 1, &s);
    double *ry = xmalloc(sizeof(double) * n), *rdx = xmalloc(sizeof(double) * n), *rdg = to_double(dg, C), *rdb = to_double(db, C);
    for (int r = 0; r < N; r++) {
        const real *xr = x + (long)r * C, *dyr = dy + (long)r * C;
        double mean = 0, var = 0, s1 = 0, s2 = 0;
        for (int j = 0; j < C; j++) mean += xr[j] / (double)C;
        for (int j = 0; j < C; j++) var += (xr[j] - mean) * (xr[j] - mean) / C;
        double rstd = 1 / sqrt(var + 1e-5);
        for (int j = 0; j < C; j++) {
            double xh = (xr[j] - mean) * rstd;
            ry[(long)r * C + j] = xh * gain[j] + bias[j];
            rdg[j] += dyr[j] * xh;
            rdb[j] += dyr[j];
            s1 += dyr[j] * gain[j];
            s2 += dyr[j] * gain[j] * xh;
        }
        for (int j = 0; j < C; j++)
            rdx[(long)r * C + j] = rstd * (dyr[j] * gain[j] - s1 / C - (xr[j] - mean) * rstd * s2 / C);
    }
    poison(y, n); poison(stat, 2 * N); poison(dx, n);
    be->layernorm_fwd(y, stat, x, gain, bias, N, C);
    be->layernorm_bwd(dx, dg, db, dy, x, stat, gain, N, C);
    CHECK_CLOSE(y, ry, NULL, n, 1e-5, "layernorm_fwd");
    CHECK_CLOSE(dx, rdx, NULL, n, 1e-5, "layernorm_bwd dx");
    CHECK_CLOSE(dg, rdg, NULL, C, 1e-5, "layernorm_bwd dgain");
    CHECK_CLOSE(db, rdb, NULL, C, 1e-5, "layernorm_bwd dbias");
    // norm_act_fwd: the activation after the norm just checked, against its definition: u =
    // y * mul (s = y), relu(y + add), relu(y); the activations' backward likewise.
    real *u = xmalloc(sizeof(real) * n), *sy = xmalloc(sizeof(real) * n), *g = xmalloc(sizeof(real) * n);
    for (int mode = 0; mode < 3; mode++) {
        const real *mul = mode == 0 ? dy : NULL, *add = mode == 1 ? dy : NULL;
        poison(u, n);
        be->norm_act_fwd(u, sy, stat, x, gain, bias, mul, add, N, C);
        for (long i = 0; i < n; i++) {
            real v = mul ? y[i] * mul[i] : y[i] + (add ? add[i] : 0);
            CHECK_MSG(u[i] == (mul || v > 0 ? v : 0) && (!mul || sy[i] == y[i]), "norm_act_fwd mode %d at %ld", mode, i);
        }
    }
    be->relu_bwd(g, dy, u, (size_t)n);
    for (long i = 0; i < n; i++) CHECK(g[i] == (u[i] > 0 ? dy[i] : 0));
    be->mul_bwd(g, u, dy, x, y, (size_t)n);
    for (long i = 0; i < n; i++) CHECK(g[i] == dy[i] * y[i] && u[i] == dy[i] * x[i]);
    free(u); free(sy); free(g);
    free(x); free(gain); free(bias); free(dy); free(y); free(stat); free(dx); free(dg); free(db);
    free(ry); free(rdx); free(rdg); free(rdb);
}

// ema: avg = decay * avg + (1 - decay) * p, in float.
TEST(opcpu_ema_update) {
    real avg[3] = {1, -2, 0.5f}, p[3] = {3, 2, 0.5f};
    backend_cpu()->ema(avg, p, 0.75f, 3);
    CHECK(avg[0] == 1.5f && avg[1] == -1.0f && avg[2] == 0.5f);
}

// Per row: loss = logsumexp - logit[target]; dlogits = (softmax - onehot) * dscale.
TEST(opcpu_softmax_xent_vs_reference) {
    unsigned long long s = 30;
    int N = 7, V = 256;
    real *logits = rand_vec((long)N * V, 20, &s), loss[7], loss2[7];
    logits[3] = 1e4;  // a dominant logit: overflows without the max subtraction
    int *tgt = rand_tokens(N, V, &s);
    real *dl = xmalloc(sizeof(real) * N * V), *inplace = copy_of(logits, (long)N * V);
    double rl[7], *rd = xmalloc(sizeof(double) * N * V);
    for (int n = 0; n < N; n++) {
        const real *l = logits + (long)n * V;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < V; j++) mx = fmax(mx, l[j]);
        for (int j = 0; j < V; j++) sum += exp(l[j] - mx);
        rl[n] = mx + log(sum) - l[tgt[n]];
        for (int j = 0; j < V; j++) rd[(long)n * V + j] = (exp(l[j] - mx) / sum - (j == tgt[n])) * 0.25;
    }
    poison(loss, N); poison(dl, (long)N * V);
    backend_cpu()->softmax_xent(loss, dl, logits, tgt, N, V, 0.25);
    CHECK_CLOSE(loss, rl, NULL, N, 1e-5, "loss");
    CHECK_CLOSE(dl, rd, NULL, (long)N * V, 1e-6, "dlogits");
    backend_cpu()->softmax_xent(loss2, inplace, inplace, tgt, N, V, 0.25);  // dlogits aliases logits
    CHECK(memcmp(loss, loss2, sizeof loss) == 0);
    CHECK(memcmp(dl, inplace, sizeof(real) * N * V) == 0);
    backend_cpu()->softmax_xent(loss2, NULL, logits, tgt, N, V, 0.25);
    CHECK(memcmp(loss, loss2, sizeof loss) == 0);
    free(logits); free(tgt); free(dl); free(inplace); free(rd);
}

TEST(opcpu_embed_vs_reference) {
    unsigned long long s = 31;
    int N = 33, E = 19, V = 6;
    real *table = rand_vec((long)V * E, 1, &s), *dout = rand_vec((long)N * E, 1, &s);
    real *out = xmalloc(sizeof(real) * N * E), *dt = rand_vec((long)V * E, 1, &s);
    int *tok = rand_tokens(N, V, &s);
    double *rdt = to_double(dt, (long)V * E);
    for (int n = 0; n < N; n++)
        for (int e = 0; e < E; e++) rdt[(long)tok[n] * E + e] += dout[(long)n * E + e];
    poison(out, (long)N * E);
    backend_cpu()->embed_fwd(out, table, tok, N, E);
    backend_cpu()->embed_bwd(dt, dout, tok, N, E);
    for (int n = 0; n < N; n++) CHECK(memcmp(out + (long)n * E, table + (long)tok[n] * E, sizeof(real) * E) == 0);
    CHECK_CLOSE(dt, rdt, NULL, (long)V * E, 1e-6, "dtable");
    free(table); free(dout); free(out); free(dt); free(tok); free(rdt);
}

// embed_bwd's documented order (embed_cpu.c), written plainly: row v's occurrences in n
// order, summed from zero in runs of `run`, each run added to dt[v] when it ends.
static void embed_bwd_in_runs(real *dt, const real *dout, const int *tok, int N, int E, int run) {
    for (int v = 0; v < SW_VOCAB; v++)
        for (int e = 0; e < E; e++) {
            real acc = 0;
            int k = 0;
            for (int n = 0; n < N; n++) {
                if (tok[n] != v) continue;
                acc += dout[(long)n * E + e];
                if (++k % run == 0) dt[(long)v * E + e] += acc, acc = 0;
            }
            if (k % run) dt[(long)v * E + e] += acc;
        }
}

// The exact order of the adds (the CUDA twin follows it to the bit): values of 1e8 and 1,
// where the grouping changes the sum; row 5 with 150 occurrences (3 runs, the last partial,
// starting with 1e8, -1e8, 1e8, the rest ones: the runs lose their ones, plain n order keeps
// some); a table only max token + 1 rows long whose absent rows must stay as they were.
TEST(opcpu_embed_bwd_run_order) {
    unsigned long long s = 32;
    enum { N = 300, E = 3, V = 17 };
    int tok[N];
    real *dout = xmalloc(sizeof(real) * N * E), dt[V * E], ref[V * E], plain[V * E];
    for (int n = 0; n < N; n++) tok[n] = n % 2 ? 9 + (int)(test_rand(&s) * (V - 9)) : 5;
    tok[N - 1] = V - 1;
    for (int i = 0; i < N * E; i++) {
        double u = test_rand(&s);
        dout[i] = (real)((u < 0.5 ? 1 : -1) * (test_rand(&s) < 0.2 ? 1e8 : 1));
    }
    for (int n = 0; n < N; n += 2)  // row 5 (even n): +-1e8 where each run starts, else 1
        for (int e = 0; e < E; e++) dout[n * E + e] = n % 128 ? 1 : n % 256 ? -1e8 : 1e8;
    for (int i = 0; i < V * E; i++) dt[i] = ref[i] = plain[i] = 7;
    backend_cpu()->embed_bwd(dt, dout, tok, N, E);
    embed_bwd_in_runs(ref, dout, tok, N, E, SW_EMBED_RUN);
    embed_bwd_in_runs(plain, dout, tok, N, E, N);  // one run: plain n order
    CHECK(memcmp(dt, ref, sizeof dt) == 0);
    CHECK_MSG(memcmp(ref, plain, sizeof ref) != 0, "the values do not tell the orders apart");
    for (int v = 0; v < V; v++)
        if (v != 5 && v < 9)
            for (int e = 0; e < E; e++) CHECK_MSG(dt[v * E + e] == 7, "row %d (absent) changed", v);
    free(dout);
}

// ---- the same bits with 1 and 2 threads ----

// Every output of one run of all ops (N, B large enough that both threads get work and
// the chunked loops take several chunks).
typedef struct { real *p[32]; long n[32]; int count; } Outs;
static real *out_buf(Outs *o, long n) {
    o->n[o->count] = n;
    return o->p[o->count++] = xmalloc(sizeof(real) * (size_t)(n + 1));
}

static void run_all_ops(Outs *o) {
    const Backend *be = backend_cpu();
    unsigned long long s = 40;
    int N = 300, bs = 16, B = 130, H = 48, V = 256, E = 24, C = 70, R = 100;
    long BH = (long)B * H;
    Mask m = holey_mask(3, 4, &s);
    BsMat w;
    bsmat_from_mask(&w, &m, bs, 4);
    long ny = (long)N * w.rows, nx = (long)N * w.cols, nv = bsmat_nvals(&w);
    real *x = rand_vec(nx, 1, &s), *dy = rand_vec(ny, 1, &s), *vals = rand_vec(nv, 1, &s);
    be->bsmm_fwd(out_buf(o, ny), x, &w, vals, N, 0);
    be->bsmm_bwd_data(out_buf(o, nx), dy, &w, vals, N, 0);
    be->bsmm_bwd_weight(memset(out_buf(o, nv), 0, sizeof(real) * nv), dy, x, &w, N);

    real *xm = rand_vec((long)N * C, 1, &s), *W = rand_vec((long)R * C, 1, &s), *b = rand_vec(R, 1, &s);
    real *y = out_buf(o, (long)N * R), *dW = out_buf(o, (long)R * C), *db = out_buf(o, R);
    be->matmul_fwd(y, xm, W, b, N, C, R, 0);
    memset(dW, 0, sizeof(real) * R * C);
    memset(db, 0, sizeof(real) * R);
    be->matmul_bwd(out_buf(o, (long)N * C), dW, db, y, xm, W, N, C, R);

    real *z = rand_vec(4 * BH, 2, &s), *cp = rand_vec(BH, 1, &s), *bias = rand_vec(4 * H, 1, &s);
    real *gain = rand_vec(4 * H, 1, &s), *dh = rand_vec(BH, 1, &s), *dc = rand_vec(BH, 1, &s);
    real *h = out_buf(o, BH), *c = out_buf(o, BH), *act = out_buf(o, 4 * BH), *lnstat = out_buf(o, 8L * B);
    real *dbias = out_buf(o, 4 * H), *dgain = out_buf(o, 4 * H);
    be->lstm_fwd(h, c, act, lnstat, z, cp, bias, gain, B, H);
    memset(dbias, 0, sizeof(real) * 4 * H);
    memset(dgain, 0, sizeof(real) * 4 * H);
    be->lstm_bwd(out_buf(o, 4 * BH), out_buf(o, BH), dbias, dgain, dh, dc, act, c, cp, z, lnstat, gain, B, H);

    real *lny = out_buf(o, 4 * BH), *lns = out_buf(o, 2L * B);
    real *dlg = memset(out_buf(o, 4 * H), 0, sizeof(real) * 4 * H), *dlb = memset(out_buf(o, 4 * H), 0, sizeof(real) * 4 * H);
    be->layernorm_fwd(lny, lns, z, gain, bias, B, 4 * H);
    be->layernorm_bwd(out_buf(o, 4 * BH), dlg, dlb, lny, z, lns, gain, B, 4 * H);

    int *tok = rand_tokens(N, V, &s);
    real *logits = rand_vec((long)N * V, 5, &s);
    be->softmax_xent(out_buf(o, N), out_buf(o, (long)N * V), logits, tok, N, V, 0.5);
    be->embed_fwd(out_buf(o, (long)N * E), logits, tok, N, E);
    be->embed_bwd(memset(out_buf(o, (long)V * E), 0, sizeof(real) * V * E), logits, tok, N, E);
    free(x); free(dy); free(vals); free(xm); free(W); free(b); free(z); free(cp); free(bias); free(gain);
    free(dh); free(dc); free(tok); free(logits);
    bsmat_free(&w);
    mask_free(&m);
}

TEST(opcpu_same_bits_with_1_and_2_threads) {
    int keep = omp_get_max_threads();
    Outs a = {0}, b = {0};
    omp_set_num_threads(1);
    run_all_ops(&a);
    omp_set_num_threads(2);
    run_all_ops(&b);
    omp_set_num_threads(keep);
    for (int i = 0; i < a.count; i++) {
        CHECK_MSG(memcmp(a.p[i], b.p[i], sizeof(real) * a.n[i]) == 0, "output %d (of %d) differs", i, a.count);
        free(a.p[i]);
        free(b.p[i]);
    }
}
#endif
