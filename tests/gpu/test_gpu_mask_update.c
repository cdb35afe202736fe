// test_gpu_mask_update.c: the GPU agrees with the CPU after a mask update. A model moved onto
// new masks (model_remask: new block indices, and with its windows new engine lists and
// graphs, replayed mlstm windows and bf16 shadow) gives the CPU's loss and gradients; and
// `swlstm train` with mask_update = rigl ends on cuda with the CPU's masks and loss; RigL's
// grow scores and the ops behind them agree with the CPU's.
#include "gpu_train.h"
#include "model/grow_scores.h"
#include "model/mask_update.h"
#include "model/remask.h"

static const Shape moved_shapes[] = {{"ba_2", 32, 0, 2, NULL, NULL, 0, 0}, {"random_0.3", 32, 1, 2, NULL, NULL, 0, 0},
                                     {"ba_2", 16, 1, 1, "mlstm", "uniform", 2, 0}};

// Shape sh on both backends; the GPU runs a window on the drawn masks first (so that their
// plans exist), then both move onto the same masks: a third of each matrix's blocks dropped
// and as many regrown at random.
static void check_moved(const Shape *sh, const char *prec, double loss_tol, double grad_tol) {
    const Backend *gpu = cuda_named(prec);
    Model *mc = make_model(sh, backend_cpu()), *mg = make_model(sh, gpu);
    Batch b = batch_make(7, 5, mc->H, 21);
    Acts *ag = acts_create(mg, b.B, b.T);
    fwd_bwd(mg, ag, &b);
    acts_free(mg, ag);
    int n = (2 + mc->D) * mc->L;
    Mask masks[SW_MAX_MASKS];
    double *grow[SW_MAX_MASKS];
    for (int i = 0; i < n; i++) {
        const Mask *mk = model_layer_mask(mc, i / (2 + mc->D), i % (2 + mc->D), NULL, NULL);
        grow[i] = mk ? mask_random_scores(mk, 3, 10, i) : NULL;
    }
    mask_move_blocks(mc, mc->params, 1.0 / 3, grow, masks);
    Model *pc = model_remask(mc, masks), *pg = model_remask(mg, masks);
    model_free(mc);
    model_free(mg);
    Acts *ac = acts_create(pc, b.B, b.T);
    ag = acts_create(pg, b.B, b.T);
    double lc = fwd_bwd(pc, ac, &b), lg = fwd_bwd(pg, ag, &b), worst = 0;
    const char *worst_name = "";
    for (int t = 0; t < pc->ntensor; t++) {
        const ParamTensor *pt = &pc->tensor[t];
        double e = d_err(gpu, pg->grads + pt->off, pc->grads + pt->off, pt->n);
        if (e > worst) worst = e, worst_name = pt->name;
    }
    printf("  %s %s %s bs=%d: loss %.7f vs %.7f, worst grad rel L2 %.2g (%s)\n", prec, shape_cell(sh), sh->sparsity,
           sh->bs, lg, lc, worst, worst_name);
    for (int i = 0; i < n; i++) mask_free(&masks[i]), free(grow[i]);
    acts_free(pc, ac);
    acts_free(pg, ag);
    model_free(pc);
    model_free(pg);
    batch_free(&b);
    CHECK_MSG(fabs(lg - lc) < loss_tol * lc, "%s %s: loss gpu %.9g cpu %.9g after a mask update", prec, sh->sparsity, lg, lc);
    CHECK_MSG(worst < grad_tol, "%s %s: gradient of %s: rel L2 %.3g after a mask update", prec, sh->sparsity, worst_name, worst);
}

TEST(gpu_moved_masks_match_cpu) {
    for (int i = 0; i < 3; i++) check_moved(&moved_shapes[i], "fp32", 1e-5, 1e-4);
    for (int i = 0; i < 2; i++) check_moved(&moved_shapes[i], "bf16", 1e-2, 2e-2);
}

// The final loss of a training log ("step N/N | loss X").
static double last_loss(const char *log) {
    const char *p = strstr(log, "step 6/6 | loss ");
    return p ? atof(p + 16) : NAN;
}

TEST(gpu_train_rigl_matches_cpu) {
    unsigned char *text = toy_text(60000, 5);
    const char *data = write_file(tmp_path("rigl.txt"), text, 60000);
    free(text);
    const char *cfg = write_file(tmp_path("rigl.cfg"), "seed = 3\n", 9);
    char args[2048], log[2][16384], ck[2][600];
    static const char *dev[] = {"cpu", "cuda"};
    for (int d = 0; d < 2; d++) {
        snprintf(args, sizeof args,
                 "train %s --data %s --split 0.9,0.05,0.05 --hidden_size 128 --block_size 32 --num_layers 2 --sparsity ba_1 "
                 "--embed_size 16 --batch_size 8 --seq_length 16 --max_steps 6 --eval_every 0 --log_every 1 "
                 "--mask_update rigl --mask_update_every 2 --mask_update_frac 0.3 --mask_update_end 6 --device %s --out_dir %s",
                 cfg, data, dev[d], tmp_path(dev[d]));
        CHECK_EQ(run_swlstm(args, log[d], sizeof log[d]), 0);
        CHECK_MSG(strstr(log[d], "step 2: mask update (rigl) moved"), "%s", log[d]);
        snprintf(ck[d], sizeof ck[d], "%s/latest.ckpt", tmp_path(dev[d]));
    }
    printf("  final loss cpu %.4f, cuda %.4f\n", last_loss(log[0]), last_loss(log[1]));
    CHECK_MSG(ckpt_same_section(ck[0], ck[1], "masks"), "cpu and cuda ended on different masks");
    CHECK_NEAR(last_loss(log[1]), last_loss(log[0]), 2e-4);
}

// RigL's score ops against the CPU's: rows [c0, c0 + R) of dy^T x from a wider dy (a chunk of
// a tall matrix), then the squared block norms; poisoned outputs show a value not written.
TEST(gpu_dense_grad_and_block_sumsq_match_cpu) {
    static const char *precs[] = {"fp32", "bf16"};
    const int N = 300, C = 96, R = 64, ldy = 160, c0 = 32, bs = 32, nsq = (R / bs) * (C / bs);
    unsigned long long s = 5;
    real *x = h_rand((size_t)N * C, &s, 1), *dy = h_rand((size_t)N * ldy, &s, 1);
    real *g = xmalloc(sizeof(real) * R * C), *sq = xmalloc(sizeof(real) * nsq);
    backend_cpu()->dense_grad(g, dy, ldy, c0, x, N, C, R);
    backend_cpu()->block_sumsq(sq, g, R, C, bs);
    for (int p = 0; p < 2; p++) {
        const Backend *gpu = cuda_named(precs[p]);
        real *dx = d_from(gpu, x, sizeof(real) * N * C), *ddy = d_from(gpu, dy, sizeof(real) * N * ldy);
        real *dg = gpu->alloc(sizeof(real) * R * C), *dsq = gpu->alloc(sizeof(real) * nsq);
        d_poison(gpu, dg, (size_t)R * C);
        d_poison(gpu, dsq, nsq);
        gpu->dense_grad(dg, ddy, ldy, c0, dx, N, C, R);
        gpu->block_sumsq(dsq, dg, R, C, bs);
        double eg = d_err(gpu, dg, g, (size_t)R * C), es = d_err(gpu, dsq, sq, nsq), tol = p ? 2e-2 : 5e-3;
        printf("  %s: gradient rel L2 %.2g, block norms %.2g\n", precs[p], eg, es);
        CHECK_MSG(eg < tol && es < tol, "%s: dense_grad rel L2 %.3g, block_sumsq %.3g (tol %g)", precs[p], eg, es, tol);
        gpu->free(dx), gpu->free(ddy), gpu->free(dg), gpu->free(dsq);
    }
    free(x), free(dy), free(g), free(sq);
}

// RigL's grow scores of a window (model_grow_scores, the operands the backward kept: the
// engine's dz and h in bf16 too, the mlstm's internal steps) agree with the CPU's.
static void check_scores(const Shape *sh, const char *prec, double tol) {
    const Backend *gpu = cuda_named(prec);
    Model *mc = make_model(sh, backend_cpu()), *mg = make_model(sh, gpu);
    Batch b = batch_make(7, 5, mc->H, 23);
    Acts *ac = acts_create(mc, b.B, b.T), *ag = acts_create(mg, b.B, b.T);
    fwd_bwd(mc, ac, &b);
    fwd_bwd(mg, ag, &b);
    double *sc[SW_MAX_MASKS], *sg[SW_MAX_MASKS], worst = 0;
    model_grow_scores(mc, ac, NULL, sc);
    model_grow_scores(mg, ag, NULL, sg);
    for (int i = 0; i < (2 + mc->D) * mc->L; i++) {
        CHECK(!sc[i] == !sg[i]);
        if (!sc[i]) continue;
        const Mask *mk = model_layer_mask(mc, i / (2 + mc->D), i % (2 + mc->D), NULL, NULL);
        double num = 0, den = 0;
        for (int q = 0; q < mk->nr * mk->nc; q++) num += (sg[i][q] - sc[i][q]) * (sg[i][q] - sc[i][q]), den += sc[i][q] * sc[i][q];
        worst = fmax(worst, den > 0 ? sqrt(num / den) : INFINITY);
        free(sc[i]), free(sg[i]);
    }
    printf("  %s %s %s bs=%d: grow scores rel L2 %.2g\n", prec, shape_cell(sh), sh->sparsity, sh->bs, worst);
    CHECK_MSG(worst < tol, "%s %s %s: grow scores rel L2 %.3g (tol %g)", prec, shape_cell(sh), sh->sparsity, worst, tol);
    acts_free(mc, ac), acts_free(mg, ag);
    model_free(mc), model_free(mg);
    batch_free(&b);
}

TEST(gpu_grow_scores_match_cpu) {
    for (int i = 0; i < 3; i++) check_scores(&moved_shapes[i], "fp32", 5e-3);
    for (int i = 0; i < 3; i++) check_scores(&moved_shapes[i], "bf16", 8e-2);
}
