// cmd_info.c: the `info` verb: what a checkpoint holds.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model/byte_set.h"
#include "model/model_io.h"
#include "train/data.h"
#include "cli/opts.h"
#include "cli/verbs.h"

static void print_sections(const Ckpt *c) {
    printf("file: %s (%zu bytes), format version %u, %d sections:", c->path, c->len, c->version, c->nsec);
    for (int i = 0; i < c->nsec; i++) printf(" %s(%llu)", c->sec[i].tag, (unsigned long long)c->sec[i].len);
    printf("\n");
}

// Blocks of `drawn` that mk still stores.
static long kept_of(const Mask *mk, const Mask *drawn) {
    long n = 0;
    for (size_t i = 0; i < (size_t)mk->nr * mk->nc; i++) n += mk->m[i] && drawn->m[i];
    return n;
}

// A mask's statistics, and those of the mask the config draws where it differs (pruned).
static void print_mask(const char *what, int l, const Mask *mk, const Mask *drawn, int bs) {
    MaskStats st = mask_stats(mk);
    printf("  layer %d %s: %d x %d blocks of %d, %ld stored (%.2f%%), degree %d/%.1f/%d, "
           "path length %.2f, clustering %.3f\n", l, what, mk->nr, mk->nc, bs, st.blocks,
           100 * st.density, st.deg_min, st.deg_mean, st.deg_max, st.avg_path, st.clustering);
    if (!memcmp(mk->m, drawn->m, (size_t)mk->nr * mk->nc)) return;
    MaskStats d = mask_stats(drawn);
    printf("    differs from the mask its config draws (%ld blocks, path length %.2f, clustering %.3f): "
           "%ld of those kept\n", d.blocks, d.avg_path, d.clustering, kept_of(mk, drawn));
}

// The paper's mixing measure: units reachable from a unit within 1..D internal steps of one
// time step (the LSTM cell: the one hop of W_h); and the drawn masks' where they differ.
static void print_reach(int l, const Mask *steps, const Mask *drawn, int D) {
    double share[2][SW_MAX_DEPTH];
    mask_reach(steps, D, share[0]);
    mask_reach(drawn, D, share[1]);
    printf("  layer %d: units reachable within 1..%d internal step(s):", l, D);
    for (int k = 0; k < D; k++) printf(" %.1f%%", 100 * share[0][k]);
    if (memcmp(share[0], share[1], sizeof(double) * D)) {
        printf(" (drawn masks:");
        for (int k = 0; k < D; k++) printf(" %.1f%%", 100 * share[1][k]);
        printf(")");
    }
    printf("\n");
}

// The recurrent path training with cfg would take on a device, as its log prints it
// (acts_route). The CPU runs per step; the CUDA backend's engine takes block-32 plain layers
// (lstm_seq_host.cu), with engine = wgmma layer 0's steps and dW_h on wgmma where the shape allows
// (on an sm_90 GPU), and CUDA replays the mlstm's per-step ops as a graph a window.
static Route config_route(const Config *cfg, Device device, const Mask *masks, int n) {
    int per = model_masks_per_layer(cfg), cuda = device == DEVICE_CUDA;
    int wg = cfg->engine == ENGINE_WGMMA && cfg->precision == PREC_BF16 && !cfg->layer_norm &&
             cfg->batch_size / cfg->gpus % 128 == 0;
    Route r = {.nlayers = cfg->num_layers, .table = 1};
    for (int l = 0; l < cfg->num_layers; l++) {
        const Mask *wh = l * per < n ? &masks[l * per] : NULL;  // W_h: a dense mask runs on cuBLAS
        r.layer[l] = !cuda ? RECUR_STEPS
                   : per > 2 ? (cfg->engine != ENGINE_STEPS ? RECUR_REPLAY : RECUR_STEPS)
                   : cfg->block_size != 32 || !engine_wanted(cfg) ? RECUR_STEPS
                   : wh && wh->nr && mask_count(wh) == (long)wh->nr * wh->nc ? RECUR_DENSE
                   : l == 0 && wg ? RECUR_WGMMA : RECUR_GRAPH;
    }
    return r;
}

static void print_model(const Ckpt *c, const Config *cfg) {
    Mask masks[SW_MAX_MASKS], drawn[SW_MAX_MASKS];
    int n = ckpt_masks_for(c, cfg, masks), per = model_masks_per_layer(cfg), mlstm = per > 2;
    model_draw_masks(cfg, drawn);
    printf("model: embed %d, %d layer(s) of %d units, cell %s", cfg->embed_size, cfg->num_layers, cfg->hidden_size, CFG_NAME(cfg, cell));
    if (mlstm) printf(" (depth %d)", cfg->depth);
    printf(", block %d, sparsity %s, layer_norm %s\n", cfg->block_size, cfg->sparsity, mlstm || cfg->layer_norm ? "true" : "false");
    for (int i = 0; i < n; i++) {
        char what[16];
        if (i % per < 2) snprintf(what, sizeof what, "%s", i % per ? "W_x" : mlstm ? "gates" : "W_h");
        else snprintf(what, sizeof what, "W_h%d", i % per - 2);
        if (masks[i].nr) print_mask(what, i / per, &masks[i], &drawn[i], cfg->block_size);
        int first = i / per * per + (mlstm ? 2 : 0);
        if (i % per == per - 1 && n == per * cfg->num_layers) print_reach(i / per, &masks[first], &drawn[first], mlstm ? per - 2 : 1);
    }
    char route[512];
    Route r = config_route(cfg, cfg->device, masks, n);
    printf("recurrent path on %s: %s\n", CFG_NAME(cfg, device), route_text(&r, route, sizeof route));
    if (cfg->device == DEVICE_CPU) {  // where a GPU would take it
        r = config_route(cfg, DEVICE_CUDA, masks, n);
        printf("recurrent path on cuda (train --device cuda): %s\n", route_text(&r, route, sizeof route));
    }
    for (int i = 0; i < n; i++) mask_free(&masks[i]), mask_free(&drawn[i]);
    const CkptSection *p = ckpt_find(c, "params", 1);
    printf("parameters: %llu stored (fp32), %.0f for the same shapes dense\n",
           (unsigned long long)(p->len / 4), model_dense_params(cfg));
}

// The bytes training's evaluations scored, as train prints them: eval_bytes, or the whole valid
// split of the corpus the checkpoint records when that is shorter.
static size_t valid_bytes(const Config *cfg, const TrainState *ts, const char *path) {
    size_t n[3];
    split_sizes(cfg->split, (size_t)ts->data_len, n, path);
    return cfg->eval_bytes && (size_t)cfg->eval_bytes < n[1] ? (size_t)cfg->eval_bytes : n[1];
}

static void print_state(const Ckpt *c, const Config *cfg) {
    TrainState ts;
    if (!ckpt_train_state(c, &ts)) { printf("training state: none (weights only)\n"); return; }
    printf("training state: step %ld, %llu chars seen, %.1f s of training, best valid bpc ",
           ts.step, (unsigned long long)ts.bytes_seen, ts.elapsed_sec);
    if (!isfinite(ts.best_valid_bpc)) printf("none yet\n");
    else if (ts.data_len) printf("%.4f (protocol stripes over the first %zu bytes of the valid split)\n", ts.best_valid_bpc, valid_bytes(cfg, &ts, c->path));
    else if (cfg->eval_bytes) printf("%.4f (protocol stripes over at most the valid split's first %ld bytes)\n", ts.best_valid_bpc, cfg->eval_bytes);
    else printf("%.4f (protocol stripes over the whole valid split)\n", ts.best_valid_bpc);
    if (ts.data_len) printf("trained on: %llu bytes of data, fingerprint %08x\n", (unsigned long long)ts.data_len, ts.data_crc);
    if (ts.has_bytes) printf("byte values in the corpus: %d of 256 (sample draws only these)\n", byte_set_count(ts.bytes));
}

static void info_usage(void) {
    printf("usage: swlstm info CKPT\nPrints a checkpoint's format version, sections, shapes, masks,\n"
           "parameter counts, training step, best valid bpc and config.\n");
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    Opts o;
    if (!opts_begin(&o, "info", argc, argv, info_usage)) return 0;
    while (opts_next(&o))
        if (!opts_positional(&o, &path)) opts_unknown(&o);
    if (!path) die("info: usage: swlstm info CKPT (see swlstm info --help)");
    Ckpt c;
    ckpt_read(&c, path);
    Config cfg;
    ckpt_config(&c, &cfg);
    print_sections(&c);
    print_model(&c, &cfg);
    print_state(&c, &cfg);
    char *text = config_to_text(&cfg);
    printf("config:\n%s", text);
    free(text);
    ckpt_close(&c);
    return 0;
}
