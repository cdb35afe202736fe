// test_gpu_mlstm.c: the mlstm cell on the GPU against the CPU reference: its ops (layer norm,
// mul, relu, ema), the whole model's loss and gradients (fp32 and bf16, several masks, depths
// and block sizes), 30 training steps, and step-by-step inference.
#include "gpu_train.h"

// The device result within tol (rel L2) of the CPU's; the message names the case.
#define CMP(d, ref, n, tol, ...) CHECK_MSG(d_err(gpu, d, ref, n) < (tol), __VA_ARGS__)

TEST(gpu_layernorm_matches_cpu) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda("fp32");
    const int Ns[] = {1, 7, 130}, Cs[] = {8, 100, 1024};
    unsigned long long s = 50;
    for (int ni = 0; ni < 3; ni++)
        for (int ci = 0; ci < 3; ci++)
            for (int inplace = 0; inplace < 2; inplace++) {
                int N = Ns[ni], C = Cs[ci];
                size_t n = (size_t)N * C;
                real *x = h_rand(n, &s, 3), *g = h_rand(C, &s, 1.5), *b = h_rand(C, &s, 1), *dy = h_rand(n, &s, 1);
                real *dg = h_rand(C, &s, 1), *db = h_rand(C, &s, 1), *y = xmalloc(sizeof(real) * n);
                real *st = xmalloc(sizeof(real) * 2 * N), *dx = xmalloc(sizeof(real) * n);
                real *d_x = d_from(gpu, x, n * sizeof(real)), *d_g = d_from(gpu, g, C * sizeof(real));
                real *d_b = d_from(gpu, b, C * sizeof(real)), *d_dy = d_from(gpu, dy, n * sizeof(real));
                real *d_dg = d_from(gpu, dg, C * sizeof(real)), *d_db = d_from(gpu, db, C * sizeof(real));
                real *d_y = gpu->alloc(n * sizeof(real)), *d_st = gpu->alloc(2 * N * sizeof(real));
                real *d_dx = inplace ? d_dy : gpu->alloc(n * sizeof(real));
                d_poison(gpu, d_y, n); d_poison(gpu, d_st, 2 * N);
                if (!inplace) d_poison(gpu, d_dx, n);
                cpu->layernorm_fwd(y, st, x, g, b, N, C);
                gpu->layernorm_fwd(d_y, d_st, d_x, d_g, d_b, N, C);
                CMP(d_y, y, n, TOL_FP32, "layernorm_fwd y N=%d C=%d", N, C);
                CMP(d_st, st, 2 * N, TOL_FP32, "layernorm_fwd stat N=%d C=%d", N, C);
                cpu->layernorm_bwd(dx, dg, db, dy, x, st, g, N, C);
                gpu->to_device(d_st, st, 2 * N * sizeof(real));
                gpu->layernorm_bwd(d_dx, d_dg, d_db, d_dy, d_x, d_st, d_g, N, C);
                CMP(d_dx, dx, n, TOL_FP32, "layernorm_bwd dx N=%d C=%d inplace=%d", N, C, inplace);
                CMP(d_dg, dg, C, TOL_FP32, "layernorm_bwd dgain N=%d C=%d", N, C);
                CMP(d_db, db, C, TOL_FP32, "layernorm_bwd dbias N=%d C=%d", N, C);
                real *hf[] = {x, g, b, dy, dg, db, y, st, dx};
                for (int i = 0; i < 9; i++) free(hf[i]);
                real *df[] = {d_x, d_g, d_b, d_dy, d_dg, d_db, d_y, d_st};
                for (int i = 0; i < 8; i++) gpu->free(df[i]);
                if (!inplace) gpu->free(d_dx);
            }
}

TEST(gpu_eltwise_and_ema_match_cpu) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda("fp32");
    unsigned long long s = 51;
    size_t n = 100003;
    real *a = h_rand(n, &s, 1), *b = h_rand(n, &s, 1), *dy = h_rand(n, &s, 1);
    real *y = xmalloc(sizeof(real) * n), *da = xmalloc(sizeof(real) * n), *db = xmalloc(sizeof(real) * n);
    real *d_a = d_from(gpu, a, n * sizeof(real)), *d_b = d_from(gpu, b, n * sizeof(real)), *d_dy = d_from(gpu, dy, n * sizeof(real));
    real *d_y = gpu->alloc(n * sizeof(real)), *d_da = gpu->alloc(n * sizeof(real)), *d_db = gpu->alloc(n * sizeof(real));
    cpu->mul_fwd(y, a, b, n);
    gpu->mul_fwd(d_y, d_a, d_b, n);
    CMP(d_y, y, n, 1e-7, "mul_fwd");
    cpu->mul_bwd(da, db, dy, a, b, n);
    gpu->mul_bwd(d_da, d_db, d_dy, d_a, d_b, n);
    CMP(d_da, da, n, 1e-7, "mul_bwd da");
    CMP(d_db, db, n, 1e-7, "mul_bwd db");
    for (int add = 0; add < 2; add++) {
        cpu->relu_fwd(y, a, add ? b : NULL, n);
        gpu->relu_fwd(d_y, d_a, add ? d_b : NULL, n);
        CMP(d_y, y, n, 1e-7, "relu_fwd add=%d", add);
        cpu->relu_bwd(da, dy, y, n);
        gpu->relu_bwd(d_dy, d_dy, d_y, n);  // in place
        CMP(d_dy, da, n, 1e-7, "relu_bwd add=%d", add);
        gpu->to_device(d_dy, dy, n * sizeof(real));
    }
    cpu->ema(a, b, 0.999f, n);
    gpu->ema(d_a, d_b, 0.999f, n);
    CMP(d_a, a, n, 1e-7, "ema");
    free(a); free(b); free(dy); free(y); free(da); free(db);
    real *df[] = {d_a, d_b, d_dy, d_y, d_da, d_db};
    for (int i = 0; i < 6; i++) gpu->free(df[i]);
}

typedef struct { const char *sparsity, *init; int bs, depth, L; } MShape;
static const MShape mshapes[] = {{"ba_2", "uniform", 16, 4, 2}, {"dense", "identity", 8, 2, 1},
                                 {"ws_4_0.2", "uniform", 32, 3, 1}, {"random_0.3", "identity", 16, 4, 1}};

static Model *make_mlstm(const MShape *sh, const Backend *be) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 8 * sh->bs;
    cfg.block_size = sh->bs;
    cfg.num_layers = sh->L;
    cfg.embed_size = 24;
    cfg.depth = sh->depth;
    cfg.ema = 0.999;
    cfg.seed = 13;
    snprintf(cfg.cell, sizeof cfg.cell, "mlstm");
    snprintf(cfg.init, sizeof cfg.init, "%s", sh->init);
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", sh->sparsity);
    return model_create(&cfg, be);
}

// Same config and batch on CPU and GPU: loss, every gradient tensor and the carried state's.
static void check_mlstm_grads(const char *prec, double loss_tol, double grad_tol) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda(prec);
    for (int si = 0; si < 4; si++) {
        const MShape *sh = &mshapes[si];
        Model *mc = make_mlstm(sh, cpu), *mg = make_mlstm(sh, gpu);
        Batch b = batch_make(7, 5, mc->H, 200 + si);
        Acts *ac = acts_create(mc, b.B, b.T), *ag = acts_create(mg, b.B, b.T);
        double lc = fwd_bwd(mc, ac, &b), lg = fwd_bwd(mg, ag, &b), worst = 0;
        const char *worst_name = "";
        CHECK_MSG(fabs(lg - lc) < loss_tol * lc, "%s %s: loss gpu %.9g cpu %.9g", prec, sh->sparsity, lg, lc);
        for (int t = 0; t < mc->ntensor; t++) {
            const ParamTensor *pt = &mc->tensor[t];
            double e = d_err(gpu, mg->grads + pt->off, mc->grads + pt->off, pt->n);
            if (e > worst) worst = e, worst_name = pt->name;
            CHECK_MSG(e < grad_tol, "%s %s bs=%d D=%d: gradient of %s: rel L2 %.3g (tol %g)", prec, sh->sparsity, sh->bs,
                      sh->depth, pt->name, e, grad_tol);
        }
        for (int l = 0; l < mc->L; l++) {
            double e = d_err(gpu, ag->dh[l], ac->dh[l], (size_t)b.B * mc->H);
            CHECK_MSG(e < grad_tol, "%s %s: gradient of carried h of layer %d: rel L2 %.3g", prec, sh->sparsity, l, e);
        }
        printf("  mlstm %s %-10s bs=%2d D=%d L=%d: loss %.7f vs %.7f, worst grad rel L2 %.2g (%s)\n", prec, sh->sparsity,
               sh->bs, sh->depth, sh->L, lg, lc, worst, worst_name);
        acts_free(mc, ac); acts_free(mg, ag);
        model_free(mc); model_free(mg);
        batch_free(&b);
    }
}

TEST(gpu_mlstm_fp32_matches_cpu) { check_mlstm_grads("fp32", 1e-5, 1e-4); }
TEST(gpu_mlstm_bf16_matches_cpu) { check_mlstm_grads("bf16", 1e-2, 1e-2); }

// 30 Adam steps: the GPU loss stays within tol of the CPU's at every step.
static void check_mlstm_curve(const char *prec, double tol) {
    enum { STEPS = 30, B = 8, T = 16 };
    size_t len = 64 * 1024;
    unsigned char *text = toy_text(len, 9);
    Run rc = run_make(make_mlstm(&mshapes[0], backend_cpu()), B, T);
    Run rg = run_make(make_mlstm(&mshapes[0], backend_cuda(prec)), B, T);
    double lc[STEPS], lg[STEPS];
    run_steps(&rc, STEPS, text, len, lc);
    run_steps(&rg, STEPS, text, len, lg);
    double worst = worst_rel(lg, lc, STEPS);
    printf("  mlstm %s: loss %.4f -> %.4f (cpu %.4f -> %.4f), worst step rel diff %.2g\n", prec, lg[0], lg[STEPS - 1],
           lc[0], lc[STEPS - 1], worst);
    run_free(&rc);
    run_free(&rg);
    free(text);
    CHECK_MSG(worst < tol, "%s: mlstm GPU loss curve leaves the CPU's by %.3g (tol %g)", prec, worst, tol);
    CHECK_MSG(lg[STEPS - 1] < lg[0] - 1, "%s: mlstm loss did not fall over %d steps (%.4f -> %.4f)", prec, STEPS, lg[0], lg[STEPS - 1]);
}

TEST(gpu_mlstm_train_fp32_tracks_cpu) { check_mlstm_curve("fp32", 1e-3); }
TEST(gpu_mlstm_train_bf16_tracks_cpu) { check_mlstm_curve("bf16", 3e-2); }

// Inference (sampling, features): 20 steps of 3 streams, then 1 stream, give the CPU's logits.
TEST(gpu_mlstm_infer_matches_cpu) {
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        Model *mc = make_mlstm(&mshapes[0], backend_cpu()), *mg = make_mlstm(&mshapes[0], backend_cuda(precs[p]));
        Infer *sc = infer_create(mc, 3, 1), *sg = infer_create(mg, 3, 1);
        float lc[3 * 256], lg[3 * 256];
        unsigned long long s = 60;
        double worst = 0;
        for (int t = 0; t < 20; t++) {
            int tok[3] = {(int)(test_rand(&s) * 256), (int)(test_rand(&s) * 256), (int)(test_rand(&s) * 256)}, n = t < 15 ? 3 : 1;
            infer_step(mc, sc, tok, n, lc);
            infer_step(mg, sg, tok, n, lg);
            double num = 0, den = 0;
            for (int i = 0; i < n * 256; i++) num += (lg[i] - lc[i]) * (lg[i] - lc[i]), den += (double)lc[i] * lc[i];
            worst = fmax(worst, sqrt(num / den));
        }
        printf("  mlstm infer %s: worst logits rel L2 %.2g\n", precs[p], worst);
        infer_free(mc, sc); infer_free(mg, sg);
        model_free(mc); model_free(mg);
        CHECK_MSG(worst < tol_for(precs[p]) * 10, "%s: mlstm inference logits differ from the CPU's by %.3g", precs[p], worst);
    }
}
