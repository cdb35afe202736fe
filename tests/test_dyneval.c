// test_dyneval.c: dynamic evaluation (src/train/dyneval.c): eta = 0 is the static stream,
// updates against ones computed here by hand, the decay towards the trained weights, the
// `eval --dynamic` verb leaving its checkpoint's bytes alone, and its bad options.
#ifndef SW_DOUBLE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/sha256.h"
#include "model/model_io.h"
#include "train/dyn_protocol.h"
#include "train/dyneval.h"
#include "train/eval.h"
#include "test.h"

#define SEG 16

// A small model of either cell on the CPU, block-sparse.
static Model *small_model(int mlstm) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32; cfg.block_size = 8; cfg.embed_size = 8; cfg.num_layers = 2;
    cfg.threads = 1;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_1");
    if (mlstm) cfg.cell = CELL_MLSTM, cfg.depth = 2, cfg.init = INIT_IDENTITY;
    return model_create(&cfg, backend_cpu());
}

// n bytes of word-like text.
static uint8_t *text(size_t n, unsigned long long seed) {
    static const char *words[] = {"the ", "king ", "and ", "queen ", "of ", "all ", "men\n", "speak ", "thou "};
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < n;) {
        const char *w = words[(int)(test_rand(&seed) * 9)];
        for (; *w && i < n; w++) b[i++] = (uint8_t)*w;
    }
    return b;
}

static real *copy_params(const Model *m) {
    real *p = malloc(m->nparams * sizeof(real));
    memcpy(p, m->params, m->nparams * sizeof(real));
    return p;
}

// The gradient of the mean loss of the T-step window over bytes[0..T], from the state a holds
// (zero after acts_reset_state), into g; the state is then carried. Returns the mean loss.
static double window_grad(Model *m, Acts *a, const uint8_t *bytes, int T, real *g) {
    int in[SEG], tgt[SEG];
    for (int t = 0; t < T; t++) in[t] = bytes[t], tgt[t] = bytes[t + 1];
    memset(m->grads, 0, m->nparams * sizeof(real));
    double loss = model_forward(m, a, in, tgt, T);
    model_backward(m, a, T);
    if (g) memcpy(g, m->grads, m->nparams * sizeof(real));
    acts_carry_state(m, a);
    return loss;
}

// With eta = 0 nothing moves: the dynamic bpc is the static stream's, bit for bit.
static void check_eta0(int mlstm) {
    Model *m = small_model(mlstm);
    Acts *a = acts_create(m, 1, SEG);
    uint8_t *train = text(3000, 1), *eval = text(500, 2);
    size_t c1, c2;
    double stat = eval_bpc(m, a, eval, 500, 0, &c1, NULL);
    real *p0 = copy_params(m);
    DynEval *d = dyn_create(m, train, 3000, 4, SEG, NULL);
    double dyn = dyn_bpc(d, a, (DynHyper){0, 0.5, 1e-5}, eval, 500, &c2, NULL);
    CHECK_EQ(c1, c2);
    CHECK_EQ(c1, 499);
    CHECK_MSG(dyn == stat, "%s: dynamic %.17g, static %.17g", mlstm ? "mlstm" : "lstm", dyn, stat);
    CHECK(!memcmp(p0, m->params, m->nparams * sizeof(real)));
    // and with eta > 0 the weights move and the bpc differs
    dyn = dyn_bpc(d, a, (DynHyper){1e-3, 0.01, 1e-5}, eval, 500, &c2, NULL);
    CHECK(dyn != stat && memcmp(p0, m->params, m->nparams * sizeof(real)));
    dyn_free(d);
    acts_free(m, a);
    model_free(m);
    free(p0), free(train), free(eval);
}

TEST(dyneval_eta0_is_the_static_stream_lstm) { check_eta0(0); }
TEST(dyneval_eta0_is_the_static_stream_mlstm) { check_eta0(1); }

// rms from one training window is |g| of that window; two segments' updates by hand, the
// second with the decay towards the trained weights and the state carried from the first;
// the bpc dyn_bpc returns scores each segment before its own update (at p0, then at p1).
static void check_by_hand(int mlstm) {
    Model *m = small_model(mlstm);
    size_t n = m->nparams;
    Acts *a = acts_create(m, 1, SEG);
    uint8_t *sb = text(SEG + 1, 3), *eb = text(2 * SEG + 1, 4);
    real *p0 = copy_params(m), *gs = malloc(n * sizeof(real)), *g1 = malloc(n * sizeof(real)),
         *g2 = malloc(n * sizeof(real)), *p1 = malloc(n * sizeof(real));
    acts_reset_state(m, a);
    window_grad(m, a, sb, SEG, gs);
    acts_reset_state(m, a);
    double loss1 = window_grad(m, a, eb, SEG, g1);
    DynEval *d = dyn_create(m, sb, SEG + 1, 1, SEG, NULL);
    CHECK_EQ(d->windows, 1);
    double mean = 0;
    for (int k = 0; k < m->ntensor; k++) {
        double s = 0;
        for (size_t i = 0; i < m->tensor[k].n; i++) s += fabs(gs[m->tensor[k].off + i]);
        mean += s / (double)m->tensor[k].n / m->ntensor;
    }
    CHECK_NEAR(d->mean_rms, mean, 1e-12 * mean);
    for (size_t i = 0; i < n; i++) CHECK_MSG(d->rms[i] == fabsf(gs[i]), "rms[%zu] %g, |g| %g", i, d->rms[i], gs[i]);
    DynHyper h = {2e-3, 0.3, 1e-4};
    size_t count;
    double bpc1 = dyn_bpc(d, a, h, eb, SEG + 1, &count, NULL);  // one segment: the decay has nothing to pull yet
    CHECK_MSG(fabs(bpc1 - loss1 / log(2.0)) < 1e-12, "one segment: bpc %.17g, its loss before the update %.17g", bpc1,
              loss1 / log(2.0));
    for (size_t i = 0; i < n; i++) {  // float rounding, of the operands' size where they cancel
        double step = h.eta * g1[i] / (fabs(gs[i]) + h.eps);
        CHECK_NEAR(m->params[i], p0[i] - step, 1e-6 * (fabs(p0[i]) + fabs(step)) + 1e-9);
    }
    memcpy(p1, m->params, n * sizeof(real));
    // Two segments: the first as above (to p1); the second's gradient at p1 from the state p0 left.
    memcpy(m->params, p0, n * sizeof(real));
    acts_reset_state(m, a);
    window_grad(m, a, eb, SEG, NULL);
    memcpy(m->params, p1, n * sizeof(real));
    double loss2 = window_grad(m, a, eb + SEG, SEG, g2);
    // Scored after its update instead, the first segment would read at p1: a different loss.
    acts_reset_state(m, a);
    double after1 = window_grad(m, a, eb, SEG, NULL);
    CHECK_MSG(fabs(after1 - loss1) > 1e-4, "the update moves the first segment's loss too little to tell (%g)", after1 - loss1);
    double bpc2 = dyn_bpc(d, a, h, eb, 2 * SEG + 1, &count, NULL), want2 = (loss1 + loss2) / 2 / log(2.0);
    CHECK_MSG(fabs(bpc2 - want2) < 1e-12, "two segments: bpc %.17g, by hand %.17g", bpc2, want2);
    CHECK_EQ(count, 2 * SEG);
    int pulled = 0;
    for (size_t i = 0; i < n; i++) {
        double decay = fmin(h.lambda * fabs(gs[i]) / mean, 1);
        double step = h.eta * g2[i] / (fabs(gs[i]) + h.eps);
        double want = p1[i] + decay * (p0[i] - p1[i]) - step;
        CHECK_NEAR(m->params[i], want, 1e-6 * (fabs(p0[i]) + fabs(p1[i]) + fabs(step)) + 1e-9);
        pulled += decay > 0 && p1[i] != p0[i];
    }
    CHECK(pulled > 0);
    dyn_free(d);
    acts_free(m, a);
    model_free(m);
    free(p0), free(gs), free(g1), free(g2), free(p1), free(sb), free(eb);
}

TEST(dyneval_updates_match_hand_lstm) { check_by_hand(0); }
TEST(dyneval_updates_match_hand_mlstm) { check_by_hand(1); }

// The decay term alone (g = 0) moves every weight towards the trained one by its rate, and
// a rate capped at 1 lands on it exactly; over a stream, lambda keeps the weights nearer.
TEST(dyneval_decay_pulls_back_to_trained) {
    enum { N = 6 };
    real p[N] = {1, -2, 3, 0.5f, -1, 4}, p0[N] = {0, 0, 1, 1, -1, 2}, g[N] = {0}, rms[N] = {0.1f, 0.2f, 0.4f, 1, 2, 50};
    DynArgs args = {1e-2f, 0.5f, 1e-5f};
    real q[N];
    memcpy(q, p, sizeof p);
    backend_cpu()->dyn_update(q, g, p0, rms, N, args);
    for (int i = 0; i < N; i++) {
        double rate = fmin(0.5 * rms[i], 1);
        CHECK_NEAR(q[i], p[i] + rate * (p0[i] - p[i]), 1e-6);
        CHECK(fabs(q[i] - p0[i]) <= fabs(p[i] - p0[i]));
    }
    CHECK(q[5] == p0[5]);  // rate 25 capped at 1
    Model *m = small_model(0);
    Acts *a = acts_create(m, 1, SEG);
    uint8_t *train = text(2000, 5), *eval = text(800, 6);
    real *t0 = copy_params(m);
    DynEval *d = dyn_create(m, train, 2000, 4, SEG, NULL);
    double dist[2];
    for (int k = 0; k < 2; k++) {  // eps at the mean rms: no weight's steps run away
        size_t count;
        dyn_bpc(d, a, (DynHyper){1e-3, k ? 0.5 : 0, d->mean_rms}, eval, 800, &count, NULL);
        dist[k] = 0;
        for (size_t i = 0; i < m->nparams; i++) dist[k] += (m->params[i] - t0[i]) * (double)(m->params[i] - t0[i]);
    }
    CHECK_MSG(dist[1] < 0.5 * dist[0], "distance to the trained weights: lambda 0 %g, lambda 0.5 %g", dist[0], dist[1]);
    dyn_free(d);
    acts_free(m, a);
    model_free(m);
    free(t0), free(train), free(eval);
}

// The 30 kB corpus of the small checkpoints (train split 24 kB), written once.
static const char *corpus_path(void) {
    static char path[512];
    if (path[0]) return path;
    uint8_t *corpus = text(30000, 7);
    snprintf(path, sizeof path, "%s", write_file(tmp_path("dyn_corpus.txt"), corpus, 30000));
    free(corpus);
    return path;
}

// A small checkpoint of either cell on that corpus, written once.
static const char *cell_ckpt(int mlstm) {
    static char paths[2][512];
    char *path = paths[mlstm];
    if (path[0]) return path;
    Model *m = small_model(mlstm);
    snprintf(m->cfg.data, sizeof m->cfg.data, "%s", corpus_path());
    snprintf(m->cfg.split, sizeof m->cfg.split, "0.8,0.1,0.1");
    snprintf(path, 512, "%s", tmp_path(mlstm ? "dyn.ckpt" : "dyn_lstm.ckpt"));
    model_save(path, m, NULL, NULL, NULL, NULL);
    model_free(m);
    return path;
}

static const char *small_ckpt(void) { return cell_ckpt(1); }

static void file_hash(const char *path, uint8_t out[SHA256_BYTES]) {
    FILE *f = fopen(path, "rb");
    Sha256 s;
    sha256_init(&s);
    uint8_t buf[65536];
    size_t got;
    while (f && (got = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&s, buf, got);
    if (f) fclose(f);
    sha256_final(&s, out);
}

static double json_num(const char *out, const char *key) {
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : NAN;
}

TEST(eval_dynamic_verb_leaves_the_checkpoint) {
    const char *ckpt = small_ckpt();
    uint8_t before[SHA256_BYTES], after[SHA256_BYTES];
    file_hash(ckpt, before);
    char args[1024], out[4096];
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 400 --dynamic --segment 16 --dyn-stats 3000 "
             "--eta 1e-3 --json", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"bytes\": 399, \"split\": \"test\", \"protocol\": \"dynamic-stream\", \"streams\": 1, "
                          "\"segment\": 16, \"eta\": 0.001, \"lambda\": 0.001,"), "%s", out);
    double bpc = json_num(out, "\"bpc\": "), stat = json_num(out, "\"static_bpc\": ");
    CHECK_MSG(bpc > 1 && bpc < 9 && stat > 1 && stat < 9 && bpc != stat, "%s", out);
    file_hash(ckpt, after);
    CHECK(!memcmp(before, after, SHA256_BYTES));
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 400 --dynamic --segment 16 --dyn-stats 3000 "
             "--eta 0 --json", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_NEAR(json_num(out, "\"bpc\": "), json_num(out, "\"static_bpc\": "), 0);
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 200 --dynamic --segment 16 --dyn-stats 2000 "
             "--dyn-tune --tune-bytes 200", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "dyn-tune: eta ") && strstr(out, "(tuned)"), "%s", out);
    CHECK_MSG(strstr(out, "over 199 bytes (protocol dynamic: one stream, state carried, weights adapted after each "
                          "16-byte segment)\n"), "the dyn-tune lines name their protocol: %s", out);
    CHECK_MSG(!strstr(out, "| done"), "progress off a terminal without --progress: %s", out);
    file_hash(ckpt, after);
    CHECK(!memcmp(before, after, SHA256_BYTES));
}

// Without --eta each cell's eta and lambda are chosen on the valid split's first span /
// DYN_CHOOSE_SHARE bytes (90 of 1000 here): the reported pair's dynamic bpc and the static one there are what
// dyn_bpc and the static stream give on those bytes, and the span is scored with eta 0 when
// no pair beat static there. --lambda keeps lambda (a pass fewer); --eta is no choice.
TEST(eval_dynamic_default_chooses_on_valid) {
    uint8_t *corpus = text(30000, 7);
    for (int mlstm = 0; mlstm < 2; mlstm++) {
        char args[1024], out[4096];
        const char *base = "--split test --max-bytes 1000 --dynamic --segment 16 --dyn-stats 2000";
        snprintf(args, sizeof args, "eval %s %s --json", cell_ckpt(mlstm), base);
        CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
        char want[128];  // the choice's bytes predict all but their first
        snprintf(want, sizeof want, "\"choice_split\": \"valid\", \"choice_bytes\": %d, \"choice_passes\": ", 1000 / DYN_CHOOSE_SHARE - 1);
        CHECK_MSG(strstr(out, want), "%s", out);
        double passes = json_num(out, "\"choice_passes\": "), bpc = json_num(out, "\"choice_bpc\": ");
        double stat = json_num(out, "\"choice_static_bpc\": "), eta = json_num(out, "\"best_eta\": ");
        double lambda = json_num(out, "\"best_lambda\": ");
        CHECK_MSG(passes >= 3 && passes <= 5, "%s", out);
        if (strstr(out, "\"choice\": \"chosen\""))
            CHECK_MSG(bpc < stat && json_num(out, "\"eta\": ") == eta, "%s", out);
        else
            CHECK_MSG(strstr(out, "\"choice\": \"static\"") && bpc >= stat && json_num(out, "\"eta\": ") == 0 &&
                      json_num(out, "\"bpc\": ") == json_num(out, "\"static_bpc\": "), "%s", out);
        Model *m = model_load_infer(cell_ckpt(mlstm), CKPT_CHOICE, CKPT_CHOICE, 0);
        Acts *a = acts_create(m, 1, 16);
        size_t count;
        CHECK_NEAR(eval_bpc(m, a, corpus + 24000, 1000 / DYN_CHOOSE_SHARE, 0, &count, NULL), stat, 1e-6);
        DynEval *d = dyn_create(m, corpus, 2000, m->cfg.batch_size, 16, NULL);
        CHECK_NEAR(dyn_bpc(d, a, (DynHyper){eta, lambda, DYN_EPS}, corpus + 24000, 1000 / DYN_CHOOSE_SHARE, &count, NULL), bpc, 1e-6);
        CHECK_EQ(count, 1000 / DYN_CHOOSE_SHARE - 1);
        dyn_free(d);
        acts_free(m, a);
        model_free(m);
        snprintf(args, sizeof args, "eval %s %s --lambda 0.02 --json", cell_ckpt(mlstm), base);
        CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
        CHECK_MSG(json_num(out, "\"choice_passes\": ") <= 4 && json_num(out, "\"best_lambda\": ") == 0.02, "%s", out);
        snprintf(args, sizeof args, "eval %s %s", cell_ckpt(mlstm), base);
        CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
        CHECK_MSG(!strncmp(out, "dyn-choose: ", 12) && strchr(out, '\n') && !strncmp(strchr(out, '\n') + 1, "test bpc ", 9),
                  "%s", out);
        snprintf(args, sizeof args, "eval %s %s --eta 1e-4 --json", cell_ckpt(mlstm), base);
        CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
        CHECK_MSG(strstr(out, "\"eta\": 0.0001,") && strstr(out, "\"choice\": \"given\"") &&
                  strstr(out, "\"choice_bytes\": 0, \"choice_passes\": 0,"), "%s", out);
    }
    free(corpus);
}

// n streams of the span on m (d NULL: static), devices G, windows of SEG.
static double streams_bpc(Model *m, DynEval *d, DynHyper h, int n, int G, const uint8_t *b, size_t len, size_t *count) {
    DynStreams s = {n, G, small_ckpt(), 0, SEG};
    return dyn_streams_bpc(m, d, h, &s, b, len, count, NULL);
}

// The choice reads an 11th of the span, capped so that a long span's choice costs a fixed
// number of bytes, and never fewer than two segments and one.
TEST(dyn_choice_bytes_an_11th_capped) {
    CHECK_EQ(dyn_choice_bytes(1000, 16), 90);
    CHECK_EQ(dyn_choice_bytes(11 * DYN_CHOOSE_MAX, 20), DYN_CHOOSE_MAX);
    CHECK_EQ(dyn_choice_bytes(11 * DYN_CHOOSE_MAX + 11, 20), DYN_CHOOSE_MAX);
    CHECK_EQ(dyn_choice_bytes(5000000, 20), DYN_CHOOSE_MAX);
    CHECK_EQ(dyn_choice_bytes(300, 20), 41);
}

// One stream is dyn_bpc's (and eval_bpc's) stream; three are the pieces [0, 333), [333, 666),
// [666, 1000), each from the trained weights and a zero state, their nats summed; with eta = 0
// the dynamic streams are the static ones; two CPU threads, each its own model from the
// checkpoint, give the bits of one model running all three in turn.
TEST(dyneval_streams_are_their_pieces) {
    Model *m = model_load_infer(small_ckpt(), CKPT_CHOICE, CKPT_CHOICE, 0);
    Acts *a = acts_create(m, 1, SEG);
    uint8_t *train = text(3000, 8), *eval = text(1000, 9);
    DynEval *d = dyn_create(m, train, 3000, 4, SEG, NULL);
    DynHyper h = {1e-3, 0.01, 1e-5}, h0 = {0, 0.01, 1e-5};
    size_t c1, c2;
    double one_s = eval_bpc(m, a, eval, 1000, 0, &c2, NULL), one = dyn_bpc(d, a, h, eval, 1000, &c1, NULL);
    CHECK(streams_bpc(m, d, h, 1, 1, eval, 1000, &c2) == one && c2 == c1);
    dyn_restore(d);
    CHECK(streams_bpc(m, NULL, h, 1, 1, eval, 1000, &c2) == one_s && c2 == c1);
    static const size_t off[] = {0, 333, 666, 1000};
    double nats = 0, nats_s = 0;
    size_t count = 0;
    for (int k = 0; k < 3; k++) {
        dyn_restore(d);  // static: the trained weights
        nats_s += eval_span_nats(m, a, eval + off[k], off[k + 1] - off[k], 0, &c1, NULL);
        nats += dyn_nats(d, a, h, eval + off[k], off[k + 1] - off[k], &c1, NULL);
        count += c1;
    }
    CHECK_EQ(count, 997);
    double three = streams_bpc(m, d, h, 3, 1, eval, 1000, &c2);
    dyn_restore(d);
    double three_s = streams_bpc(m, NULL, h, 3, 1, eval, 1000, &c1);
    CHECK_MSG(three == nats / count / log(2.0) && c2 == count, "3 streams %.17g, pieces %.17g", three, nats / count / log(2.0));
    CHECK(three_s == nats_s / count / log(2.0) && c1 == count);
    CHECK_MSG(three > one && three != three_s, "3 streams %.6f, one %.6f, static %.6f", three, one, three_s);
    CHECK(streams_bpc(m, d, h0, 3, 1, eval, 1000, &c2) == three_s);
    CHECK(streams_bpc(m, d, h, 3, 2, eval, 1000, &c2) == three && c2 == count);
    dyn_restore(d);
    CHECK(streams_bpc(m, NULL, h, 3, 2, eval, 1000, &c2) == three_s);
    dyn_free(d);
    acts_free(m, a);
    model_free(m);
    free(train), free(eval);
}

// The verb: --streams 1 is the default's answer; --streams 3 names its protocol, and with
// eta = 0 its dynamic bpc is its static one.
TEST(eval_dynamic_streams_verb) {
    const char *ckpt = small_ckpt(), *base = "--split test --max-bytes 600 --dynamic --segment 16 --dyn-stats 3000 --json";
    char args[1024], out[4096], one[4096];
    snprintf(args, sizeof args, "eval %s %s", ckpt, base);
    CHECK_EQ(run_swlstm(args, one, sizeof one), 0);
    snprintf(args, sizeof args, "eval %s %s --streams 1 --gpus 1", ckpt, base);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(!strncmp(out, one, (size_t)(strstr(one, "\"seconds\"") - one)), "%s\nagainst\n%s", out, one);
    snprintf(args, sizeof args, "eval %s %s --streams 3", ckpt, base);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"static_protocol\": \"streams\", \"bytes\": 597, \"split\": \"test\", \"protocol\": "
                          "\"dynamic-streams\", \"streams\": 3, \"devices\": 1, \"segment\": 16,"), "%s", out);
    CHECK(json_num(out, "\"bpc\": ") != json_num(one, "\"bpc\": "));
    snprintf(args, sizeof args, "eval %s %s --streams 3 --eta 0", ckpt, base);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_NEAR(json_num(out, "\"bpc\": "), json_num(out, "\"static_bpc\": "), 0);
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 600 --dynamic --segment 16 --dyn-stats 3000 --streams 3", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "static (3 streams), over 597 bytes (protocol dynamic: 3 streams (contiguous pieces, each "
                          "from a zero state) on 1 device,"), "%s", out);
}

// --static warm: the static reference is `eval --protocol warm`'s bpc over the same bytes.
TEST(eval_dynamic_static_warm_matches) {
    const char *ckpt = small_ckpt();
    char args[1024], out[4096];
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 1000 --protocol warm --warmup 64 --json", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    double warm = json_num(out, "\"bpc\": "), warm_bytes = json_num(out, "\"bytes\": ");
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 1000 --dynamic --static warm --warmup 64 --segment 16 "
             "--dyn-stats 3000 --json", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"static_protocol\": \"warm\""), "%s", out);
    CHECK_NEAR(json_num(out, "\"static_bpc\": "), warm, 1e-6);
    CHECK_NEAR(json_num(out, "\"static_bytes\": "), warm_bytes, 0);
    CHECK_MSG(warm_bytes != json_num(out, "\"bytes\": "), "the warm reference scores as many bytes as the stream: %s", out);
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 1000 --dynamic --static warm --warmup 64 --segment 16 "
             "--dyn-stats 3000", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    char want[64];
    snprintf(want, sizeof want, " static (warm, over %.0f bytes), over 999 bytes ", warm_bytes);
    CHECK_MSG(strstr(out, want), "the text line gives the warm reference's bytes: %s", out);
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 1000 --dynamic --segment 16 --dyn-stats 3000 --json", ckpt);
    CHECK_EQ(run_swlstm(args, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"static_protocol\": \"stream\""), "%s", out);
    CHECK_MSG(fabs(json_num(out, "\"static_bpc\": ") - warm) > 1e-6, "stream and warm static bpc alike: %s", out);
}

// --progress: each phase of --dynamic ends with its line on stderr (not a terminal here),
// stdout keeps only the answer.
TEST(eval_dynamic_progress_a_line_a_phase) {
    char cmd[2048], err[4096], out[4096];
    const char *bin = getenv("SWLSTM_BIN") ? getenv("SWLSTM_BIN") : "./swlstm";
    snprintf(cmd, sizeof cmd, "%s eval %s --split test --max-bytes 200 --dynamic --segment 16 --dyn-stats 2000 "
             "--dyn-tune --tune-bytes 200 --json --progress 2>%s", bin, small_ckpt(), tmp_path("dyn-progress.err"));
    CHECK_EQ(run_shell(cmd, out, sizeof out), 0);
    CHECK_MSG(!strncmp(out, "{\"bpc\": ", 8) && !strchr(out, '\n')[1], "stdout: %s", out);
    snprintf(cmd, sizeof cmd, "cat %s", tmp_path("dyn-progress.err"));
    CHECK_EQ(run_shell(cmd, err, sizeof err), 0);
    const char *p = err;
    static const char *phase[] = {"eval static: 100.0% | ", "eval rms statistics: 100.0% | ",
                                  "eval dyn-tune: 15/15 pairs, 100.0% | ", "eval dynamic: 100.0% | "};
    for (int i = 0; i < 4; i++) {   // in order, each ending "| done" (earlier lines a second may precede)
        p = strstr(p, phase[i]);
        CHECK_MSG(p && strstr(p, " | done\n") == strchr(p, '\n') - 7, "phase '%s' in: %s", phase[i], err);
    }
}

static void expect_error(const char *ckpt, const char *opts, const char *needle, int *ok) {
    char args[1024], out[4096];
    snprintf(args, sizeof args, "eval %s --split test --max-bytes 200 %s", ckpt, opts);
    int rc = run_swlstm(args, out, sizeof out);
    const char *e = strstr(out, "swlstm: error: ");
    if (rc == 0 || !e || !strstr(e, needle) || strchr(e, '\n') != e + strlen(e) - 1) {
        test_fail(__FILE__, __LINE__, "'%s': exit %d, output: %s", args, rc, out);
        *ok = 0;
    }
}

TEST(eval_dynamic_bad_options_are_clear_errors) {
    const char *ckpt = small_ckpt();
    int ok = 1;
    expect_error(ckpt, "--dynamic --eta -1", "eval --eta = '-1': expected a number from 0", &ok);
    expect_error(ckpt, "--dynamic --segment 0", "eval --segment = '0': expected an integer from 1", &ok);
    expect_error(ckpt, "--dynamic --lambda -0.1", "eval --lambda = '-0.1': expected a number from 0", &ok);
    expect_error(ckpt, "--dynamic --eps 0", "eval --eps = '0'", &ok);
    expect_error(ckpt, "--dynamic --dyn-stats 24001", "eval: --dyn-stats 24001: the train split holds 24000 bytes", &ok);
    expect_error(ckpt, "--dynamic --dyn-tune --tune-bytes 3001", "eval: --tune-bytes 3001: the valid split holds 3000 bytes", &ok);
    expect_error(ckpt, "--dyn-tune", "eval: --dyn-tune tunes --dynamic; add --dynamic", &ok);
    expect_error(ckpt, "--dynamic --protocol warm", "eval: --dynamic reads one stream", &ok);
    expect_error(ckpt, "--dynamic --static stripes", "eval: --static 'stripes': expected stream or warm", &ok);
    expect_error(ckpt, "--static warm", "eval: --static names --dynamic's reference; add --dynamic", &ok);
    expect_error(ckpt, "--dynamic --streams 0", "eval --streams = '0': expected an integer from 1", &ok);
    expect_error(ckpt, "--dynamic --streams 101", "eval: --streams 101: the span holds 200 bytes; a stream needs 2 at least (at most 100 streams)", &ok);
    expect_error(ckpt, "--dynamic --streams 2 --gpus 2", "eval: --gpus 2: the CPU runs the streams one after another", &ok);
    expect_error(ckpt, "--streams 2", "eval: --streams and --gpus split --dynamic; add --dynamic", &ok);
    CHECK(ok);
}
#endif
