// test_gpu_bsmm.c: the CUDA block-sparse matmuls against the CPU reference, every block size,
// dense/random/ba/ws masks, odd N, both precisions, with and without accumulation; outputs
// poisoned with NaN first; the same inputs twice give the same bits; both copy forms of bf16
// block 32 (the same bits); the bf16 weight shadow.
#include "sparse/bsmat.h"
#include "sparse/mask.h"
#include "gpu_check.h"

static const char *masks[] = {"dense", "random_0.2", "ba_2", "ws_4_0.2"};
static const int Ns[] = {1, 7, 33, 384};
static const int block_sizes[] = {8, 16, 32};

typedef struct {
    BsMat w;
    int N;
    size_t nv, nx, ny;
    real *vals, *x, *dy, *y0, *dx0, *dv0;  // host inputs (y0, dx0, dv0: accumulate starts)
    real *d_vals, *d_x, *d_dy, *d_out;     // device copies; d_out sized for the largest output
} Case;

// An nb x nb block mask, its rows stacked `gates` times.
static Case case_make_nb(const Backend *gpu, int bs, const char *desc, int nb, int gates, int N, unsigned long long *s) {
    Case c = {.N = N};
    Mask mk = mask_make(desc, nb, nb, 11);
    bsmat_from_mask(&c.w, &mk, bs, gates);
    mask_free(&mk);
    gpu->bsmat_upload(&c.w);
    c.nv = (size_t)bsmat_nvals(&c.w);
    c.nx = (size_t)N * c.w.cols;
    c.ny = (size_t)N * c.w.rows;
    c.vals = h_rand(c.nv, s, 0.5);
    c.x = h_rand(c.nx, s, 1);
    c.dy = h_rand(c.ny, s, 1);
    c.y0 = h_rand(c.ny, s, 1);
    c.dx0 = h_rand(c.nx, s, 1);
    c.dv0 = h_rand(c.nv, s, 1);
    c.d_vals = d_from(gpu, c.vals, sizeof(real) * c.nv);
    c.d_x = d_from(gpu, c.x, sizeof(real) * c.nx);
    c.d_dy = d_from(gpu, c.dy, sizeof(real) * c.ny);
    size_t most = c.ny > c.nv ? c.ny : c.nv;
    c.d_out = gpu->alloc(sizeof(real) * most);
    return c;
}

static Case case_make(const Backend *gpu, int bs, const char *desc, int N, unsigned long long *s) {
    return case_make_nb(gpu, bs, desc, 6, 4, N, s);
}

static void case_free(const Backend *gpu, Case *c) {
    gpu->bsmat_release(&c->w);
    bsmat_free(&c->w);
    free(c->vals); free(c->x); free(c->dy); free(c->y0); free(c->dx0); free(c->dv0);
    gpu->free(c->d_vals); gpu->free(c->d_x); gpu->free(c->d_dy); gpu->free(c->d_out);
}

// Starts the device output at `start` (accumulate) or NaN, runs `op` on both backends
// and returns the relative L2 error of the GPU result.
enum { FWD, BWD_DATA, BWD_WEIGHT };
static double run_op(const Backend *gpu, Case *c, int op, int acc) {
    const Backend *cpu = backend_cpu();
    size_t n = op == FWD ? c->ny : op == BWD_DATA ? c->nx : c->nv;
    const real *start = op == FWD ? c->y0 : op == BWD_DATA ? c->dx0 : c->dv0;
    real *ref = xmalloc(sizeof(real) * n);
    memcpy(ref, start, sizeof(real) * n);
    if (acc || op == BWD_WEIGHT) gpu->to_device(c->d_out, start, sizeof(real) * n);
    else d_poison(gpu, c->d_out, n);
    if (op == FWD) {
        cpu->bsmm_fwd(ref, c->x, &c->w, c->vals, c->N, acc);
        gpu->bsmm_fwd(c->d_out, c->d_x, &c->w, c->d_vals, c->N, acc);
    } else if (op == BWD_DATA) {
        cpu->bsmm_bwd_data(ref, c->dy, &c->w, c->vals, c->N, acc);
        gpu->bsmm_bwd_data(c->d_out, c->d_dy, &c->w, c->d_vals, c->N, acc);
    } else {
        cpu->bsmm_bwd_weight(ref, c->dy, c->x, &c->w, c->N);
        gpu->bsmm_bwd_weight(c->d_out, c->d_dy, c->d_x, &c->w, c->N);
    }
    double e = d_err(gpu, c->d_out, ref, n);
    free(ref);
    return e;
}

static void check_precision(const char *prec) {
    const Backend *gpu = cuda_named(prec);
    const char *opname[] = {"fwd", "bwd_data", "bwd_weight"};
    double tol = tol_for(prec), worst = 0;
    unsigned long long s = 2024;
    for (int b = 0; b < 3; b++)
        for (int mi = 0; mi < 4; mi++)
            for (int ni = 0; ni < 4; ni++) {
                Case c = case_make(gpu, block_sizes[b], masks[mi], Ns[ni], &s);
                for (int op = 0; op < 3; op++)
                    for (int acc = 0; acc < (op == BWD_WEIGHT ? 1 : 2); acc++) {
                        double e = run_op(gpu, &c, op, acc);
                        worst = e > worst ? e : worst;
                        if (!(e < tol)) {
                            test_fail(__FILE__, __LINE__, "%s %s bs=%d mask=%s N=%d acc=%d: rel L2 %.3g (tol %g)", prec,
                                      opname[op], block_sizes[b], masks[mi], Ns[ni], acc, e, tol);
                            case_free(gpu, &c);
                            return;
                        }
                    }
                case_free(gpu, &c);
            }
    printf("  %s: worst rel L2 over %d cases x 5 runs: %.3g\n", prec, 3 * 4 * 4, worst);
}

TEST(gpu_bsmm_fp32_matches_cpu) { check_precision("fp32"); }
TEST(gpu_bsmm_bf16_matches_cpu) { check_precision("bf16"); }

// Lists longer than a piece (70 blocks a row, 280 a gate-stacked column; hubs of ba_8), so
// pieces are summed by the fix-up, with row counts below, at and above one row tile (32),
// and those of a time step on one gate's matrix (the general kernels' 64- and 128-row tiles,
// with and without acc).
TEST(gpu_bsmm_long_lists_match_cpu) {
    const char *masks_long[] = {"dense", "ba_8"}, *precs[] = {"fp32", "bf16"};
    const int Ns_long[] = {5, 32, 45, 45, 100, 128}, gates[] = {4, 4, 4, 1, 1, 1};
    unsigned long long s = 99;
    for (int p = 0; p < 2; p++) {
        const Backend *gpu = cuda_named(precs[p]);
        for (int mi = 0; mi < 2; mi++)
            for (int ni = 0; ni < 6; ni++) {
                Case c = case_make_nb(gpu, 32, masks_long[mi], 70, gates[ni], Ns_long[ni], &s);
                for (int op = FWD; op <= BWD_WEIGHT; op++) {
                    double e = run_op(gpu, &c, op, ni % 2);  // acc on at 32, 45 (one gate), 128
                    if (!(e < tol_for(precs[p]))) {
                        case_free(gpu, &c);
                        CHECK_MSG(0, "%s op %d mask=%s gates=%d N=%d: rel L2 %.3g (tol %g)", precs[p], op, masks_long[mi],
                                  gates[ni], Ns_long[ni], e, tol_for(precs[p]));
                    }
                }
                case_free(gpu, &c);
            }
    }
}

// bf16 weight gradients over a window's rows (from 4 stages of rows on: the bulk-copy kernel
// and its waves), one gate and gate-stacked, on long lists and hubs, against the CPU.
TEST(gpu_bsmm_bwd_weight_window_matches_cpu) {
    const Backend *gpu = backend_cuda(PREC_BF16);
    const char *descs[] = {"ba_8", "dense"};
    const int Ns_win[] = {256, 300, 384, 1000}, gates[] = {1, 1, 4, 4};
    unsigned long long s = 41;
    for (int q = 0; q < 8; q++) {
        Case c = case_make_nb(gpu, 32, descs[q / 4], 40, gates[q % 4], Ns_win[q % 4], &s);
        double e = run_op(gpu, &c, BWD_WEIGHT, 0);
        case_free(gpu, &c);
        CHECK_MSG(e < tol_for("bf16"), "%s gates=%d N=%d: rel L2 %.3g (tol %g)", descs[q / 4], gates[q % 4], Ns_win[q % 4], e,
                  tol_for("bf16"));
    }
}

// Runs op with a fresh NaN-poisoned (or reset) output and returns the result bytes.
static real *gpu_result(const Backend *gpu, Case *c, int op) {
    size_t n = op == FWD ? c->ny : op == BWD_DATA ? c->nx : c->nv;
    if (op == BWD_WEIGHT) gpu->to_device(c->d_out, c->dv0, sizeof(real) * n);
    else d_poison(gpu, c->d_out, n);
    if (op == FWD) gpu->bsmm_fwd(c->d_out, c->d_x, &c->w, c->d_vals, c->N, 0);
    else if (op == BWD_DATA) gpu->bsmm_bwd_data(c->d_out, c->d_dy, &c->w, c->d_vals, c->N, 0);
    else gpu->bsmm_bwd_weight(c->d_out, c->d_dy, c->d_x, &c->w, c->N);
    return h_from(gpu, c->d_out, n);
}

// Both precisions at 384 rows and at 100 rows of one gate's matrix with cut lists (the
// general kernels and their fix-up).
TEST(gpu_bsmm_deterministic) {
    const char *precs[] = {"fp32", "bf16"};
    unsigned long long s = 77;
    for (int q = 0; q < 4; q++) {
        const int p = q % 2;
        const Backend *gpu = cuda_named(precs[p]);
        Case c = q < 2 ? case_make(gpu, 32, "ba_2", 384, &s) : case_make_nb(gpu, 32, "ba_8", 70, 1, 100, &s);
        for (int op = 0; op < 3; op++) {
            size_t n = op == FWD ? c.ny : op == BWD_DATA ? c.nx : c.nv;
            real *a = gpu_result(gpu, &c, op), *b = gpu_result(gpu, &c, op);
            int same = memcmp(a, b, sizeof(real) * n) == 0;
            free(a);
            free(b);
            if (!same) {
                case_free(gpu, &c);
                CHECK_MSG(0, "%s op %d N=%d: two runs on the same inputs differ", precs[p], op, c.N);
            }
        }
        case_free(gpu, &c);
    }
}

// The bf16 forward for few rows reads x's bf16 twin where one is registered (the mlstm keeps
// them): the same bits as rounding fp32 x as it is read, on long lists and at 1, 5 and 32 rows.
TEST(gpu_bsmm_stream_reads_x_twin) {
    const Backend *gpu = backend_cuda(PREC_BF16);
    const char *descs[] = {"ba_8", "dense"};
    const int Ns_few[] = {1, 5, 32};
    unsigned long long s = 31;
    for (int q = 0; q < 6; q++) {
        Case c = case_make_nb(gpu, 32, descs[q / 3], 70, 4, Ns_few[q % 3], &s);
        real *plain = gpu_result(gpu, &c, FWD);
        gpu->keep_lowp(c.d_x, c.nx);
        real *twin = gpu_result(gpu, &c, FWD);
        double e = run_op(gpu, &c, FWD, 1);
        int same = memcmp(plain, twin, sizeof(real) * c.ny) == 0;
        free(plain);
        free(twin);
        case_free(gpu, &c);
        CHECK_MSG(same, "%s N=%d: the forward through x's bf16 twin differs from the fp32 x's", descs[q / 3], Ns_few[q % 3]);
        CHECK_MSG(e < tol_for("bf16"), "%s N=%d acc: rel L2 %.3g against the CPU", descs[q / 3], Ns_few[q % 3], e);
    }
}

// bf16 weights inside the registered params come from the shadow; it must equal a fresh
// conversion after registration, after Adam and after to_device into the range.
TEST(gpu_bf16_shadow_tracks_params) {
    const Backend *gpu = backend_cuda(PREC_BF16);
    unsigned long long s = 5;
    Case c = case_make(gpu, 16, "random_0.5", 33, &s);
    size_t off = 64, np = off + c.nv + 40;
    real *hp = h_rand(np, &s, 0.5), *g = h_rand(np, &s, 1);
    real *d_p = d_from(gpu, hp, sizeof(real) * np), *d_g = d_from(gpu, g, sizeof(real) * np);
    real *d_m = gpu->alloc(sizeof(real) * np), *d_v = gpu->alloc(sizeof(real) * np);
    gpu->register_params(d_p, np);
    AdamArgs a = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 1.0f, 1};
    for (int stage = 0; stage < 3; stage++) {
        if (stage == 1) gpu->adam(d_p, d_g, d_m, d_v, np, a);
        if (stage == 2) {
            real *fresh = h_rand(c.nv, &s, 0.5);
            gpu->to_device(d_p + off, fresh, sizeof(real) * c.nv);
            free(fresh);
        }
        // The same values outside the params: converted on the fly.
        gpu->copy(c.d_vals, d_p + off, sizeof(real) * c.nv);
        d_poison(gpu, c.d_out, c.ny);
        gpu->bsmm_fwd(c.d_out, c.d_x, &c.w, d_p + off, c.N, 0);
        real *via_shadow = h_from(gpu, c.d_out, c.ny);
        d_poison(gpu, c.d_out, c.ny);
        gpu->bsmm_fwd(c.d_out, c.d_x, &c.w, c.d_vals, c.N, 0);
        real *fresh = h_from(gpu, c.d_out, c.ny);
        int same = memcmp(via_shadow, fresh, sizeof(real) * c.ny) == 0;
        free(via_shadow);
        free(fresh);
        CHECK_MSG(same, "stage %d (0 = registered, 1 = after adam, 2 = after to_device): shadow differs", stage);
    }
    gpu->free(d_p);  // also unregisters
    gpu->free(d_g); gpu->free(d_m); gpu->free(d_v);
    free(hp); free(g);
    case_free(gpu, &c);
}
