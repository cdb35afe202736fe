// test_gpu_mask_update.c: the GPU agrees with the CPU after a mask update. A model moved onto
// new masks (model_remask: new block indices, and with its windows new engine lists and
// graphs, replayed mlstm windows and bf16 shadow) gives the CPU's loss and gradients; and
// `swlstm train` with mask_update = rigl ends on cuda with the CPU's masks and loss.
#include "gpu_train.h"
#include "model/mask_update.h"
#include "model/prune.h"

static const Shape moved_shapes[] = {{"ba_2", 32, 0, 2, NULL, NULL, 0, 0}, {"random_0.3", 32, 1, 2, NULL, NULL, 0, 0},
                                     {"ba_2", 16, 1, 1, "mlstm", "uniform", 2, 0}};

// Shape sh on both backends; the GPU runs a window on the drawn masks first (so that their
// plans exist), then both move onto the same masks: a third of each matrix's blocks dropped
// and as many regrown at random.
static void check_moved(const Shape *sh, const char *prec, double loss_tol, double grad_tol) {
    const Backend *gpu = backend_cuda(prec);
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
