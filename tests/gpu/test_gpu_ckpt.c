// test_gpu_ckpt.c: checkpoints move between devices: a run saved on the GPU resumes on the
// CPU and the other way round (same weights, moments and carried state to the bit, then the
// same losses within fp32 tolerance); two GPU training runs end with identical bits.
#include "model/model_io.h"
#include "gpu_train.h"

enum { B = 8, T = 16, BEFORE = 5, AFTER = 5 };

static const Backend *dev(const char *name) { return strcmp(name, "cpu") ? backend_cuda(PREC_FP32) : backend_cpu(); }

// Downloads n reals from each backend and compares the bits.
static int same_bits(const Backend *ba, const real *a, const Backend *bb, const real *b, size_t n) {
    real *ha = h_from(ba, a, n), *hb = h_from(bb, b, n);
    int same = memcmp(ha, hb, n * sizeof(real)) == 0;
    free(ha);
    free(hb);
    return same;
}

static void cross_device(const char *from, const char *to) {
    size_t len = 32 * 1024;
    unsigned char *text = toy_text(len, 3);
    double warm[BEFORE], lf[AFTER], lt[AFTER];
    Run rf = run_make(make_model(&shapes[0], dev(from)), B, T);
    run_steps(&rf, BEFORE, text, len, warm);
    TrainState ts = {.step = rf.step, .best_valid_bpc = INFINITY};
    rng_seed(&ts.rng, 1);
    const char *path = tmp_path("xdev.ckpt");
    model_save(path, rf.m, &ts, rf.am, rf.av, rf.a);

    Ckpt c;
    ckpt_read(&c, path);
    Run rt = run_make(model_from_ckpt(&c, strcmp(to, "cpu") ? DEVICE_CUDA : DEVICE_CPU, PREC_FP32), B, T);
    TrainState ts2;
    model_load_train_state(rt.m, &c, &ts2, rt.am, rt.av, rt.a, 0, rt.a->B);
    ckpt_close(&c);
    rt.step = ts2.step;
    const Backend *bf = rf.m->be, *bt = rt.m->be;
    size_t n = rf.m->nparams, nh = (size_t)B * rf.m->H;
    CHECK_EQ(ts2.step, (long)BEFORE);
    CHECK_MSG(same_bits(bf, rf.m->params, bt, rt.m->params, n), "%s -> %s: parameters changed", from, to);
    CHECK_MSG(same_bits(bf, rf.am, bt, rt.am, n) && same_bits(bf, rf.av, bt, rt.av, n), "%s -> %s: Adam moments changed", from, to);
    for (int l = 0; l < rf.m->L; l++)
        CHECK_MSG(same_bits(bf, rf.a->h[l], bt, rt.a->h[l], nh) && same_bits(bf, rf.a->c[l], bt, rt.a->c[l], nh),
                  "%s -> %s: carried state of layer %d changed", from, to, l);

    run_steps(&rf, AFTER, text, len, lf);
    run_steps(&rt, AFTER, text, len, lt);
    double worst = worst_rel(lt, lf, AFTER);
    printf("  %s -> %s: loss after resume %.5f (on %s) vs %.5f (went on on %s), worst rel diff %.2g\n", from, to,
           lt[AFTER - 1], to, lf[AFTER - 1], from, worst);
    CHECK_MSG(worst < 1e-4, "%s -> %s: losses after resuming differ by %.3g relative (tol 1e-4)", from, to, worst);
    run_free(&rf);
    run_free(&rt);
    free(text);
}

TEST(gpu_ckpt_gpu_to_cpu) { cross_device("cuda", "cpu"); }
TEST(gpu_ckpt_cpu_to_gpu) { cross_device("cpu", "cuda"); }

// Whole training steps (forward, backward, clipping, AdamW) twice from the same start.
TEST(gpu_train_deterministic) {
    const char *precs[] = {"fp32", "bf16"};
    size_t len = 32 * 1024;
    unsigned char *text = toy_text(len, 4);
    for (int p = 0; p < 2; p++) {
        const Backend *gpu = cuda_named(precs[p]);
        Run r1 = run_make(make_model(&shapes[1], gpu), B, T), r2 = run_make(make_model(&shapes[1], gpu), B, T);
        double l1[BEFORE], l2[BEFORE];
        run_steps(&r1, BEFORE, text, len, l1);
        run_steps(&r2, BEFORE, text, len, l2);
        int same = !memcmp(l1, l2, sizeof l1) && same_bits(gpu, r1.m->params, gpu, r2.m->params, r1.m->nparams);
        run_free(&r1);
        run_free(&r2);
        CHECK_MSG(same, "%s: two runs of %d training steps ended with different losses or weights", precs[p], BEFORE);
    }
    free(text);
}
