// test_dist_train.c: what data-parallel ranks rely on, checked on the CPU: the backward hook
// reports only final gradients, two ranks' gradients average to the one-rank gradient, a
// rank resumes its rows of the carried state, and ranks that evaluate their shares of the
// stripes add up to the one-rank evaluation (LSTM and mlstm); eval's warm stripes predict
// each byte once.
#ifndef SW_DOUBLE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/dist.h"
#include "train/eval.h"
#include "model/model_io.h"
#include "test.h"

enum { B = 4, T = 8, LEN = 4096 };

static Model *model_of(const char *cell) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32, cfg.embed_size = 8, cfg.num_layers = 3, cfg.block_size = 8, cfg.layer_norm = 1, cfg.depth = 2;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_1");
    cfg.cell = config_parse_choice("cell", cell, "test");
    return model_create(&cfg, backend_cpu());
}

static Model *small_model(void) { return model_of("lstm"); }

static uint8_t *text_of(size_t n) {
    uint8_t *t = malloc(n);
    unsigned long long s = 11;
    for (size_t i = 0; i < n; i++) t[i] = (uint8_t)("etaoin shrdlu\n"[(int)(test_rand(&s) * 14)]);
    return t;
}

// One window of B rows from the start of each of B stripes of text.
static void window(const uint8_t *text, int *tok, int *tgt) {
    Stripes s;
    stripes_init(&s, text, LEN, B, T);
    stripes_fill(&s, 0, T, tok, tgt);
}

typedef struct {
    const Model *m;
    size_t off[8];
    real *seen[8];  // gradients [off, nparams) when the hook reported off
    int n;
} Hook;

static void record(void *ctx, size_t off) {
    Hook *h = ctx;
    size_t n = h->m->nparams - off;
    h->seen[h->n] = malloc(n * sizeof(real));
    memcpy(h->seen[h->n], h->m->grads + off, n * sizeof(real));
    h->off[h->n++] = off;
}

static void check_hook(const char *cell) {
    Model *m = model_of(cell);
    Acts *a = acts_create(m, B, T);
    uint8_t *text = text_of(LEN);
    int tok[B * T], tgt[B * T];
    window(text, tok, tgt);
    Hook h = {.m = m};
    m->grads_ready = record;
    m->grads_ready_ctx = &h;
    model_forward(m, a, tok, tgt, T);
    model_backward(m, a, T);
    CHECK_EQ(h.n, m->L + 2);
    size_t want[] = {m->off_wo, m->layer[2].off_wx, m->layer[1].off_wx, m->layer[0].off_wx, 0};
    int final = 1;
    for (int i = 0; i < h.n; i++) {
        CHECK_EQ(h.off[i], want[i]);
        final &= !memcmp(h.seen[i], m->grads + h.off[i], (m->nparams - h.off[i]) * sizeof(real));
        free(h.seen[i]);
    }
    CHECK_MSG(final, "a gradient changed after the hook called it final");
    DistPlan p = dist_plan(m->tensor, m->ntensor, 4096);
    CHECK_EQ(dist_plan_ready(&p, 0), p.n);
    CHECK(dist_plan_ready(&p, m->off_wo) >= 1 && dist_plan_ready(&p, m->layer[0].off_wx) < p.n);
    dist_plan_free(&p);
    acts_free(m, a);
    model_free(m);
    free(text);
}

TEST(dist_backward_hook_reports_final_gradients) { check_hook("lstm"); }
TEST(dist_backward_hook_reports_final_gradients_mlstm) { check_hook("mlstm"); }

// The window's rows b of step t as two ranks hold them: rank r has rows [r*B/2, (r+1)*B/2).
static void rank_rows(const int *all, int *mine, int r) {
    for (int t = 0; t < T; t++) memcpy(mine + t * B / 2, all + t * B + r * B / 2, B / 2 * sizeof(int));
}

// The mean of two half-batch gradients (each rank's, before the all-reduce) is the full
// batch's, every tensor to rounding: the byte tables' sums by byte included.
static void check_rank_grads(const char *cell) {
    Model *m = model_of(cell);
    Acts *all = acts_create(m, B, T), *half = acts_create(m, B / 2, T);
    uint8_t *text = text_of(LEN);
    int tok[B * T], tgt[B * T], mt[B * T / 2], mg[B * T / 2];
    window(text, tok, tgt);
    size_t n = m->nparams;
    real *want = malloc(n * sizeof(real)), *mean = calloc(n, sizeof(real));
    memset(m->grads, 0, n * sizeof(real));
    model_forward(m, all, tok, tgt, T);
    model_backward(m, all, T);
    memcpy(want, m->grads, n * sizeof(real));
    for (int r = 0; r < 2; r++) {
        rank_rows(tok, mt, r);
        rank_rows(tgt, mg, r);
        memset(m->grads, 0, n * sizeof(real));
        model_forward(m, half, mt, mg, T);
        model_backward(m, half, T);
        for (size_t i = 0; i < n; i++) mean[i] += m->grads[i] / 2;
    }
    for (int k = 0; k < m->ntensor; k++) {
        const ParamTensor *p = &m->tensor[k];
        double err = 0, big = 0;
        for (size_t i = p->off; i < p->off + p->n; i++) err = fmax(err, fabs(mean[i] - want[i])), big = fmax(big, fabs(want[i]));
        CHECK_MSG(err <= 1e-5 * big, "%s %s: ranks' mean gradient off by %g (largest %g)", cell, p->name, err, big);
    }
    free(want);
    free(mean);
    free(text);
    acts_free(m, all);
    acts_free(m, half);
    model_free(m);
}

TEST(dist_rank_gradients_average_to_one_rank) { check_rank_grads("lstm"); }
TEST(dist_rank_gradients_average_to_one_rank_mlstm) { check_rank_grads("mlstm"); }

static void load_wrong_rows(void *path) {
    Model *m = small_model();
    Acts *a = acts_create(m, B / 2, T);
    real *am = calloc(m->nparams, sizeof(real)), *av = calloc(m->nparams, sizeof(real));
    Ckpt c;
    TrainState ts;
    ckpt_read(&c, path);
    model_load_train_state(m, &c, &ts, am, av, a, 0, 2 * B);
}

// A checkpoint of B rows; each half restores its rows [r*B/2, (r+1)*B/2) bit for bit, and
// another global batch is refused.
TEST(dist_resume_takes_the_rank_rows) {
    Model *m = small_model();
    Acts *a = acts_create(m, B, T), *half = acts_create(m, B / 2, T);
    size_t H = (size_t)m->H;
    unsigned long long s = 3;
    for (int l = 0; l < m->L; l++)
        for (size_t i = 0; i < B * H; i++) a->h[l][i] = (real)test_rand(&s), a->c[l][i] = (real)test_rand(&s);
    real *am = calloc(m->nparams, sizeof(real)), *av = calloc(m->nparams, sizeof(real));
    TrainState ts = {.step = 7}, got;
    const char *path = tmp_path("rows.ckpt");
    model_save(path, m, &ts, am, av, a);
    Ckpt c;
    ckpt_read(&c, path);
    for (int r = 0; r < 2; r++) {
        model_load_train_state(m, &c, &got, am, av, half, r * B / 2, B);
        for (int l = 0; l < m->L; l++) {
            CHECK(!memcmp(half->h[l], a->h[l] + r * B / 2 * H, B / 2 * H * sizeof(real)));
            CHECK(!memcmp(half->c[l], a->c[l] + r * B / 2 * H, B / 2 * H * sizeof(real)));
        }
        CHECK_EQ(got.step, 7);
    }
    ckpt_close(&c);
    CHECK_DIES(load_wrong_rows, (void *)path, "carried state is for batch_size 4, this run uses 8");
    acts_free(m, a);
    acts_free(m, half);
    free(am);
    free(av);
    model_free(m);
}

static void check_shared_eval(const char *cell) {
    Model *m = model_of(cell);
    uint8_t *text = text_of(LEN);
    size_t count;
    Acts *all = acts_create(m, B, T), *half = acts_create(m, B / 2, T);
    double bpc = eval_bpc(m, all, text, LEN, 0, &count, NULL), nats = 0;
    Stripes g = eval_stripes(text, LEN, B, T), mine;
    for (int r = 0; r < 2; r++) {
        stripes_share(&mine, &g, r, 2);
        nats += eval_nats(m, half, &mine);
    }
    CHECK_EQ(count, (size_t)B * (g.stripe_len - 1));
    CHECK_NEAR(nats / (double)count / log(2.0), bpc, 1e-6 * bpc);
    acts_free(m, all);
    acts_free(m, half);
    model_free(m);
    free(text);
}

TEST(dist_shared_evaluation_adds_up) { check_shared_eval("lstm"); }
TEST(dist_shared_evaluation_adds_up_mlstm) { check_shared_eval("mlstm"); }

// Nats of the n - 1 predictions of p[0..n) as one stream from a zero state.
static double stream_nats(Model *m, const uint8_t *p, size_t n) {
    Acts *a = acts_create(m, 1, T);
    Stripes s = eval_stripes(p, n, 1, T);
    double nats = eval_nats(m, a, &s);
    acts_free(m, a);
    return nats;
}

// Warm stripes: stripe 0 is the stream of the span's first warm + L + 1 bytes; stripe b > 0
// adds what a stream from b*L predicts after its first warm bytes. So every byte is predicted
// once, each stripe's state carried from where its warm-up began.
static void check_warm_stripes(const char *cell) {
    enum { N = 1000, W = 37 };  // W: not a multiple of T, so a window straddles the warm-up's end
    Model *m = model_of(cell);
    uint8_t *text = text_of(N);
    Acts *a = acts_create(m, B, T);
    Stripes s = eval_stripes_warm(text, N, B, T, W);
    size_t L = s.stripe_len;
    CHECK_EQ(eval_count(&s), W + B * L);
    CHECK(W + B * L <= N - 1 && N - 1 - (W + B * L) < B);
    double want = stream_nats(m, text, W + L + 1);
    for (size_t b = 1; b < B; b++) want += stream_nats(m, text + b * L, W + L + 1) - stream_nats(m, text + b * L, W + 1);
    CHECK_NEAR(eval_nats(m, a, &s), want, 1e-9 * want);
    acts_free(m, a);
    size_t c0, cw;  // one stripe: the warm-up changes nothing, every byte after the first counts
    a = acts_create(m, 1, T);
    double stream = eval_bpc(m, a, text, N, 0, &c0, NULL), warm = eval_bpc(m, a, text, N, W, &cw, NULL);
    CHECK_EQ(c0, (size_t)N - 1);
    CHECK_EQ(cw, (size_t)N - 1);
    CHECK_NEAR(warm, stream, 1e-12 * stream);
    acts_free(m, a);
    model_free(m);
    free(text);
}

TEST(eval_warm_stripes_predict_each_byte_once) { check_warm_stripes("lstm"); }
TEST(eval_warm_stripes_predict_each_byte_once_mlstm) { check_warm_stripes("mlstm"); }
#endif
