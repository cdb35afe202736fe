// test_mask_update.c: masks learned in training (model/mask_update.c, train/train_masks.c):
// the schedules, gradual pruning's counts and rows, SET/RigL keeping block counts and
// regrowing exactly the blocks of largest score at zero with zero moments, RigL's scores
// (the full-mask gradient's block norms), and bit-exact resumes across mask changes.
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include "model/grow_scores.h"
#include "model/mask_update.h"
#include "model/prune.h"
#include "model/remask.h"
#include "test.h"

static Config cfg_for(const char *cell, int layers) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 64, cfg.block_size = 8, cfg.num_layers = layers, cfg.embed_size = 5, cfg.depth = 2;
    cfg.cell = config_parse_choice("cell", cell, "test");
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_2");
    return cfg;
}

static Model *random_model(const char *cell, int layers) {
    Config cfg = cfg_for(cell, layers);
    Model *m = model_create(&cfg, backend_cpu());
    unsigned long long s = 11;
    for (size_t i = 0; i < m->nparams; i++) m->params[i] = (real)(test_rand(&s) - 0.5);
    return m;
}

static const Mask *mask_of(const Model *m, int i) { return model_layer_mask(m, i / (2 + m->D), i % (2 + m->D), NULL, NULL); }

// Whether block q of mk is the largest present block of its row or of its column.
static int line_best(const Mask *mk, const double *norm, int q) {
    int r = q / mk->nc, c = q % mk->nc, row = 1, col = 1;
    for (int b = 0; b < mk->nc; b++) row &= !mk->m[r * mk->nc + b] || norm[r * mk->nc + b] <= norm[q];
    for (int a = 0; a < mk->nr; a++) col &= !mk->m[a * mk->nc + c] || norm[a * mk->nc + c] <= norm[q];
    return row || col;
}

// Every block row and column of mk holds a block.
static int rows_and_cols_full(const Mask *mk) {
    for (int a = 0; a < mk->nr; a++) {
        int r = 0, c = 0;
        for (int b = 0; b < mk->nc; b++) r += mk->m[a * mk->nc + b], c += mk->m[b * mk->nc + a];
        if (!r || !c) return 0;
    }
    return 1;
}

TEST(mask_schedules) {
    Config c = cfg_for("lstm", 1);
    c.prune_to = 0.2, c.prune_start = 100, c.prune_end = 200, c.prune_every = 30;
    CHECK(prune_density_at(&c, 50) == 1 && prune_density_at(&c, 100) == 1);
    CHECK_NEAR(prune_density_at(&c, 150), 0.2 + 0.8 * 0.125, 1e-15);
    CHECK_NEAR(prune_density_at(&c, 175), 0.2 + 0.8 / 64, 1e-15);
    CHECK(prune_density_at(&c, 200) == 0.2 && prune_density_at(&c, 900) == 0.2);
    long due[] = {100, 130, 160, 190, 200}, n = 0;
    for (long t = 0; t < 400; t++)
        if (prune_due(&c, t)) CHECK_EQ(t, due[n++]);
    CHECK_EQ(n, 5);
    c.prune_to = 1;
    CHECK(!prune_due(&c, 100));
    c.mask_update = MASK_UPDATE_RIGL;
    c.mask_update_frac = 0.3, c.mask_update_every = 25, c.max_steps = 200, c.mask_update_end = 0;
    CHECK_EQ(mask_update_end(&c), 150);
    CHECK_NEAR(mask_update_frac_at(&c, 75), 0.15, 1e-15);
    CHECK_NEAR(mask_update_frac_at(&c, 50), 0.15 * (1 + 0.5), 1e-15);
    CHECK(mask_update_frac_at(&c, 0) == 0 && mask_update_frac_at(&c, 60) == 0 && mask_update_frac_at(&c, 150) == 0);
    c.mask_update = MASK_UPDATE_NONE;
    CHECK(mask_update_frac_at(&c, 50) == 0);
}

// Each matrix keeps round(density * drawn blocks) of its largest, a subset, no row or column empty.
TEST(mask_prune_gradual_counts_and_rows) {
    Model *m = random_model("mlstm", 2);
    Mask drawn[SW_MAX_MASKS], out[SW_MAX_MASKS];
    int n = model_draw_masks(&m->cfg, drawn);
    mask_prune_gradual(m, m->params, drawn, 0.6, out);
    for (int i = 0; i < n; i++) {
        const Mask *mk = mask_of(m, i);
        if (!mk) { CHECK(!out[i].m); continue; }
        CHECK_EQ(mask_count(&out[i]), lround(0.6 * mask_count(&drawn[i])));
        CHECK(rows_and_cols_full(&out[i]));
        double *norm = model_block_norms(m, m->params, i / 4, i % 4), min_kept = INFINITY, max_dropped = 0;
        for (int q = 0; q < mk->nr * mk->nc; q++) {
            CHECK(!out[i].m[q] || mk->m[q]);
            if (out[i].m[q] && !line_best(mk, norm, q)) min_kept = fmin(min_kept, norm[q]);
            else if (mk->m[q] && !out[i].m[q]) max_dropped = fmax(max_dropped, norm[q]);
        }
        free(norm);
        CHECK_MSG(max_dropped <= min_kept, "matrix %d dropped a block larger than one it kept", i);
    }
    Mask again[SW_MAX_MASKS];  // a density the rows cannot meet keeps the best of each row and column
    mask_prune_gradual(m, m->params, drawn, 0.01, again);
    CHECK(mask_count(&again[0]) >= 8 && mask_count(&again[0]) <= 16 && rows_and_cols_full(&again[0]));
    for (int i = 0; i < n; i++) mask_free(&drawn[i]), mask_free(&out[i]), mask_free(&again[i]);
    model_free(m);
}

// A 4 x 4 mask `mk` (16 '0'/'1') whose block (r, c) holds v[r][c] in every entry of each gate
// copy, so that its squared norm is 4 * 64 * v^2.
static Model *hand_model(const char *mk, const double v[4][4]) {
    Config cfg = cfg_for("lstm", 1);
    cfg.hidden_size = 32;
    uint8_t bits[16];
    for (int q = 0; q < 16; q++) bits[q] = mk[q] == '1';
    Mask masks[2] = {{4, 4, bits}, {0, 0, NULL}};
    Model *m = model_create_with_masks(&cfg, backend_cpu(), masks);
    const BsMat *w = &m->layer[0].wh;
    for (int br = 0; br < w->nbr; br++)
        for (int q = w->row_ptr[br]; q < w->row_ptr[br + 1]; q++)
            for (int i = 0; i < 64; i++) m->params[m->layer[0].off_wh + q * 64 + i] = (real)v[br % 4][w->col_idx[q]];
    return m;
}

static int mask_is(const Mask *mk, const char *want) {
    for (int q = 0; q < 16; q++)
        if (mk->m[q] != (want[q] == '1')) return 0;
    return 1;
}

// The smallest blocks go unless they are a row's or column's last; as many blocks that were
// absent come back, those of largest score (the just-dropped (0, 0) scores highest: it stays
// out) among those whose row and column have room under their own length before (2 each
// here, the mask's longest too), then, where those run out, the best of the rest.
TEST(mask_move_regrows_largest_scores) {
    static const double v[4][4] = {{0.1, 1, 0, 0}, {0, 0.2, 2, 0}, {0, 0, 3, 0.05}, {4, 0, 0, 5}};
    double grow[16] = {100, 0, 1, 2, 3, 0, 0, 9, 4, 5, 0, 0, 0, 8, 6, 0};
    double *g[2] = {grow, NULL};
    Model *m = hand_model("1100" "0110" "0011" "1001", v);  // the diagonal band and a corner
    Mask out[2];
    mask_move_blocks(m, m->params, 0.25, g, out);  // drops (2,3) and (0,0); (1,3), (3,1) have no room: (2,0), (0,3)
    CHECK_MSG(mask_is(&out[0], "0101" "0110" "1010" "1001"), "moved 2 blocks the wrong way");
    mask_free(&out[0]);
    mask_move_blocks(m, m->params, 0.5, g, out);  // (1,1) goes too; (1,3), (2,1) have room, then (3,1) over it
    CHECK_MSG(mask_is(&out[0], "0100" "0011" "0110" "1101"), "moved 3 blocks the wrong way");
    CHECK_EQ(mask_count(&out[0]), mask_count(&m->layer[0].mask_h));
    // Regrown blocks start at zero, with zero moments; kept ones keep theirs.
    Model *p = model_remask(m, out);
    real *ones = xmalloc(sizeof(real) * m->nparams), *mv = xmalloc(sizeof(real) * p->nparams);
    for (size_t i = 0; i < m->nparams; i++) ones[i] = 1;
    model_remap_backend(m, ones, p, mv);
    double *wn = model_block_norms(p, p->params, 0, 0), *mn = model_block_norms(p, mv, 0, 0);
    for (int q = 0; q < 16; q++) {
        int r = q / 4, c = q % 4, kept = out[0].m[q] && m->layer[0].mask_h.m[q];
        CHECK_NEAR(wn[q], kept ? 256 * v[r][c] * v[r][c] : 0, 1e-9);
        CHECK_NEAR(mn[q], kept ? 256 : 0, 0);
    }
    CHECK(p->params[p->off_wo + 7] == m->params[m->off_wo + 7]);
    free(wn), free(mn), free(ones), free(mv);
    mask_free(&out[0]);
    model_free(p);
    model_free(m);
}

// Regrowth fills the rows and columns that lost blocks first (their lengths as before), then
// those under the longest row and column, by score: here (3, 2) is the only absent block whose
// row and column both lost one; (1, 3) scores highest but its column is at the longest; (2, 0)
// has room under the longest and beats (1, 2), which the longest alone would have taken next.
TEST(mask_move_keeps_row_and_column_lengths_first) {
    static const double v[4][4] = {{1, 2, 0.05, 0}, {0, 3, 0, 0}, {0, 0, 4, 5}, {0.1, 0, 0, 7}};
    double grow[16] = {0, 0, 0, 0, 10, 0, 20, 100, 50, 0, 0, 0, 0, 0, 1, 0};
    double *g[2] = {grow, NULL};
    Model *m = hand_model("1110" "0100" "0011" "1001", v);
    Mask out[2];
    mask_move_blocks(m, m->params, 0.25, g, out);  // drops (0,2) and (3,0)
    CHECK_MSG(mask_is(&out[0], "1100" "0100" "1011" "0011"), "regrew the wrong blocks");
    mask_free(&out[0]);
    model_free(m);
}

// On a drawn Barabasi-Albert mask (256 x 256 blocks, hubs of up to 68) a 30 % move with SET's
// random scores leaves all but a few rows and columns at their lengths (the sum of their changes
// is 184 blocks), none over the longest.
TEST(mask_move_keeps_a_drawn_masks_profile) {
    Config cfg = cfg_for("lstm", 1);
    cfg.hidden_size = 2048;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_7");
    Model *m = model_create(&cfg, backend_cpu());
    unsigned long long s = 11;
    for (size_t i = 0; i < m->nparams; i++) m->params[i] = (real)(test_rand(&s) - 0.5);
    const Mask *mk = mask_of(m, 0);
    double *g[2] = {mask_random_scores(mk, 1, 100, 0), NULL};
    Mask out[2];
    mask_move_blocks(m, m->params, 0.3, g, out);
    long moved = 0, off = 0;
    int longest[2][2] = {{0, 0}, {0, 0}};
    for (int r = 0; r < mk->nr; r++) {
        int len[2][2] = {{0, 0}, {0, 0}};  // [row, column][before, after]
        for (int c = 0; c < mk->nc; c++) {
            len[0][0] += mk->m[r * mk->nc + c], len[0][1] += out[0].m[r * mk->nc + c];
            len[1][0] += mk->m[c * mk->nc + r], len[1][1] += out[0].m[c * mk->nc + r];
            moved += mk->m[r * mk->nc + c] && !out[0].m[r * mk->nc + c];
        }
        for (int k = 0; k < 2; k++) {
            off += abs(len[k][1] - len[k][0]);
            for (int w = 0; w < 2; w++) longest[k][w] = len[k][w] > longest[k][w] ? len[k][w] : longest[k][w];
        }
    }
    CHECK_EQ(mask_count(&out[0]), mask_count(mk));
    CHECK(moved >= 1000);
    CHECK_MSG(off <= moved / 5, "rows and columns %ld blocks off their lengths, %ld blocks moved", off, moved);  // longest-only rule: 1,570
    CHECK(longest[0][1] <= longest[0][0] && longest[1][1] <= longest[1][0]);
    free(g[0]);
    mask_free(&out[0]);
    model_free(m);
}

// RigL's scores (model_grow_scores, from the sparse model's operands) are the block norms of
// the gradient of the model on full masks whose absent blocks are zero: at the present blocks
// the sparse gradient's, elsewhere not zero. An LSTM (W_h, and W_x above layer 0) and an mLSTM
// (the gates' and each internal step's masks).
static void check_grow_scores(const char *cell) {
    Model *m = random_model(cell, 2);
    int per = 2 + m->D, n = per * m->L, B = 3, T = 5, tok[15], tgt[15];
    Mask full[SW_MAX_MASKS];
    for (int i = 0; i < n; i++) full[i] = mask_of(m, i) ? mask_make("dense", 8, 8, 0) : (Mask){0, 0, NULL};
    Model *d = model_remask(m, full);
    for (int i = 0; i < B * T; i++) tok[i] = (i * 37) % 256, tgt[i] = (i * 91 + 5) % 256;
    Acts *am = acts_create(m, B, T), *ad = acts_create(d, B, T);
    double lm = model_forward(m, am, tok, tgt, T), ld = model_forward(d, ad, tok, tgt, T);
    model_backward(m, am, T);
    model_backward(d, ad, T);
    CHECK_NEAR(ld, lm, 1e-6 * lm);
    double *score[SW_MAX_MASKS];
    model_grow_scores(m, am, NULL, score);
    for (int i = 0; i < n; i++) {
        CHECK(!score[i] == !full[i].m);
        if (!full[i].m) continue;
        double *gs = model_block_norms(m, m->grads, i / per, i % per), *gd = model_block_norms(d, d->grads, i / per, i % per), absent = 0;
        const Mask *mk = mask_of(m, i);
        for (int q = 0; q < 64; q++) {
            CHECK_NEAR(score[i][q], gd[q], 1e-4 * gd[q] + 1e-12);
            if (mk->m[q]) CHECK_NEAR(gd[q], gs[q], 1e-4 * gs[q] + 1e-12);
            else absent += gd[q];
        }
        free(gs), free(gd), free(score[i]);
        CHECK_MSG(absent > 0, "%s matrix %d: no gradient at its absent blocks", cell, i);
    }
    for (int i = 0; i < n; i++) mask_free(&full[i]);
    acts_free(m, am), acts_free(d, ad);
    model_free(d), model_free(m);
}

TEST(mask_grow_scores_are_the_full_gradients_block_norms) {
    check_grow_scores("lstm");
    check_grow_scores("mlstm");
}

static const char *train_cfg(const char *name, const char *extra) {
    static char path[512];
    const char *data = tmp_path("mu.txt");
    char *buf = malloc(20000), text[2048];
    for (int i = 0; i < 20000; i++) buf[i] = "the cat sat on a mat\n"[i % 21] + (i / 997) % 3;
    write_file(data, buf, 20000);
    free(buf);
    snprintf(path, sizeof path, "%s", tmp_path(name));
    int n = snprintf(text, sizeof text,
                     "data = %s\nsplit = 0.8,0.1,0.1\nhidden_size = 48\nembed_size = 8\nblock_size = 8\n"
                     "num_layers = 2\nsparsity = ba_2\nbatch_size = 4\nseq_length = 12\nmax_steps = 9\n"
                     "learning_rate = 1e-2\nlog_every = 1\neval_every = 0\nthreads = 1\n%s", data, extra);
    write_file(path, text, (size_t)n);
    return path;
}

// Training straight to step 9, or stopped at step 3 (whose checkpoint holds the masks before
// the update after it) and resumed, gives the same bits: weights, moments, masks.
static void resume_across_updates(const char *cfg, const char *tag, const char *expect) {
    char log[16384], a[512], b[512], args[2048], pa[600], pb[600];
    snprintf(a, sizeof a, "%s-a", tmp_path(tag));
    snprintf(b, sizeof b, "%s-b", tmp_path(tag));
    snprintf(args, sizeof args, "train %s --out_dir %s", cfg, a);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, expect), "no '%s' in:\n%s", expect, log);
    snprintf(args, sizeof args, "train %s --out_dir %s --stop-after 3", cfg, b);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    snprintf(pb, sizeof pb, "%s/latest.ckpt", b);
    snprintf(args, sizeof args, "train %s --out_dir %s --resume %s", cfg, b, pb);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, expect), "no '%s' after resuming:\n%s", expect, log);
    snprintf(pa, sizeof pa, "%s/latest.ckpt", a);
    CHECK(ckpt_same_section(pa, pb, "masks") && ckpt_same_section(pa, pb, "params"));
    CHECK(ckpt_same_section(pa, pb, "adam_m") && ckpt_same_section(pa, pb, "adam_v") && ckpt_same_section(pa, pb, "hidden"));
    snprintf(args, sizeof args, "info %s", pa);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "differs from the mask its config draws"), "%s", log);
    snprintf(args, sizeof args, "mask --ckpt %s --layer 1 --json", pa);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "\"mask\":{\"sparsity\":\"checkpoint\"") && strstr(log, "\"drawn_reach\":["), "%s", log);
    snprintf(args, sizeof args, "mask --ckpt %s --layer 2", pa);
    CHECK(run_swlstm(args, log, sizeof log) != 0);
    CHECK_MSG(strstr(log, "mask: --layer 2: checkpoint") && strstr(log, "has 2 layer(s)"), "%s", log);
}

TEST(mask_update_set_resumes_bit_exactly) {
    resume_across_updates(train_cfg("set.cfg", "mask_update = set\nmask_update_every = 3\nmask_update_frac = 0.4\nmask_update_end = 9\n"),
                          "set", "step 6: mask update (set) moved");
}

TEST(mask_update_rigl_and_pruning_resume_bit_exactly) {
    resume_across_updates(train_cfg("rigl.cfg", "cell = mlstm\nmask_update = rigl\nmask_update_every = 3\nmask_update_end = 9\n"
                                                "prune_to = 0.5\nprune_start = 2\nprune_end = 6\nprune_every = 2\nema = 0.9\n"),
                          "rigl", "step 6: pruned to 50.0% of the drawn blocks");
}
// Pruning in training moves what `swlstm prune` moves: a run that prunes to 70% after step 3
// ends with the bits of one stopped at step 3, pruned by the verb and resumed (weights, moving
// average, moments, and the carried state, which the rebuilt windows must keep).
TEST(mask_prune_in_training_matches_the_prune_verb) {
    const char *cfg = train_cfg("p.cfg", "prune_to = 0.7\nprune_start = 2\nprune_end = 3\nprune_every = 1\nema = 0.9\n");
    char log[16384], a[512], b[512], c[512], args[2048], ca[600], cb[600], pruned[600];
    snprintf(a, sizeof a, "%s", tmp_path("pv-a"));
    snprintf(b, sizeof b, "%s", tmp_path("pv-b"));
    snprintf(c, sizeof c, "%s", tmp_path("pv-c"));  // the pruned model's run: b holds the unpruned one
    snprintf(args, sizeof args, "train %s --out_dir %s", cfg, a);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "step 3: pruned to 70.0%"), "%s", log);
    snprintf(args, sizeof args, "train %s --out_dir %s --stop-after 3", cfg, b);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    snprintf(cb, sizeof cb, "%s/latest.ckpt", b);
    snprintf(pruned, sizeof pruned, "%s/pruned.ckpt", b);
    snprintf(args, sizeof args, "prune %s --density 0.7 --out %s", cb, pruned);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    snprintf(args, sizeof args, "train %s --out_dir %s --resume %s", cfg, c, pruned);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(!strstr(log, "pruned to"), "the resumed run pruned again:\n%s", log);
    snprintf(ca, sizeof ca, "%s/latest.ckpt", a);
    snprintf(cb, sizeof cb, "%s/latest.ckpt", c);
    CHECK(ckpt_same_section(ca, cb, "masks") && ckpt_same_section(ca, cb, "params") && ckpt_same_section(ca, cb, "ema"));
    CHECK(ckpt_same_section(ca, cb, "adam_m") && ckpt_same_section(ca, cb, "adam_v") && ckpt_same_section(ca, cb, "hidden"));
}

#endif
