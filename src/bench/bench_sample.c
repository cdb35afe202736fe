// bench_sample.c: `swlstm bench --sample`: bytes per second at batch 1 of the device loop and
// of the per-step ops (shapes.c), against the time to read the step's weights once from L2
// and from HBM. GPU only.
#include <stdio.h>
#include <stdlib.h>
#include "base/common.h"
#include "base/rng.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/shapes.h"
#include "bench/table.h"
#include "model/gen.h"
#include "sparse/bsmat.h"
#include "sparse/mask.h"

// The bytes a step reads: the recurrent matrices and the head.
static double step_weight_mb(const Model *m, int bf) {
    const Layer *L = &m->layer[0];
    long n = bsmat_nvals(&L->wh) + SW_VOCAB * (long)m->H;
    for (int j = 0; j < m->D; j++) n += bsmat_nvals(&L->ws[j]);
    return (double)n * (bf ? 2 : 4) / 1e6;
}

// Seconds per byte of the per-step ops on r->batch rows: infer_step and the host's draw.
static double steps_secs(Model *m, const SampleShape *r, const SamplerOpts *so, Rng *rng) {
    enum { STEP_BYTES = 200 };
    const int B = r->batch;
    Infer *s = infer_create(m, B, 0);
    float *logits = xmalloc(sizeof(float) * SW_VOCAB * B);
    int *tok = xmalloc(sizeof(int) * B);
    for (int k = 0; k < B; k++) tok[k] = '\n';
    infer_step(m, s, tok, B, logits);
    double t0 = now_sec();
    for (int i = 0; i < STEP_BYTES; i++) {
        for (int k = 0; k < B; k++) tok[k] = sample_byte(logits + k * SW_VOCAB, so, rng);
        infer_step(m, s, tok, B, logits);
    }
    double secs = (now_sec() - t0) / STEP_BYTES / B;
    free(tok);
    free(logits);
    infer_free(m, s);
    return secs;
}

// Seconds per byte of the device loop; *setup_ms: its plan, the gather and layer 0's table,
// the start-up sample adds to a checkpoint's load; *path: where the loop runs.
static double loop_secs(Model *m, const SampleShape *r, const SamplerOpts *so, Rng *rng, double *setup_ms,
                        const char **path) {
    enum { WARM = 64, BYTES = 4000 };
    double t0 = now_sec();
    Gen *g = gen_open(m, so, NULL);
    if (!g)
        die("bench --sample: H = %d %s %s has no device loop", r->H, r->mask, config_choice_name("precision", r->prec));
    *setup_ms = 1e3 * (now_sec() - t0);
    *path = loop_name(gen_route(g).place);
    unsigned char *out = xmalloc(BYTES);
    int feed = '\n';
    gen_draw(g, &feed, 1, WARM, rng, out);
    feed = out[WARM - 1];
    t0 = now_sec();
    gen_draw(g, &feed, 1, BYTES, rng, out);
    double secs = (now_sec() - t0) / BYTES;
    free(out);
    gen_close(g);
    return secs;
}

// One row: a random-weight model, bytes drawn at temperature 1 (the draw sorts all 256
// candidates, as sample_byte does).
static void sample_row(const SampleShape *r, double l2_gbps, double hbm_gbps) {
    Config cfg;
    bench_model_config(&cfg, r->H, r->mask, r->prec, r->depth);
    Model *m = model_create(&cfg, backend_cuda(cfg.precision));
    const double mb = step_weight_mb(m, r->prec == PREC_BF16);
    SamplerOpts so = {.temperature = 1.0, .top_k = 0, .top_p = 1.0};
    Rng rng;
    rng_seed(&rng, 1);
    double setup = 0;
    const char *path = "steps";
    double secs = r->steps ? steps_secs(m, r, &so, &rng) : loop_secs(m, r, &so, &rng, &setup, &path);
    const double l2us = mb * 1e6 / (l2_gbps * 1e9) * 1e6, hbmus = mb * 1e6 / (hbm_gbps * 1e9) * 1e6;
    char cell[16] = "lstm";
    if (r->depth) snprintf(cell, sizeof cell, "mlstm D=%d", r->depth);
    table_row("| %5d | %-11s | %-10s | %5.1f%% | %s | %7.1f | %-15s | %5d | %6.0f | %7.2f | %8.0f | %6.2f | %6.2f | %5.1f |\n",
           r->H, r->mask, cell, 100 * mask_stats(&m->layer[0].mask_h).density, CFG_NAME(&cfg, precision), mb, path,
           r->batch, setup, secs * 1e6, 1 / secs, l2us, hbmus, secs * 1e6 / l2us);
    fflush(stdout);
    model_free(m);
}

void bench_sample(void) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    const double l2g = cb_l2_gbps(l2), hbmg = cb_copy_gbps() / 2;
    table_note("device: %s; L2 read: %.0f GB/s; HBM (half a device copy's read + write): %.0f GB/s\nsampling at batch 1 "
           "(1 layer, E = 64, block 32, temperature 1): one launch of 4000 bytes after 64; weights = the recurrent "
           "matrices (mlstm: W_h0 .. W_h(D-1) and the gates) + W_o; L2 us, HBM us = weights / L2 read, HBM; "
           "x L2 = us per byte / L2 us; batch > 1: the per-step ops on that many rows, us per byte = a step / rows\n\n",
           dev, l2g, hbmg);
    table_head("sample", "| H | W_h mask | cell | density | dtype | weights MB | path | batch | setup ms | us/byte | bytes/s | L2 us "
               "| HBM us | x L2 |");
    for (int i = 0; i < bench_n_sample_shapes; i++) sample_row(&bench_sample_shapes[i], l2g, hbmg);
}
