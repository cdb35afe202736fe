// test_gpu_ops.c: the CUDA backend's dense ops against the CPU reference: LSTM cell (with and
// without layer norm, dc aliasing), softmax cross-entropy (dlogits separate, aliased, absent),
// embedding (wide rows too, bf16 input from a twin), cuBLAS matmul, Adam, sumsq, axpy. Outputs
// poisoned with NaN first.
#include "gpu_check.h"

// Compares device result `dev` with the host reference; the message names the case.
#define CMP(dev, ref, n, tol, ...)                                                             \
    do {                                                                                      \
        double e_ = d_err(gpu, dev, ref, n);                                                  \
        if (!(e_ < (tol))) {                                                                  \
            char m_[256];                                                                     \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                             \
            test_fail(__FILE__, __LINE__, "%s: rel L2 %.3g (tol %g)", m_, e_, (double)(tol)); \
            return;                                                                           \
        }                                                                                     \
    } while (0)
#define RB(n) ((size_t)(n) * sizeof(real))

TEST(gpu_lstm_matches_cpu) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda(PREC_FP32);
    const int Bs[] = {1, 7, 33, 128}, Hs[] = {8, 100, 512};
    unsigned long long s = 3;
    for (int ln = 0; ln < 2; ln++)
        for (int bi = 0; bi < 4; bi++)
            for (int hi = 0; hi < 3; hi++) {
                int B = Bs[bi], H = Hs[hi];
                size_t n1 = (size_t)B * H, n4 = 4 * n1;
                real *z = h_rand(n4, &s, 2), *cp = h_rand(n1, &s, 1), *bias = h_rand(4 * H, &s, 0.5);
                real *gain = h_rand(4 * H, &s, 0.5), *dh = h_rand(n1, &s, 1), *dc = h_rand(n1, &s, 1);
                real *db0 = h_rand(4 * H, &s, 1), *dg0 = h_rand(4 * H, &s, 1);
                for (int j = 0; j < 4 * H; j++) gain[j] += 1;
                real *h = xmalloc(sizeof(real) * n1), *c = xmalloc(sizeof(real) * n1), *act = xmalloc(sizeof(real) * n4);
                real *st = xmalloc(sizeof(real) * 8 * B), *dz = xmalloc(sizeof(real) * n4), *dcp = xmalloc(sizeof(real) * n1);
                real *g = ln ? gain : NULL;
                cpu->lstm_fwd(h, c, act, st, z, cp, bias, g, B, H);
                real *d_z = d_from(gpu, z, RB(n4)), *d_cp = d_from(gpu, cp, n1 * sizeof(real));
                real *d_bias = d_from(gpu, bias, 4 * H * sizeof(real)), *d_g = d_from(gpu, gain, 4 * H * sizeof(real));
                real *d_h = gpu->alloc(n1 * sizeof(real)), *d_c = gpu->alloc(n1 * sizeof(real));
                real *d_act = gpu->alloc(n4 * sizeof(real)), *d_st = gpu->alloc(8 * B * sizeof(real));
                d_poison(gpu, d_h, n1); d_poison(gpu, d_c, n1); d_poison(gpu, d_act, n4); d_poison(gpu, d_st, 8 * B);
                gpu->lstm_fwd(d_h, d_c, d_act, ln ? d_st : NULL, d_z, d_cp, d_bias, ln ? d_g : NULL, B, H);
                CMP(d_h, h, n1, TOL_FP32, "lstm_fwd h, B=%d H=%d ln=%d", B, H, ln);
                CMP(d_c, c, n1, TOL_FP32, "lstm_fwd c, B=%d H=%d ln=%d", B, H, ln);
                CMP(d_act, act, n4, TOL_FP32, "lstm_fwd act, B=%d H=%d ln=%d", B, H, ln);
                if (ln) CMP(d_st, st, 8 * B, TOL_FP32, "lstm_fwd lnstat, B=%d H=%d", B, H);
                // Backward from the CPU's forward state, so both see identical inputs.
                int alias = B % 2;  // odd B: dc_prev is dc itself
                real *d_dh = d_from(gpu, dh, n1 * sizeof(real)), *d_dc = d_from(gpu, dc, n1 * sizeof(real));
                real *d_dz = gpu->alloc(n4 * sizeof(real)), *d_dcp = alias ? d_dc : gpu->alloc(n1 * sizeof(real));
                real *d_db = d_from(gpu, db0, 4 * H * sizeof(real)), *d_dg = d_from(gpu, dg0, 4 * H * sizeof(real));
                gpu->to_device(d_act, act, n4 * sizeof(real));
                gpu->to_device(d_c, c, n1 * sizeof(real));
                gpu->to_device(d_st, st, 8 * B * sizeof(real));
                d_poison(gpu, d_dz, n4);
                if (!alias) d_poison(gpu, d_dcp, n1);
                real *cpu_dcp = alias ? dc : dcp;
                cpu->lstm_bwd(dz, cpu_dcp, db0, dg0, dh, dc, act, c, cp, z, st, g, B, H);
                gpu->lstm_bwd(d_dz, d_dcp, d_db, d_dg, d_dh, d_dc, d_act, d_c, d_cp, d_z, ln ? d_st : NULL,
                              ln ? d_g : NULL, B, H);
                CMP(d_dz, dz, n4, TOL_FP32, "lstm_bwd dz, B=%d H=%d ln=%d", B, H, ln);
                CMP(d_dcp, cpu_dcp, n1, TOL_FP32, "lstm_bwd dc_prev, B=%d H=%d ln=%d alias=%d", B, H, ln, alias);
                CMP(d_db, db0, 4 * H, TOL_FP32, "lstm_bwd dbias, B=%d H=%d ln=%d", B, H, ln);
                if (ln) CMP(d_dg, dg0, 4 * H, TOL_FP32, "lstm_bwd dln_gain, B=%d H=%d", B, H);
                real *frees[] = {z, cp, bias, gain, dh, dc, db0, dg0, h, c, act, st, dz, dcp};
                for (int i = 0; i < 14; i++) free(frees[i]);
                real *dfrees[] = {d_z, d_cp, d_bias, d_g, d_h, d_c, d_act, d_st, d_dh, d_dc, d_dz, d_db, d_dg};
                for (int i = 0; i < 13; i++) gpu->free(dfrees[i]);
                if (!alias) gpu->free(d_dcp);
            }
}

TEST(gpu_softmax_xent_matches_cpu) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda(PREC_FP32);
    const int Ns[] = {1, 7, 33, 384}, V = SW_VOCAB;
    unsigned long long s = 8;
    for (int ni = 0; ni < 4; ni++)
        for (int mode = 0; mode < 3; mode++) {  // dlogits: 0 separate, 1 aliased, 2 NULL
            int N = Ns[ni];
            size_t n = (size_t)N * V;
            real *l = h_rand(n, &s, 4), *loss = xmalloc(sizeof(real) * N), *dl = xmalloc(sizeof(real) * n);
            int *tgt = xmalloc(sizeof(int) * N);
            for (int i = 0; i < N; i++) tgt[i] = (int)(test_rand(&s) * V);
            real *d_l = d_from(gpu, l, n * sizeof(real)), *d_loss = gpu->alloc(N * sizeof(real));
            real *d_dl = mode == 0 ? gpu->alloc(n * sizeof(real)) : mode == 1 ? d_l : NULL;
            int *d_t = d_from(gpu, tgt, N * sizeof(int));
            d_poison(gpu, d_loss, N);
            if (mode == 0) d_poison(gpu, d_dl, n);
            cpu->softmax_xent(loss, mode == 2 ? NULL : dl, l, tgt, N, V, 0.25f);
            gpu->softmax_xent(d_loss, d_dl, d_l, d_t, N, V, 0.25f);
            CMP(d_loss, loss, N, TOL_FP32, "softmax loss N=%d mode=%d", N, mode);
            if (mode != 2) CMP(d_dl, dl, n, TOL_FP32, "softmax dlogits N=%d mode=%d", N, mode);
            gpu->free(d_l); gpu->free(d_loss); gpu->free(d_t);
            if (mode == 0) gpu->free(d_dl);
            free(l); free(loss); free(dl); free(tgt);
        }
}

// x rounded to bf16 (to nearest, ties to even), as the twins hold it.
static real bf16_round(real x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

// Whether the device's n reals equal the host's bit for bit; else reports the first that differs.
static int same_bits(const Backend *gpu, const real *d, const real *ref, size_t n, const char *what) {
    real *h = h_from(gpu, d, n);
    size_t i = 0;
    while (i < n && memcmp(h + i, ref + i, sizeof(real)) == 0) i++;
    if (i < n) test_fail(__FILE__, __LINE__, "%s: [%zu] is %.9g, the CPU's %.9g", what, i, h[i], ref[i]);
    free(h);
    return i == n;
}

// embed_fwd and embed_bwd of N tokens (u^skew * 256 for u uniform: repeats grow with skew) on
// the CUDA backend `prec` against the CPU, bit for bit: bwd adds in the same order. The table
// has max token + 1 rows (rows past it must not be read or written). In bf16, dout is read
// through a keep_lowp twin, and the CPU sums the same values rounded to bf16.
static int embed_case(const char *prec, int N, int E, int skew, unsigned long long *s) {
    const Backend *cpu = backend_cpu(), *gpu = cuda_named(prec);
    int *tok = xmalloc(sizeof(int) * N), V = 0;
    for (int i = 0; i < N; i++) {
        tok[i] = (int)(pow(test_rand(s), skew) * SW_VOCAB);
        V = tok[i] >= V ? tok[i] + 1 : V;
    }
    size_t nt = (size_t)V * E, no = (size_t)N * E;
    real *table = h_rand(nt, s, 1), *dtab = h_rand(nt, s, 1), *dout = h_rand(no, s, 1), *out = xmalloc(sizeof(real) * no);
    real *d_table = d_from(gpu, table, RB(nt)), *d_dtab = d_from(gpu, dtab, RB(nt));
    real *d_dout = d_from(gpu, dout, RB(no)), *d_out = gpu->alloc(RB(no));
    int *d_tok = d_from(gpu, tok, N * sizeof(int));
    if (gpu->keep_lowp) {
        gpu->keep_lowp(d_dout, no);
        for (size_t i = 0; i < no; i++) dout[i] = bf16_round(dout[i]);
    }
    d_poison(gpu, d_out, no);
    cpu->embed_fwd(out, table, tok, N, E);
    gpu->embed_fwd(d_out, d_table, d_tok, N, E);
    cpu->embed_bwd(dtab, dout, tok, N, E);
    gpu->embed_bwd(d_dtab, d_dout, d_tok, N, E);
    char what[96];
    snprintf(what, sizeof what, "%s embed N=%d E=%d skew=%d: fwd", prec, N, E, skew);
    int ok = same_bits(gpu, d_out, out, no, what);
    snprintf(what, sizeof what, "%s embed N=%d E=%d skew=%d: bwd", prec, N, E, skew);
    ok = ok && same_bits(gpu, d_dtab, dtab, nt, what);
    gpu->free(d_table); gpu->free(d_dtab); gpu->free(d_dout); gpu->free(d_out); gpu->free(d_tok);
    free(table); free(dtab); free(dout); free(out); free(tok);
    return ok;
}

TEST(gpu_embed_matches_cpu) {
    const int Ns[] = {1, 7, 384}, Es[] = {3, 64, 200};
    unsigned long long s = 21;
    for (int ni = 0; ni < 3; ni++)
        for (int ei = 0; ei < 3; ei++)
            if (!embed_case("fp32", Ns[ni], Es[ei], 2, &s)) return;
}

// Wide rows (the LSTM's input table is [256, 4H]): with skew 4 one token holds about a quarter
// of the positions (4 runs of 1000, 12 of 3000), odd E takes the scalar forward, N > 1024 takes
// several passes of the plan's sort, and bf16 reads dout from its twin.
TEST(gpu_embed_wide_matches_cpu) {
    unsigned long long s = 22;
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        if (!embed_case(precs[p], 1000, 4096, 4, &s)) return;
        if (!embed_case(precs[p], 3000, 4099, 4, &s)) return;
        if (!embed_case(precs[p], 5000, 515, 1, &s)) return;
    }
}

static void check_matmul(const char *prec) {
    const Backend *cpu = backend_cpu(), *gpu = cuda_named(prec);
    const int Ns[] = {1, 7, 33, 384}, Cs[] = {16, 100}, Rs[] = {256, 72};
    double tol = tol_for(prec);
    unsigned long long s = 4;
    for (int ni = 0; ni < 4; ni++)
        for (int k = 0; k < 2; k++)
            for (int variant = 0; variant < 4; variant++) {  // bit 0: bias, bit 1: accumulate / dx absent
                int N = Ns[ni], C = Cs[k], R = Rs[k], hasb = variant & 1, acc = variant >> 1;
                size_t nx = (size_t)N * C, ny = (size_t)N * R, nw = (size_t)R * C;
                real *x = h_rand(nx, &s, 1), *W = h_rand(nw, &s, 0.3), *b = h_rand(R, &s, 1), *y = h_rand(ny, &s, 1);
                real *dy = h_rand(ny, &s, 1), *dW = h_rand(nw, &s, 1), *db = h_rand(R, &s, 1), *dx = xmalloc(sizeof(real) * nx);
                real *d_x = d_from(gpu, x, RB(nx)), *d_W = d_from(gpu, W, RB(nw)), *d_b = d_from(gpu, b, RB(R));
                real *d_y = d_from(gpu, y, RB(ny)), *d_dy = d_from(gpu, dy, RB(ny)), *d_dW = d_from(gpu, dW, RB(nw));
                real *d_db = d_from(gpu, db, RB(R)), *d_dx = gpu->alloc(RB(nx));
                if (!acc) d_poison(gpu, d_y, ny);
                cpu->matmul_fwd(y, x, W, hasb ? b : NULL, N, C, R, acc);
                gpu->matmul_fwd(d_y, d_x, d_W, hasb ? d_b : NULL, N, C, R, acc);
                CMP(d_y, y, ny, tol, "%s matmul_fwd N=%d C=%d R=%d bias=%d acc=%d", prec, N, C, R, hasb, acc);
                d_poison(gpu, d_dx, nx);
                cpu->matmul_bwd(acc ? NULL : dx, dW, hasb ? db : NULL, dy, x, W, N, C, R);
                gpu->matmul_bwd(acc ? NULL : d_dx, d_dW, hasb ? d_db : NULL, d_dy, d_x, d_W, N, C, R);
                if (!acc) CMP(d_dx, dx, nx, tol, "%s matmul_bwd dx N=%d C=%d R=%d", prec, N, C, R);
                CMP(d_dW, dW, nw, tol, "%s matmul_bwd dW N=%d C=%d R=%d", prec, N, C, R);
                if (hasb) CMP(d_db, db, R, TOL_FP32, "%s matmul_bwd dbias N=%d R=%d", prec, N, R);
                real *fr[] = {x, W, b, y, dy, dW, db, dx}, *dfr[] = {d_x, d_W, d_b, d_y, d_dy, d_dW, d_db, d_dx};
                for (int i = 0; i < 8; i++) { free(fr[i]); gpu->free(dfr[i]); }
            }
}

TEST(gpu_matmul_fp32_matches_cpu) { check_matmul("fp32"); }
TEST(gpu_matmul_bf16_matches_cpu) { check_matmul("bf16"); }

TEST(gpu_adam_sumsq_axpy_dyn_update_sq_acc_match_cpu) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda(PREC_FP32);
    size_t n = 10007;
    unsigned long long s = 12;
    real *p = h_rand(n, &s, 1), *g = h_rand(n, &s, 1), *m = h_rand(n, &s, 0.1), *v = h_rand(n, &s, 0.01);
    for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    real *d_p = d_from(gpu, p, RB(n)), *d_g = d_from(gpu, g, RB(n)), *d_m = d_from(gpu, m, RB(n)), *d_v = d_from(gpu, v, RB(n));
    AdamArgs a = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.7f, 3};
    cpu->adam(p, g, m, v, n, a);
    gpu->adam(d_p, d_g, d_m, d_v, n, a);
    CMP(d_p, p, n, 1e-6, "adam p");
    CMP(d_m, m, n, 1e-6, "adam m");
    CMP(d_v, v, n, 1e-6, "adam v");
    double sc = cpu->sumsq(p, n), sg = gpu->sumsq(d_p, n);
    CHECK_MSG(fabs(sg - sc) <= 1e-6 * sc, "sumsq gpu %.17g cpu %.17g", sg, sc);
    CHECK_MSG(gpu->sumsq(d_p, n) == sg, "sumsq differs between two runs");
    cpu->axpy(p, g, -0.3f, n);
    gpu->axpy(d_p, d_g, -0.3f, n);
    CMP(d_p, p, n, 1e-6, "axpy");
    // dynamic evaluation's update (ops/dyn_update.h): m as the trained weights, |v| as rms,
    // decay rates from 0 to past their cap of 1
    gpu->to_device(d_m, m, RB(n));
    gpu->to_device(d_v, v, RB(n));
    DynArgs da = {1e-3f, 2e4f, 1e-4f};
    cpu->dyn_update(p, g, m, v, n, da);
    gpu->dyn_update(d_p, d_g, d_m, d_v, n, da);
    CMP(d_p, p, n, 1e-6, "dyn_update");
    // its statistics: squared gradients summed in double, twice, the same bits as the CPU's
    double *acc = xcalloc(n, sizeof(double)), *got = xmalloc(n * sizeof(double)), *d_acc = gpu->alloc(n * sizeof(double));
    gpu->zero(d_acc, n * sizeof(double));
    for (int k = 0; k < 2; k++) cpu->sq_acc(acc, g, n), gpu->sq_acc(d_acc, d_g, n);
    gpu->to_host(got, d_acc, n * sizeof(double));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += got[i] != acc[i];
    CHECK_MSG(bad == 0, "sq_acc: %zu of %zu sums differ from the CPU's", bad, n);
    gpu->free(d_acc); free(acc); free(got);
    gpu->free(d_p); gpu->free(d_g); gpu->free(d_m); gpu->free(d_v);
    free(p); free(g); free(m); free(v);
}


