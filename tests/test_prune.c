// test_prune.c: block pruning (model/prune.c, `swlstm prune`): which blocks stay, that their
// weights and optimizer state move with them, that a pruned checkpoint resumes bit-exactly
// and evaluates, and that bad input writes nothing.
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/model_io.h"
#include "model/prune.h"
#include "model/remask.h"
#include "test.h"

static Model *model_for(const char *cell, int depth, int layers) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 64, cfg.block_size = 8, cfg.num_layers = layers, cfg.embed_size = 5, cfg.depth = depth;
    cfg.cell = config_parse_choice("cell", cell, "test");
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_2");
    return model_create(&cfg, backend_cpu());
}

// Squared norm of mask block (r, c) of w over its gate copies (-1: absent).
static double norm_of(const BsMat *w, const real *vals, int nr, int r, int c) {
    double s = -1;
    long bb = (long)w->bs * w->bs;
    for (int br = r; br < w->nbr; br += nr)
        for (int k = w->row_ptr[br]; k < w->row_ptr[br + 1]; k++)
            if (w->col_idx[k] == c) {
                s = s < 0 ? 0 : s;
                for (long i = 0; i < bb; i++) s += (double)vals[k * bb + i] * vals[k * bb + i];
            }
    return s;
}

// out keeps `want` blocks of mk, every row and column non-empty, and no block it drops is
// larger than a kept one, except a row's or column's best, which stays whatever its size.
static int check_kept(const Mask *mk, const Mask *out, const BsMat *w, const real *vals, long want) {
    if (mask_count(out) != want) return 0;
    double min_kept = INFINITY, max_dropped = -1;
    for (int r = 0; r < mk->nr; r++) {
        int row = 0;
        double best = -1;
        for (int c = 0; c < mk->nc; c++) best = fmax(best, norm_of(w, vals, mk->nr, r, c));
        for (int c = 0; c < mk->nc; c++) {
            size_t i = (size_t)r * mk->nc + c;
            double n = norm_of(w, vals, mk->nr, r, c), col_best = -1;
            for (int q = 0; q < mk->nr; q++) col_best = fmax(col_best, norm_of(w, vals, mk->nr, q, c));
            if (out->m[i] && !mk->m[i]) return 0;
            row += out->m[i];
            if (out->m[i] && n != best && n != col_best) min_kept = fmin(min_kept, n);
            if (mk->m[i] && !out->m[i]) max_dropped = fmax(max_dropped, n);
        }
        if (!row) return 0;
    }
    return max_dropped <= min_kept;
}

static int kept_is(const Mask *mk, const double *norm, long want, const char *bits, long floor) {
    long got;
    Mask out = mask_keep_largest(mk, norm, want, &got);
    int ok = got == floor;
    for (int q = 0; bits[q]; q++) ok &= out.m[q] == (bits[q] == '1');
    mask_free(&out);
    return ok;
}

// Where the largest block of every row and column are more blocks than wanted, the fewest that
// leave no line empty stay: here a hub row and column, whose largest blocks are 7, give way to
// the diagonal (a matching of all four rows), then the largest of the rest; and a matching
// that takes the largest block first (0, 0) is grown by an augmenting path to (0, 1), (1, 0).
TEST(prune_keeps_the_fewest_blocks_that_cover_the_lines) {
    uint8_t hub[16] = {1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1};
    double hn[16] = {10, 1, 1, 1, 9, 2, 0, 0, 8, 0, 2, 0, 7, 0, 0, 2};
    Mask mh = {4, 4, hub};
    CHECK(kept_is(&mh, hn, 8, "1100" "1100" "1010" "1001", 7));  // the largest of each line, then (0, 1) of the tied 1s
    CHECK(kept_is(&mh, hn, 4, "1000" "0100" "0010" "0001", 4));
    CHECK(kept_is(&mh, hn, 5, "1000" "1100" "0010" "0001", 4));
    uint8_t two[4] = {1, 1, 1, 0};
    double tn[4] = {5, 1, 1, 0};
    Mask mt = {2, 2, two};
    CHECK(kept_is(&mt, tn, 2, "01" "10", 2));
    CHECK(kept_is(&mt, tn, 1, "01" "10", 2));  // fewer than the lines need: the cover, as model_prune_masks refuses
}

static void prune_and_check(const char *cell, int depth, int layers) {
    Model *m = model_for(cell, depth, layers);
    unsigned long long s = 3;
    for (size_t i = 0; i < m->nparams; i++) m->params[i] = (real)(test_rand(&s) - 0.5);
    Mask masks[SW_MAX_MASKS];
    model_prune_masks(m, m->params, 0.5, masks);
    int per = 2 + m->D;
    for (int l = 0; l < m->L; l++) {
        const Layer *L = &m->layer[l];
        CHECK(check_kept(&L->mask_h, &masks[l * per], &L->wh, m->params + L->off_wh, lround(0.5 * mask_count(&L->mask_h))));
        if (L->sparse_x)
            CHECK(check_kept(&L->mask_x, &masks[l * per + 1], &L->wx, m->params + L->off_wx, lround(0.5 * mask_count(&L->mask_x))));
        for (int j = 0; j < m->D; j++)
            CHECK(check_kept(&L->mask_s[j], &masks[l * per + 2 + j], &L->ws[j], m->params + L->off_ws[j],
                             lround(0.5 * mask_count(&L->mask_s[j]))));
    }
    Model *p = model_create_with_masks(&m->cfg, m->be, masks);
    model_remap(m, m->params, p, p->params);
    for (int t = 0; t < p->ntensor; t++) {  // every stored block keeps its values
        const ParamTensor *a = model_tensor(m, p->tensor[t].name), *b = &p->tensor[t];
        const BsMat *wb = NULL, *wa = NULL;
        for (int l = 0; l < m->L; l++) {
            if (b->off == p->layer[l].off_wh) wb = &p->layer[l].wh, wa = &m->layer[l].wh;
            if (p->layer[l].sparse_x && b->off == p->layer[l].off_wx) wb = &p->layer[l].wx, wa = &m->layer[l].wx;
            for (int j = 0; j < m->D; j++)
                if (b->off == p->layer[l].off_ws[j]) wb = &p->layer[l].ws[j], wa = &m->layer[l].ws[j];
        }
        if (!wb) {
            CHECK(a->n == b->n && !memcmp(m->params + a->off, p->params + b->off, sizeof(real) * b->n));
            continue;
        }
        long bb = (long)wb->bs * wb->bs;
        for (int br = 0; br < wb->nbr; br++)
            for (int k = wb->row_ptr[br]; k < wb->row_ptr[br + 1]; k++) {
                long f = -1;
                for (int q = wa->row_ptr[br]; q < wa->row_ptr[br + 1]; q++)
                    if (wa->col_idx[q] == wb->col_idx[k]) f = q;
                CHECK(f >= 0 && !memcmp(m->params + a->off + f * bb, p->params + b->off + k * bb, sizeof(real) * bb));
            }
    }
    for (int i = 0; i < per * m->L; i++) mask_free(&masks[i]);
    model_free(p);
    model_free(m);
}

TEST(prune_keeps_largest_blocks_lstm) { prune_and_check("lstm", 0, 2); }
TEST(prune_keeps_largest_blocks_mlstm) { prune_and_check("mlstm", 3, 1); }

static const char *prune_cfg(void) {
    static char path[512];
    if (path[0]) return path;
    const char *src = shared_data("tinyshakespeare.txt");
    char data[512], text[2048];
    snprintf(data, sizeof data, "%s", tmp_path("prune.txt"));
    char *buf = calloc(30000, 1);
    FILE *f = src ? fopen(src, "rb") : NULL;
    size_t got = f ? fread(buf, 1, 30000, f) : 0;
    if (f) fclose(f);
    for (size_t i = got; i < 30000; i++) buf[i] = "abc de\n"[i % 7];
    write_file(data, buf, 30000);
    free(buf);
    snprintf(path, sizeof path, "%s", tmp_path("prune.cfg"));
    int n = snprintf(text, sizeof text,
                     "data = %s\nsplit = 0.8,0.1,0.1\nhidden_size = 32\nembed_size = 8\nblock_size = 8\n"
                     "num_layers = 2\nsparsity = ba_2\nbatch_size = 4\nseq_length = 16\nmax_steps = 8\n"
                     "learning_rate = 1e-2\nwarmup_steps = 2\nlog_every = 1\neval_every = 0\nthreads = 1\n"
                     "cell = mlstm\ndepth = 2\nema = 0.9\n", data);
    write_file(path, text, (size_t)n);
    return path;
}

static int sw(char *log, size_t n, const char *fmt, const char *a, const char *b, const char *c) {
    char args[4096];
    snprintf(args, sizeof args, fmt, a, b, c);
    return run_swlstm(args, log, n);
}

// A training checkpoint pruned to half its blocks keeps the step and state, resumes to the
// end in one go or in two with the same bits, and evaluates.
TEST(prune_checkpoint_resumes_bit_exactly) {
    char log[8192], run[512], pruned[512], a[512], b[512], ck[600];
    snprintf(run, sizeof run, "%s", tmp_path("prune-run"));
    snprintf(pruned, sizeof pruned, "%s", tmp_path("pruned.ckpt"));
    snprintf(a, sizeof a, "%s", tmp_path("prune-a"));
    snprintf(b, sizeof b, "%s", tmp_path("prune-b"));
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --stop-after 3%s", prune_cfg(), run, ""), 0);
    snprintf(ck, sizeof ck, "%s/latest.ckpt", run);
    CHECK_EQ(sw(log, sizeof log, "prune %s --density 0.5 --out %s%s", ck, pruned, ""), 0);
    CHECK_MSG(strstr(log, "l0.wh") && strstr(log, "weights and training state"), "%s", log);
    CHECK(ckpt_same_section(ck, pruned, "state") && ckpt_same_section(ck, pruned, "hidden") && ckpt_same_section(ck, pruned, "config"));
    CHECK(!ckpt_same_section(ck, pruned, "masks"));
    CHECK_EQ(sw(log, sizeof log, "info %s%s%s", pruned, "", ""), 0);
    CHECK_MSG(strstr(log, "layer 0 W_h0:") && strstr(log, "differs from the mask its config draws"), "%s", log);
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --resume %s", prune_cfg(), a, pruned), 0);
    CHECK_MSG(strstr(log, "resumed from") && strstr(log, "step 8/8"), "%s", log);
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --resume %s --stop-after 5", prune_cfg(), b, pruned), 0);
    snprintf(ck, sizeof ck, "%s/latest.ckpt", b);
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --resume %s", prune_cfg(), b, ck), 0);
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/latest.ckpt", a);
    snprintf(pb, sizeof pb, "%s/latest.ckpt", b);
    CHECK(ckpt_same_section(pa, pb, "params") && ckpt_same_section(pa, pb, "adam_m") && ckpt_same_section(pa, pb, "ema"));
    CHECK(ckpt_same_section(pa, pruned, "masks"));
    CHECK_EQ(sw(log, sizeof log, "eval %s --split test --max-bytes 1000%s%s", pa, "", ""), 0);
}

// Bad densities and a density too low for the rows are one-line errors that write nothing.
TEST(prune_bad_input_writes_nothing) {
    char log[4096], run[512], out[512], ck[600];
    snprintf(run, sizeof run, "%s", tmp_path("prune-bad"));
    snprintf(out, sizeof out, "%s", tmp_path("never.ckpt"));
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --max_steps 2 --warmup_steps 0%s", prune_cfg(), run, ""), 0);
    snprintf(ck, sizeof ck, "%s/latest.ckpt", run);
    static const char *bad[][2] = {{"0", "expected a fraction"}, {"1.5", "--density"}, {"x", "--density"},
                                   {"0.01", "each keeps at least one"}};
    for (int i = 0; i < 4; i++) {
        CHECK(sw(log, sizeof log, "prune %s --density %s --out %s", ck, bad[i][0], out) != 0);
        CHECK_MSG(strstr(log, bad[i][1]) && strstr(log, "swlstm: error: prune"), "density %s: %s", bad[i][0], log);
        CHECK(access(out, F_OK) != 0);
    }
    CHECK(sw(log, sizeof log, "prune %s --density 0.5%s%s", ck, "", "") != 0);
    CHECK(strstr(log, "usage: swlstm prune"));
}

// Progress goes to stderr only when asked off a terminal: none by default (stderr is a file
// here) or with --quiet; with --progress a last line with the time and "done".
TEST(prune_progress_on_stderr_only_when_asked) {
    char log[4096], run[512], args[2048];
    snprintf(run, sizeof run, "%s", tmp_path("prune-progress"));
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --max_steps 2 --warmup_steps 0%s", prune_cfg(), run, ""), 0);
    snprintf(args, sizeof args, "%s/latest.ckpt --density 0.5 --out %s", run, tmp_path("progress.ckpt"));
    const char *why = progress_off_a_terminal("prune", args);
    CHECK_MSG(!why, "%s", why);
}
// prune onto its own input (by any path to it) is refused and leaves the checkpoint as it was.
TEST(prune_onto_its_input_is_refused) {
    char log[4096], run[512], ck[600], alias[700];
    snprintf(run, sizeof run, "%s", tmp_path("prune-self"));
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --max_steps 2 --warmup_steps 0%s", prune_cfg(), run, ""), 0);
    snprintf(ck, sizeof ck, "%s/latest.ckpt", run);
    snprintf(alias, sizeof alias, "%s/./latest.ckpt", run);
    size_t n0, n1;
    char *before = read_text_file(ck, &n0, "checkpoint");
    CHECK_EQ(sw(log, sizeof log, "prune %s --density 0.5 --out %s%s", ck, alias, ""), 1);
    CHECK_MSG(strstr(log, "swlstm: error: prune: output '") && strstr(log, "' is its input file; write it to another path"), "%s", log);
    char *after = read_text_file(ck, &n1, "checkpoint");
    CHECK(n0 == n1 && !memcmp(before, after, n0));
    free(before);
    free(after);
}

// Fine-tuning a pruned model keeps its own best: the unpruned model's best valid bpc is not
// carried, so the first evaluation writes best.ckpt (by --resume and by init_from), and the
// log says so.
TEST(finetuning_a_pruned_model_keeps_its_own_best) {
    char log[16384], run[512], pruned[512], ft[512], ft2[512], ck[600], args[2048];
    snprintf(run, sizeof run, "%s", tmp_path("prune-best"));
    snprintf(pruned, sizeof pruned, "%s", tmp_path("pruned-best.ckpt"));
    snprintf(ft, sizeof ft, "%s", tmp_path("prune-best-ft"));
    snprintf(ft2, sizeof ft2, "%s", tmp_path("prune-best-init"));
    CHECK_EQ(sw(log, sizeof log, "train %s --out_dir %s --eval_every 4%s", prune_cfg(), run, ""), 0);
    snprintf(ck, sizeof ck, "%s/best.ckpt", run);
    CHECK_EQ(sw(log, sizeof log, "prune %s --density 0.3 --out %s%s", ck, pruned, ""), 0);
    CHECK_EQ(sw(log, sizeof log, "info %s%s%s", pruned, "", ""), 0);
    CHECK_MSG(strstr(log, "best valid bpc none yet"), "%s", log);
    snprintf(args, sizeof args, "train %s --out_dir %s --resume %s --eval_every 2 --max_steps 10", prune_cfg(), ft, pruned);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "the checkpoint holds no best valid bpc (none yet, or a swlstm prune output): this run's first evaluation sets best.ckpt") &&
              strstr(log, "eval step 10 |") && strstr(log, "| best\n"), "%s", log);
    snprintf(ck, sizeof ck, "%s/best.ckpt", ft);
    CHECK(access(ck, F_OK) == 0);
    snprintf(args, sizeof args, "train %s --out_dir %s --init_from %s --eval_every 2 --max_steps 2 --warmup_steps 0", prune_cfg(), ft2, pruned);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "the best valid bpc start fresh: this run's first evaluation sets best.ckpt") && strstr(log, "| best\n"), "%s", log);
    snprintf(ck, sizeof ck, "%s/best.ckpt", ft2);
    CHECK(access(ck, F_OK) == 0);
}
#endif
