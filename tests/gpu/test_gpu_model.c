// test_gpu_model.c: the whole model on the GPU against the CPU: the same config and batch give
// the same loss and parameter gradients (fp32 and bf16), 50 Adam steps track the CPU loss
// curve, and two GPU runs give identical bits.
#include "gpu_train.h"

// Same config and batch on CPU and GPU: loss and every gradient tensor (and the carried
// state's gradient) within tolerance.
static void check_grads(const char *prec, double loss_tol, double grad_tol) {
    const Backend *cpu = backend_cpu(), *gpu = backend_cuda(prec);
    for (int si = 0; si < NSHAPES; si++) {
        const Shape *sh = &shapes[si];
        Model *mc = make_model(sh, cpu), *mg = make_model(sh, gpu);
        Batch b = batch_make(7, 5, mc->H, 100 + si);
        Acts *ac = acts_create(mc, b.B, b.T), *ag = acts_create(mg, b.B, b.T);
        double lc = fwd_bwd(mc, ac, &b), lg = fwd_bwd(mg, ag, &b);
        double worst = 0;
        const char *worst_name = "";
        CHECK_MSG(fabs(lg - lc) < loss_tol * lc, "%s %s: loss gpu %.9g cpu %.9g", prec, sh->sparsity, lg, lc);
        for (int t = 0; t < mc->ntensor; t++) {
            const ParamTensor *pt = &mc->tensor[t];
            double e = d_err(gpu, mg->grads + pt->off, mc->grads + pt->off, pt->n);
            if (e > worst) worst = e, worst_name = pt->name;
            CHECK_MSG(e < grad_tol, "%s %s bs=%d ln=%d: gradient of %s: rel L2 %.3g (tol %g)", prec, sh->sparsity,
                      sh->bs, sh->ln, pt->name, e, grad_tol);
        }
        for (int l = 0; l < mc->L; l++) {
            double e = d_err(gpu, ag->dh[l], ac->dh[l], (size_t)b.B * mc->H);
            CHECK_MSG(e < grad_tol, "%s %s: gradient of carried h of layer %d: rel L2 %.3g", prec, sh->sparsity, l, e);
        }
        printf("  %s %-10s bs=%2d ln=%d L=%d: loss %.7f vs %.7f, worst grad rel L2 %.2g (%s)\n", prec, sh->sparsity,
               sh->bs, sh->ln, sh->L, lg, lc, worst, worst_name);
        acts_free(mc, ac); acts_free(mg, ag);
        model_free(mc); model_free(mg);
        batch_free(&b);
    }
}

TEST(gpu_model_fp32_matches_cpu) { check_grads("fp32", 1e-5, 1e-4); }
TEST(gpu_model_bf16_matches_cpu) { check_grads("bf16", 1e-2, 1e-2); }

TEST(gpu_model_deterministic) {
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        const Backend *gpu = backend_cuda(precs[p]);
        Model *m = make_model(&shapes[1], gpu);
        Batch b = batch_make(7, 5, m->H, 5);
        Acts *a = acts_create(m, b.B, b.T);
        double l1 = fwd_bwd(m, a, &b);
        real *g1 = h_from(gpu, m->grads, m->nparams);
        double l2 = fwd_bwd(m, a, &b);
        real *g2 = h_from(gpu, m->grads, m->nparams);
        int same = l1 == l2 && memcmp(g1, g2, sizeof(real) * m->nparams) == 0;
        free(g1); free(g2);
        acts_free(m, a); model_free(m); batch_free(&b);
        CHECK_MSG(same, "%s: two identical steps gave different loss or gradient bits", precs[p]);
    }
}

// 50 steps: the GPU loss stays within tol (relative) of the CPU loss at every step.
static void check_curve(const char *prec, double tol) {
    enum { STEPS = 50, B = 8, T = 16 };
    size_t len = 64 * 1024;
    unsigned char *text = toy_text(len, 9);
    Run rc = run_make(make_model(&shapes[0], backend_cpu()), B, T);
    Run rg = run_make(make_model(&shapes[0], backend_cuda(prec)), B, T);
    double lc[STEPS], lg[STEPS];
    run_steps(&rc, STEPS, text, len, lc);
    run_steps(&rg, STEPS, text, len, lg);
    double worst = worst_rel(lg, lc, STEPS);
    printf("  %s: loss %.4f -> %.4f (cpu %.4f -> %.4f), worst step rel diff %.2g\n", prec, lg[0], lg[STEPS - 1], lc[0],
           lc[STEPS - 1], worst);
    run_free(&rc);
    run_free(&rg);
    free(text);
    CHECK_MSG(worst < tol, "%s: GPU loss curve leaves the CPU's by %.3g (tol %g)", prec, worst, tol);
    CHECK_MSG(lg[STEPS - 1] < lg[0] - 1, "%s: loss did not fall over %d steps (%.4f -> %.4f)", prec, STEPS, lg[0], lg[STEPS - 1]);
}

// fp32: the same arithmetic in another order; 1e-3 relative leaves room for 50 steps of drift.
// bf16: weights and activations rounded to 8 bits of mantissa in every product.
TEST(gpu_train_fp32_tracks_cpu) { check_curve("fp32", 1e-3); }
TEST(gpu_train_bf16_tracks_cpu) { check_curve("bf16", 3e-2); }
