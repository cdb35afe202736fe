// test_gpu_sample.c: the device sampling loop (backend.h gen_*) against the CPU reference:
// teacher-forced logits and state match infer_step's, in one run and cut in two, for the
// plain cell and the mLSTM; its draws are sample_byte's on the same logits and are fed back;
// a device and seed repeat exactly.
#include <math.h>
#include <string.h>
#include "model/gen.h"
#include "gpu_check.h"

// The mLSTM's norm gains and biases start at 1 and 0, which would hide a gain read from the
// wrong place: both twins get the same uneven values.
static void uneven_norms(Model *m) {
    const Layer *L = &m->layer[0];
    const size_t H = (size_t)m->H;
    real *v = xmalloc(sizeof(real) * 4 * H);
    for (int j = 0; j < m->D; j++) {
        for (size_t i = 0; i < 2 * H; i++) v[i] = i < H ? 1 + 0.3f * sinf((float)(i + j)) : 0.2f * cosf((float)(i * 3 + j));
        m->be->to_device(m->params + L->off_sln[j], v, sizeof(real) * 2 * H);
    }
    for (size_t i = 0; i < 4 * H; i++) v[i] = 1 + 0.4f * sinf((float)i * 0.7f);
    m->be->to_device(m->params + L->off_g, v, sizeof(real) * 4 * H);
    for (size_t i = 0; i < 4 * H; i++) v[i] = 0.3f * cosf((float)i * 1.3f);
    m->be->to_device(m->params + L->off_b, v, sizeof(real) * 4 * H);
    free(v);
}

// depth 0: the plain cell; else an mLSTM of that depth.
static Model *sample_model(int H, const char *mask, int depth, const Backend *be) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = H; cfg.block_size = 32; cfg.embed_size = 16; cfg.num_layers = 1;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", mask);
    if (depth) cfg.cell = CELL_MLSTM, cfg.depth = depth;
    Model *m = model_create(&cfg, be);  // weights drawn on the host: the same on every backend
    if (depth) uneven_norms(m);
    return m;
}

// The CPU's logits after each byte of feed, and its final h and c.
static void cpu_trace(int H, const char *mask, int depth, const int *feed, int n, real *logits, real *h, real *c) {
    Model *m = sample_model(H, mask, depth, backend_cpu());
    Infer *s = infer_create(m, 1, 0);
    for (int t = 0; t < n; t++) infer_step(m, s, &feed[t], 1, logits + (size_t)t * 256);
    infer_get(m, s, 0, 'h', 1, h);
    infer_get(m, s, 0, 'c', 1, c);
    infer_free(m, s);
    model_free(m);
}

static void check_teacher_forced(int H, const char *mask, int depth, const char *prec, double tol) {
    enum { N = 24, CUT = 10 };
    const char *text = "The quick brown fox jumps";
    int feed[N];
    for (int t = 0; t < N; t++) feed[t] = (unsigned char)text[t];
    real *ref = xmalloc(sizeof(real) * N * 256), *hr = xmalloc(sizeof(real) * H), *cr = xmalloc(sizeof(real) * H);
    cpu_trace(H, mask, depth, feed, N, ref, hr, cr);
    Model *m = sample_model(H, mask, depth, cuda_named(prec));
    SamplerOpts so = {1, 0, 1};
    const char *why = NULL;
    Gen *g = gen_open(m, &so, &why);
    CHECK_MSG(g, "H = %d %s D = %d %s: no device loop (%s)", H, mask, depth, prec, why);
    if (g) {
        real *got = xmalloc(sizeof(real) * N * 256), *h = xmalloc(sizeof(real) * H), *c = xmalloc(sizeof(real) * H);
        Rng rng;
        rng_seed(&rng, 1);
        unsigned char none;
        m->be->gen_run(g->loop, feed, CUT, 0, rng.s, &none, got);  // two runs: the state carries over
        m->be->gen_run(g->loop, feed + CUT, N - CUT, 0, rng.s, &none, got + CUT * 256);
        m->be->gen_state(g->loop, h, c);
        double el = rel_l2(got, ref, (size_t)N * 256), eh = rel_l2(h, hr, H), ec = rel_l2(c, cr, H);
        CHECK_MSG(el < tol && eh < tol && ec < tol, "H = %d %s D = %d %s (%s): logits %.3g, h %.3g, c %.3g", H, mask,
                  depth, prec, loop_name(gen_route(g).place), el, eh, ec);
        free(got); free(h); free(c);
        gen_close(g);
    }
    model_free(m);
    free(ref); free(hr); free(cr);
}

TEST(gpu_sample_loop_fp32_matches_cpu) { check_teacher_forced(256, "ba_1", 0, "fp32", 1e-4); }
TEST(gpu_sample_loop_bf16_matches_cpu) { check_teacher_forced(256, "ba_1", 0, "bf16", 3e-2); }
// 64 MB of fp32 W_h: more than shared memory holds, so the loop reads it from L2 each step.
TEST(gpu_sample_loop_streamed_matches_cpu) { check_teacher_forced(2048, "dense", 0, "fp32", 1e-4); }
// The mLSTM: depths 2 and 4, all stages held in shared memory.
TEST(gpu_sample_mlstm_fp32_matches_cpu) {
    check_teacher_forced(256, "ba_1", 2, "fp32", 1e-4);
    check_teacher_forced(512, "ba_2", 4, "fp32", 1e-4);
}
TEST(gpu_sample_mlstm_bf16_matches_cpu) { check_teacher_forced(512, "ba_2", 4, "bf16", 5e-2); }
// H = 2048 dense, depth 2: stage 0 (W_h0 and the head, 18 MB) held, W_h1 and the gates (80 MB)
// read from L2/HBM each step; H / 256 CTAs own the internal norms' rows.
TEST(gpu_sample_mlstm_streamed_matches_cpu) { check_teacher_forced(2048, "dense", 2, "fp32", 1e-4); }

// The draws: sample_byte on the loop's own logits with a host generator from the same seed
// gives the same bytes and leaves the same generator state; the CPU fed the prime and the
// drawn bytes gives the same logits (so each draw was fed back).
static void check_draws(SamplerOpts so) {
    enum { H = 256, P = 3, N = 60, STEPS = P + N - 1 };
    Model *m = sample_model(H, "ba_1", 0, backend_cuda(PREC_FP32));
    Gen *g = gen_open(m, &so, NULL);
    CHECK(g);
    if (!g) { model_free(m); return; }
    int feed[STEPS] = {'T', 'h', 'e'};
    real *logits = xmalloc(sizeof(real) * STEPS * 256), *ref = xmalloc(sizeof(real) * STEPS * 256);
    real *h = xmalloc(sizeof(real) * H), *c = xmalloc(sizeof(real) * H);
    unsigned char out[N];
    Rng dev, host;
    rng_seed(&dev, 7);
    rng_seed(&host, 7);
    m->be->gen_run(g->loop, feed, P, N, dev.s, out, logits);
    int same = 1;
    for (int i = 0; i < N; i++) same &= sample_byte(logits + (size_t)(P - 1 + i) * 256, &so, &host) == out[i];
    CHECK_MSG(same, "t %g top-k %d top-p %g: the device drew other bytes than sample_byte", so.temperature, so.top_k, so.top_p);
    CHECK(!memcmp(dev.s, host.s, sizeof dev.s));
    for (int i = 0; i + 1 < N; i++) feed[P + i] = out[i];
    cpu_trace(H, "ba_1", 0, feed, STEPS, ref, h, c);
    double e = rel_l2(logits, ref, (size_t)STEPS * 256);
    CHECK_MSG(e < 1e-4, "t %g: logits of the fed-back run off by %.3g", so.temperature, e);
    free(logits); free(ref); free(h); free(c);
    gen_close(g);
    model_free(m);
}

TEST(gpu_sample_loop_draws_as_sample_byte) {
    check_draws((SamplerOpts){1, 0, 1});
    check_draws((SamplerOpts){0.8, 20, 0.9});
    check_draws((SamplerOpts){1.3, 0, 0.5});
    check_draws((SamplerOpts){0, 0, 1});
}

// bf16: the CPU cannot give the GPU's text, but one device and seed repeat exactly.
static void draw_bf16(int depth, long seed, unsigned char *out, int n) {
    Model *m = sample_model(512, "ba_2", depth, backend_cuda(PREC_BF16));
    SamplerOpts so = {1, 40, 0.95};
    Gen *g = gen_open(m, &so, NULL);
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    int feed = '\n';
    gen_draw(g, &feed, 1, n / 2, &rng, out);  // cut in two as sample's chunks are
    feed = out[n / 2 - 1];
    gen_draw(g, &feed, 1, n - n / 2, &rng, out + n / 2);
    gen_close(g);
    model_free(m);
}

static void check_repeats(int depth) {
    enum { N = 500 };
    unsigned char a[N], b[N], c[N];
    draw_bf16(depth, 5, a, N);
    draw_bf16(depth, 5, b, N);
    draw_bf16(depth, 6, c, N);
    CHECK_MSG(!memcmp(a, b, N), "depth %d: seed 5 gave two texts", depth);
    CHECK_MSG(memcmp(a, c, N), "depth %d: seeds 5 and 6 gave one text", depth);
}

TEST(gpu_sample_same_seed_repeats) { check_repeats(0); }
// The mLSTM's norms combine each CTA's sums in a fixed order: the text repeats too.
TEST(gpu_sample_mlstm_same_seed_repeats) { check_repeats(4); }
