// cmd_mask.c: `swlstm mask`: build a sparsity mask, print its graph statistics next to those of
// a random mask with the same expected block count, optionally draw it as a PNG; or with
// --ckpt, a checkpoint's current mask (pruned or learned) next to the mask its config draws.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "sparse/mask.h"
#include "model/model_io.h"
#include "cli/opts.h"
#include "cli/verbs.h"

typedef struct {
    int hidden, block, json, depth, layer;
    const char *sparsity, *image, *ckpt;
    long seed;
} MaskArgs;

static void usage(void) {
    printf(
            "usage: swlstm mask --hidden H --block B --sparsity DESC [--seed S] [--depth D] [--image FILE.png]\n"
            "                   [--json]\n"
            "       swlstm mask --ckpt CKPT [--layer L] [--image FILE.png] [--json]\n"
            "  --hidden H       hidden size; a multiple of B (also --hidden-size, train's key)\n"
            "  --block B        block size: 8, 16 or 32 (also --block-size)\n"
            "  --sparsity DESC  dense | random_<density> | ba_<m> | ws_<k>_<p>\n"
            "  --seed S         mask seed (default 1; also --mask-seed)\n"
            "  --depth D        also the mixing of D stacked masks: the share of units reachable within\n"
            "                   1..D hops, with the masks of the internal steps of an mlstm layer 0 of\n"
            "                   mask_seed S (D = 1: the mask itself, the plain LSTM's one hop per step)\n"
            "  --image FILE     draw the layout (stored blocks black) as a greyscale PNG\n"
            "  --json           print one JSON object instead of the table\n"
            "  --ckpt CKPT      layer L's (default 0) recurrent mask in CKPT, as pruning or mask updates left\n"
            "                   it, beside the mask its config draws (the mlstm: its gates' mask, and the\n"
            "                   reach of its internal steps' masks, depth = the config's)\n"
            "Prints blocks stored, density, blocks per block row, the average shortest path length and\n"
            "the clustering coefficient of the layout read as an undirected graph, beside a random mask\n"
            "with the same expected block count (small-world: paths as short, clustering higher).\n");
}

static MaskArgs parse_args(Opts *o) {
    MaskArgs a = {.depth = 1, .seed = 1};
    while (opts_next(o)) {
        if (opts_is(o, "--json")) a.json = 1;
        else if (opts_is(o, "--hidden") || opts_is(o, "--hidden-size")) a.hidden = (int)opts_long(o, 1, 1 << 20);
        else if (opts_is(o, "--block") || opts_is(o, "--block-size")) a.block = (int)opts_long(o, 1, 1 << 20);
        else if (opts_is(o, "--sparsity")) a.sparsity = opts_value(o);
        else if (opts_is(o, "--seed") || opts_is(o, "--mask-seed")) a.seed = opts_long(o, 0, LONG_MAX);
        else if (opts_is(o, "--depth")) a.depth = (int)opts_long(o, 1, SW_MAX_DEPTH);
        else if (opts_is(o, "--image")) a.image = opts_value(o);
        else if (opts_is(o, "--ckpt")) a.ckpt = opts_value(o);
        else if (opts_is(o, "--layer")) a.layer = (int)opts_long(o, 0, SW_MAX_LAYERS - 1);
        else opts_unknown(o);
    }
    if (a.ckpt) {
        refuse_same_file("mask --image", a.ckpt, a.image);
        return a;
    }
    if (!a.hidden) die("mask: --hidden is required (a positive multiple of --block)");
    if (!a.sparsity) die("mask: --sparsity is required (dense, random_<density>, ba_<m> or ws_<k>_<p>)");
    if (a.block != 8 && a.block != 16 && a.block != 32) die("mask: option --block: '%d' is not 8, 16 or 32", a.block);
    if (a.hidden % a.block) die("mask: option --hidden: %d is not a multiple of --block %d", a.hidden, a.block);
    return a;
}

// The random descriptor whose expected block count (diagonal always stored) matches `blocks`.
static void random_like(char *desc, size_t len, long blocks, int n) {
    double p = n > 1 ? (double)(blocks - n) / ((double)n * n - n) : 1.0;
    snprintf(desc, len, "random_%.4g", fmin(1.0, fmax(p, 1e-9)));
}

// Small-world coefficient sigma = (C / C_rand) / (L / L_rand) (Humphries and Gurney, 2008).
static double sigma(const MaskStats *s, const MaskStats *r) {
    return (s->clustering / r->clustering) / (s->avg_path / r->avg_path);
}

static void json_num(const char *key, double x, const char *sep) {
    if (isfinite(x)) printf("\"%s\":%.6g%s", key, x, sep);
    else printf("\"%s\":null%s", key, sep);
}

static void json_stats(const char *key, const char *desc, const MaskStats *s, const char *sep) {
    printf("\"%s\":{\"sparsity\":\"%s\",\"blocks\":%ld,", key, desc, s->blocks);
    json_num("density", s->density, ",");
    printf("\"deg_min\":%d,", s->deg_min);
    json_num("deg_mean", s->deg_mean, ",");
    printf("\"deg_max\":%d,", s->deg_max);
    json_num("avg_path", s->avg_path, ",");
    json_num("clustering", s->clustering, "}");
    printf("%s", sep);
}

// share[k]: units reachable within k+1 hops of `depth` masks of desc (the mlstm's internal
// steps of layer 0, or with depth 1 the mask of seed itself).
static void reach_of(const MaskArgs *a, const char *desc, int n, double *share) {
    Mask steps[SW_MAX_DEPTH];
    for (int j = 0; j < a->depth; j++)
        steps[j] = mask_make(desc, n, n, a->depth > 1 ? model_step_mask_seed(a->seed, 0, j) : (uint64_t)a->seed);
    mask_reach(steps, a->depth, share);
    for (int j = 0; j < a->depth; j++) mask_free(&steps[j]);
}

// The --ckpt view: layer a->layer's mask and reach in the checkpoint (which = 0) or as its
// config draws them (1): *m the recurrent (gates') mask, share the reach of the recurrent
// masks of one time step. Fills the layout fields of a from the config.
static Mask ckpt_mask(MaskArgs *a, int which, double *share) {
    static const char *const weights_and_training[] = {"params", "ema", "adam_m", "adam_v", "state", "hidden", NULL};
    Ckpt c;
    ckpt_read_except(&c, a->ckpt, weights_and_training);
    if (which == 0) ckpt_warn_damaged(&c);
    Config cfg;
    ckpt_config(&c, &cfg);
    Mask masks[SW_MAX_MASKS];
    int n = which ? model_draw_masks(&cfg, masks) : ckpt_masks_for(&c, &cfg, masks), per = model_masks_per_layer(&cfg);
    ckpt_close(&c);
    if (a->layer >= cfg.num_layers) die("mask: --layer %d: checkpoint '%s' has %d layer(s)", a->layer, a->ckpt, cfg.num_layers);
    a->hidden = cfg.hidden_size, a->block = cfg.block_size, a->seed = cfg.mask_seed, a->depth = per > 2 ? per - 2 : 1;
    Mask *mk = &masks[per * a->layer], out = mk[0];
    mask_reach(per > 2 ? mk + 2 : mk, a->depth, share);
    mk[0].m = NULL;  // out keeps it
    for (int i = 0; i < n; i++) mask_free(&masks[i]);
    return out;
}

static void json_reach(const char *key, const double *share, int depth, const char *sep) {
    printf("\"%s\":[", key);
    for (int k = 0; k < depth; k++) printf("%.6g%s", share[k], k + 1 < depth ? "," : "]");
    printf("%s", sep);
}

// The second column: a random mask, or (--ckpt) the drawn one.
static void print_json(const MaskArgs *a, int n, const char *rdesc, const MaskStats *s, const MaskStats *r,
                       const double reach[2][SW_MAX_DEPTH]) {
    const char *other = a->ckpt ? "drawn" : "random";
    char key[32];
    printf("{\"hidden\":%d,\"block\":%d,\"seed\":%ld,\"rows\":%d,\"cols\":%d,\"path_sources\":%d,\"depth\":%d,",
           a->hidden, a->block, a->seed, n, n, mask_path_sources(n), a->depth);
    json_stats("mask", a->sparsity, s, ",");
    json_stats(other, rdesc, r, ",");
    json_reach("reach", reach[0], a->depth, ",");
    snprintf(key, sizeof key, "%s_reach", other);
    json_reach(key, reach[1], a->depth, a->ckpt ? "}\n" : ",");
    if (!a->ckpt) json_num("sigma", sigma(s, r), "}\n");
}

static void print_table(const MaskArgs *a, int n, const char *rdesc, const MaskStats *s, const MaskStats *r,
                        const double reach[2][SW_MAX_DEPTH]) {
    const MaskStats *st[2] = {s, r};
    char deg[2][64], path_label[64], rs[2][SW_MAX_DEPTH * 8 + 1] = {"", ""}, reach_label[64];
    for (int i = 0; i < 2; i++) snprintf(deg[i], sizeof deg[i], "%d/%.2f/%d", st[i]->deg_min, st[i]->deg_mean, st[i]->deg_max);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < a->depth; k++)
            snprintf(rs[i] + strlen(rs[i]), sizeof rs[i] - strlen(rs[i]), "%s%.1f", k ? "/" : "", 100 * reach[i][k]);
    snprintf(reach_label, sizeof reach_label, "%% reachable, 1..%d hops", a->depth);
    int nsrc = mask_path_sources(n);
    if (nsrc < n) snprintf(path_label, sizeof path_label, "avg path (%d sources)", nsrc);
    else snprintf(path_label, sizeof path_label, "avg path length");
    printf("layout: %d x %d blocks of %dx%d (hidden %d), seed %ld\n", n, n, a->block, a->block, a->hidden, a->seed);
    printf("%-22s %18s %18s\n", "", a->sparsity, rdesc);
    printf("%-22s %18ld %18ld\n", "blocks stored", s->blocks, r->blocks);
    printf("%-22s %18.4f %18.4f\n", "density", s->density, r->density);
    printf("%-22s %18s %18s\n", "degree min/mean/max", deg[0], deg[1]);
    printf("%-22s %18.4f %18.4f\n", path_label, s->avg_path, r->avg_path);
    printf("%-22s %18.4f %18.4f\n", "clustering", s->clustering, r->clustering);
    printf("%-22s %18s %18s\n", reach_label, rs[0], rs[1]);
    if (!a->ckpt) printf("small-world sigma = (C/C_rand) / (L/L_rand) = %.3f\n", sigma(s, r));
    if (nsrc < n) printf("note: avg path sampled from %d of %d nodes (fixed seed); exact up to %d nodes\n", nsrc, n, MASK_STATS_EXACT_MAX);
}

int cmd_mask(int argc, char **argv) {
    Opts o;
    if (!opts_begin(&o, "mask", argc, argv, usage)) return 0;
    MaskArgs a = parse_args(&o);
    char err[512], rdesc[64] = "drawn";
    double reach[2][SW_MAX_DEPTH];
    Mask m, rm;
    if (a.ckpt) {
        m = ckpt_mask(&a, 0, reach[0]);
        rm = ckpt_mask(&a, 1, reach[1]);
        a.sparsity = "checkpoint";
    }
    int n = a.hidden / a.block;
    if (!a.ckpt) {
        if (mask_check_desc(a.sparsity, n, n, err, sizeof err)) die("mask: %s", err);
        m = mask_make(a.sparsity, n, n, (uint64_t)a.seed);
        random_like(rdesc, sizeof rdesc, mask_count(&m), n);
        rm = mask_make(rdesc, n, n, (uint64_t)a.seed);
        reach_of(&a, a.sparsity, n, reach[0]);
        reach_of(&a, rdesc, n, reach[1]);
    }
    MaskStats s = mask_stats(&m), r = mask_stats(&rm);
    if (a.json) print_json(&a, n, rdesc, &s, &r, reach);
    else print_table(&a, n, rdesc, &s, &r, reach);
    if (a.image) {
        mask_write_png(&m, a.image);
        if (!a.json) printf("image: %s\n", a.image);
    }
    mask_free(&rm);
    mask_free(&m);
    return 0;
}
