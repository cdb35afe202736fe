// test_gpu_dyneval.c: dynamic evaluation on the GPU against the CPU reference: whole dynamic
// streams (gradient statistics, segments scored and adapted) of both cells, per-step ops and
// the recurrent engine, fp32 and bf16 (whose weight shadow each update must refresh): the
// static and dynamic bpc and the adapted weights. The update op alone: test_gpu_ops.c.
#include "train/dyneval.h"
#include "train/eval.h"
#include "gpu_train.h"

typedef struct {
    double stat, dyn;
    real *w;  // adapted weights, host
} DynRun;

static DynRun dyn_run(const Shape *sh, const Backend *be, const unsigned char *train, const unsigned char *eval, size_t n) {
    Model *m = make_model(sh, be);
    Acts *a = acts_create(m, 1, 16);
    DynRun r;
    size_t count;
    r.stat = eval_bpc(m, a, eval, n, 0, &count, NULL);
    DynEval *d = dyn_create(m, train, 4000, 4, 16, NULL);
    r.dyn = dyn_bpc(d, a, (DynHyper){3e-3, 0.05, d->mean_rms}, eval, n, &count, NULL);
    r.w = h_from(be, m->params, m->nparams);
    dyn_free(d);
    acts_free(m, a);
    model_free(m);
    return r;
}

static const Shape dshapes[] = {{"ba_2", 16, 1, 2, NULL, NULL, 0, 0}, {"ba_2", 32, 0, 2, NULL, NULL, 0, 0},
                                {"ba_2", 32, 1, 1, "mlstm", "identity", 2, 0}, {"dense", 16, 1, 1, "mlstm", "uniform", 3, 0}};

static void check_dyneval(const char *prec, double tol_bpc, double tol_w) {
    unsigned char *train = toy_text(4000, 71), *eval = toy_text(800, 72);
    for (int k = 0; k < (int)(sizeof dshapes / sizeof *dshapes); k++) {
        const Shape *sh = &dshapes[k];
        Model *probe = make_model(sh, backend_cpu());
        size_t n = probe->nparams;
        model_free(probe);
        DynRun c = dyn_run(sh, backend_cpu(), train, eval, 800), g = dyn_run(sh, cuda_named(prec), train, eval, 800);
        CHECK_MSG(fabs(g.stat - c.stat) < tol_bpc, "%s %s bs %d %s: static bpc gpu %.6f cpu %.6f", prec, shape_cell(sh),
                  sh->bs, sh->sparsity, g.stat, c.stat);
        CHECK_MSG(fabs(g.dyn - c.dyn) < tol_bpc, "%s %s bs %d %s: dynamic bpc gpu %.6f cpu %.6f", prec, shape_cell(sh),
                  sh->bs, sh->sparsity, g.dyn, c.dyn);
        CHECK_MSG(c.stat - c.dyn > 10 * tol_bpc, "%s %s: the stream gains too little to tell (%.6f -> %.6f)", prec,
                  shape_cell(sh), c.stat, c.dyn);
        double e = rel_l2(g.w, c.w, n);
        CHECK_MSG(e < tol_w, "%s %s bs %d %s: adapted weights rel L2 %g", prec, shape_cell(sh), sh->bs, sh->sparsity, e);
        free(c.w);
        free(g.w);
    }
    free(train);
    free(eval);
}

// fp32: the update divides by each weight's rms, so the ops' last-bit differences grow over the
// stream's 50 updates (docs/QUALITY.md, "Dynamic evaluation", gives how far apart they end).
TEST(gpu_dyneval_fp32_matches_cpu) { check_dyneval("fp32", 1e-2, 2e-2); }
TEST(gpu_dyneval_bf16_matches_cpu) { check_dyneval("bf16", 5e-2, 3e-2); }
