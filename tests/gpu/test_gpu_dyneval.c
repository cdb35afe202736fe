// test_gpu_dyneval.c: dynamic evaluation on the GPU against the CPU reference: whole dynamic
// streams (gradient statistics, segments scored and adapted) of both cells, per-step ops and
// the recurrent engine, fp32 and bf16 (whose weight shadow each update must refresh): the
// static and dynamic bpc and the adapted weights; --streams' pieces on one GPU and on two.
// The dynamic bpc's and the weights' tolerances are the precision's, or twice how far the CPU's
// own stream ends from itself when its trained weights change in their last bit, where the
// stream amplifies that.
// The update op alone: test_gpu_ops.c.
#include "model/model_io.h"
#include "train/dyn_streams.h"
#include "train/dyneval.h"
#include "train/eval.h"
#include "gpu_train.h"

typedef struct {
    double stat, dyn;
    real *w;  // adapted weights, host
} DynRun;

// ulp > 0 (the CPU only): each trained weight first scaled by 1 + ulp or 1 - ulp, at random.
static DynRun dyn_run(const Shape *sh, const Backend *be, const unsigned char *train, const unsigned char *eval, size_t n,
                      double ulp) {
    Model *m = make_model(sh, be);
    unsigned long long seed = 5;
    for (size_t i = 0; ulp > 0 && i < m->nparams; i++) m->params[i] *= (real)(1 + (test_rand(&seed) < 0.5 ? -ulp : ulp));
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
        DynRun c = dyn_run(sh, backend_cpu(), train, eval, 800, 0), g = dyn_run(sh, cuda_named(prec), train, eval, 800, 0);
        DynRun cs = dyn_run(sh, backend_cpu(), train, eval, 800, 0x1p-23);
        double spread = rel_l2(cs.w, c.w, n), tol = fmax(tol_w, 2 * spread), tol_dyn = fmax(tol_bpc, 2 * fabs(cs.dyn - c.dyn));
        CHECK_MSG(fabs(g.stat - c.stat) < tol_bpc, "%s %s bs %d %s: static bpc gpu %.6f cpu %.6f", prec, shape_cell(sh),
                  sh->bs, sh->sparsity, g.stat, c.stat);
        CHECK_MSG(fabs(g.dyn - c.dyn) < tol_dyn, "%s %s bs %d %s: dynamic bpc gpu %.6f cpu %.6f (tol %g)", prec,
                  shape_cell(sh), sh->bs, sh->sparsity, g.dyn, c.dyn, tol_dyn);
        CHECK_MSG(c.stat - c.dyn > 10 * tol_bpc, "%s %s: the stream gains too little to tell (%.6f -> %.6f)", prec,
                  shape_cell(sh), c.stat, c.dyn);
        double e = rel_l2(g.w, c.w, n);
        CHECK_MSG(e < tol, "%s %s bs %d %s: adapted weights rel L2 %g (tol %g; the CPU's own spread %g)", prec,
                  shape_cell(sh), sh->bs, sh->sparsity, e, tol, spread);
        free(c.w);
        free(cs.w);
        free(g.w);
    }
    free(train);
    free(eval);
}

// fp32: the ops' last-bit differences stay last-bit in the weights, but where the stream itself
// amplifies them (a last-bit change of the trained weights moves the CPU's own adapted weights
// by ~1e-2 for the block-16 LSTM with layer norm, ~3e-3 and ~6e-3 for the mLSTMs; docs/QUALITY.md
// "Dynamic evaluation").
TEST(gpu_dyneval_fp32_matches_cpu) { check_dyneval("fp32", 1e-3, 1e-3); }
TEST(gpu_dyneval_bf16_matches_cpu) { check_dyneval("bf16", 5e-2, 3e-2); }

// --streams on the GPU: a checkpoint of an engine-path mLSTM loaded in prec, its statistics,
// and the static and dynamic bpc of 2 streams over 800 bytes on `devices` GPUs (static first,
// from the trained weights).
typedef struct {
    double stat, dyn;
} StreamsRun;

static const char *streams_ckpt(void) {
    static char path[512];
    if (path[0]) return path;
    Model *m = make_model(&dshapes[2], backend_cpu());
    snprintf(path, sizeof path, "%s", tmp_path("gpu_streams.ckpt"));
    model_save(path, m, NULL, NULL, NULL, NULL);
    model_free(m);
    return path;
}

static Model *streams_model(const char *prec) {
    return model_load_infer(streams_ckpt(), DEVICE_CUDA, config_parse_choice("precision", prec, "test"), 0);
}

static StreamsRun streams_run(const char *prec, int devices, const unsigned char *train, const unsigned char *eval) {
    Model *m = streams_model(prec);
    DynStreams s = {2, devices, streams_ckpt(), 0, 16};
    StreamsRun r;
    size_t count;
    r.stat = dyn_streams_bpc(m, NULL, (DynHyper){0}, &s, eval, 800, &count, NULL);
    DynEval *d = dyn_create(m, train, 4000, 4, 16, NULL);
    r.dyn = dyn_streams_bpc(m, d, (DynHyper){3e-3, 0.05, d->mean_rms}, &s, eval, 800, &count, NULL);
    dyn_free(d);
    model_free(m);
    return r;
}

// 2 streams on one GPU are the two halves, each its own stream from the trained weights.
static void check_streams_one_gpu(const char *prec) {
    unsigned char *train = toy_text(4000, 73), *eval = toy_text(800, 74);
    StreamsRun r = streams_run(prec, 1, train, eval);
    Model *m = streams_model(prec);
    Acts *a = acts_create(m, 1, 16);
    double stat = 0, dyn = 0;
    size_t c, count = 0;
    for (int k = 0; k < 2; k++) stat += eval_span_nats(m, a, eval + 400 * k, 400, 0, &c, NULL);
    DynEval *d = dyn_create(m, train, 4000, 4, 16, NULL);
    for (int k = 0; k < 2; k++) dyn += dyn_nats(d, a, (DynHyper){3e-3, 0.05, d->mean_rms}, eval + 400 * k, 400, &c, NULL), count += c;
    CHECK_EQ(count, 798);
    CHECK_MSG(r.stat == stat / count / log(2.0), "%s: static 2 streams %.17g, halves %.17g", prec, r.stat, stat / count / log(2.0));
    CHECK_MSG(r.dyn == dyn / count / log(2.0), "%s: dynamic 2 streams %.17g, halves %.17g", prec, r.dyn, dyn / count / log(2.0));
    CHECK_MSG(r.stat - r.dyn > 1e-3, "%s: the streams gain too little to tell (%.6f -> %.6f)", prec, r.stat, r.dyn);
    dyn_free(d);
    acts_free(m, a);
    model_free(m);
    free(train);
    free(eval);
}

TEST(gpu_dyneval_streams_one_gpu_fp32) { check_streams_one_gpu("fp32"); }
TEST(gpu_dyneval_streams_one_gpu_bf16) { check_streams_one_gpu("bf16"); }

// 2 streams on 2 GPUs (a thread each, its own model and statistics) give the bits of 2 on one.
TEST(gpu_dyneval_streams_two_gpus) {
    if (backend_cuda_devices() < 2) {
        test_skip("needs 2 GPUs");
        return;
    }
    unsigned char *train = toy_text(4000, 73), *eval = toy_text(800, 74);
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "bf16" : "fp32";
        StreamsRun one = streams_run(prec, 1, train, eval), two = streams_run(prec, 2, train, eval);
        CHECK_MSG(one.stat == two.stat && one.dyn == two.dyn, "%s: 1 GPU static %.17g dynamic %.17g, 2 GPUs %.17g %.17g",
                  prec, one.stat, one.dyn, two.stat, two.dyn);
    }
    free(train);
    free(eval);
}
