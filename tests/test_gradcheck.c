// test_gradcheck.c: finite-difference check of the whole model's gradient (double build):
// every parameter tensor and the carried state h_0, c_0 of every layer, for dense, random,
// ba and ws masks and block sizes 8, 16 and 32, with and without layer norm; and the same for
// the mlstm cell at depths 2, 3 and 4 (identity init and EMA weights in some).
#ifdef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include "model/model.h"
#include "model/mask_update.h"
#include "model/prune.h"
#include "test.h"

typedef struct {
    Model *m;
    Acts *a;
    int *tok, *tgt;
} Fixture;

static Config small_config(int H, int bs, int L, const char *sparsity, int ln) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = H;
    cfg.block_size = bs;
    cfg.num_layers = L;
    cfg.embed_size = 5;
    cfg.layer_norm = ln;
    cfg.seed = 7;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "%s", sparsity);
    return cfg;
}

enum { DRAWN, PRUNED, MOVED };

// The model of cfg on its drawn masks, or on the masks that prune.c cuts to half their blocks
// (PRUNED), or that a mask update gives (MOVED: a third of the blocks dropped, as many
// regrown at random, mask_update.c).
static Model *create(const Config *cfg, int how) {
    Model *m = model_create(cfg, backend_cpu());
    if (how == DRAWN) return m;
    Mask masks[SW_MAX_MASKS];
    double *grow[SW_MAX_MASKS] = {0};
    int n = (2 + m->D) * m->L;
    for (int i = 0; i < n && how == MOVED; i++) {
        const Mask *mk = model_layer_mask(m, i / (2 + m->D), i % (2 + m->D), NULL, NULL);
        grow[i] = mk ? mask_random_scores(mk, 6, 100, i) : NULL;
    }
    if (how == PRUNED) model_prune_masks(m, m->params, 0.5, masks);
    else mask_move_blocks(m, m->params, 1.0 / 3, grow, masks);
    Model *p = model_create_with_masks(cfg, backend_cpu(), masks);
    for (int i = 0; i < n; i++) mask_free(&masks[i]), free(grow[i]);
    model_free(m);
    return p;
}

static Fixture fixture(const Config *cfg, int B, int T, int how) {
    int H = cfg->hidden_size, L = cfg->num_layers;
    Fixture f = {create(cfg, how), NULL, xmalloc(sizeof(int) * B * T), xmalloc(sizeof(int) * B * T)};
    f.a = acts_create(f.m, B, T);
    unsigned long long s = 99;
    for (int i = 0; i < B * T; i++) {
        f.tok[i] = (int)(test_rand(&s) * 256);
        f.tgt[i] = (int)(test_rand(&s) * 256);
    }
    // A random carried state, so that its gradient is exercised from a non-zero point.
    for (int l = 0; l < L; l++)
        for (int i = 0; i < B * H; i++) {
            f.a->h[l][i] = 0.5 * (2 * test_rand(&s) - 1);
            f.a->c[l][i] = 2 * test_rand(&s) - 1;
        }
    return f;
}

static void fixture_free(Fixture *f) {
    acts_free(f->m, f->a);
    model_free(f->m);
    free(f->tok);
    free(f->tgt);
}

static double loss_at(Fixture *f) { return model_forward(f->m, f->a, f->tok, f->tgt, f->a->T); }

// Central difference of the loss w.r.t. *x.
static double numeric(Fixture *f, real *x) {
    const double eps = 1e-5;  // balances truncation (eps^2) against roundoff (1e-16/eps)
    real keep = *x;
    *x = keep + eps;
    double lp = loss_at(f);
    *x = keep - eps;
    double lm = loss_at(f);
    *x = keep;
    return (lp - lm) / (2 * eps);
}

static double rel_err(double a, double b) { return fabs(a - b) / fmax(1e-7, fabs(a) + fabs(b)); }

// Checks up to `samples` entries of x (evenly spread) against the analytic gradient g.
static int check_entries(Fixture *f, const char *name, real *x, const real *g, size_t n, int samples) {
    size_t stride = n > (size_t)samples ? n / samples : 1;
    for (size_t i = 0; i < n; i += stride) {
        double num = numeric(f, x + i);
        if (rel_err(g[i], num) > 1e-5 && fabs(g[i] - num) > 1e-9) {
            test_fail(__FILE__, __LINE__, "%s[%zu]: analytic %.10g, numeric %.10g", name, i, (double)g[i], num);
            return 0;
        }
    }
    return 1;
}

static void check_config(const Config *cfg, int how) {
    Fixture f = fixture(cfg, 3, 4, how);
    Model *m = f.m;
    int H = m->H, L = m->L;
    size_t BH = (size_t)f.a->B * H;
    real *dh0 = xmalloc(sizeof(real) * L * BH), *dc0 = xmalloc(sizeof(real) * L * BH);
    memset(m->grads, 0, m->nparams * sizeof(real));
    loss_at(&f);
    model_backward(m, f.a, f.a->T);
    for (int l = 0; l < L; l++) {
        memcpy(dh0 + l * BH, f.a->dh[l], BH * sizeof(real));
        memcpy(dc0 + l * BH, f.a->dc[l], BH * sizeof(real));
    }
    int ok = 1;
    for (int i = 0; ok && i < m->ntensor; i++)
        ok = check_entries(&f, m->tensor[i].name, m->params + m->tensor[i].off, m->grads + m->tensor[i].off, m->tensor[i].n, 40);
    for (int l = 0; ok && l < L; l++) {
        ok = check_entries(&f, "h0", f.a->h[l], dh0 + l * BH, BH, 24);
        ok = ok && check_entries(&f, "c0", f.a->c[l], dc0 + l * BH, BH, 24);
    }
    free(dh0);
    free(dc0);
    fixture_free(&f);
}

static void run_check(int H, int bs, int L, const char *sparsity, int ln) {
    Config cfg = small_config(H, bs, L, sparsity, ln);
    check_config(&cfg, DRAWN);
}

static void run_mlstm(int H, int bs, int L, const char *sparsity, int depth, const char *init, double ema) {
    Config cfg = small_config(H, bs, L, sparsity, 0);
    cfg.cell = CELL_MLSTM;
    cfg.init = config_parse_choice("init", init, "test");
    cfg.depth = depth;
    cfg.ema = ema;
    check_config(&cfg, DRAWN);
}

// Masks that prune.c cut (no longer a drawn layout): the mlstm, two layers, and the LSTM with
// a block-sparse W_x above layer 0.
TEST(gradcheck_pruned_masks) {
    Config cfg = small_config(64, 8, 2, "ba_3", 1);
    check_config(&cfg, PRUNED);
    cfg.cell = CELL_MLSTM;
    cfg.depth = 2;
    check_config(&cfg, PRUNED);
}

// Masks after a mask update (SET's random regrowth): the LSTM with a block-sparse W_x, the mlstm.
TEST(gradcheck_moved_masks) {
    Config cfg = small_config(64, 8, 2, "ba_3", 1);
    check_config(&cfg, MOVED);
    cfg.cell = CELL_MLSTM;
    cfg.depth = 2;
    check_config(&cfg, MOVED);
}

TEST(gradcheck_dense_bs8_two_layers) { run_check(16, 8, 2, "dense", 0); }
TEST(gradcheck_ba_bs8_layernorm) { run_check(48, 8, 2, "ba_2", 1); }
TEST(gradcheck_ws_bs16) { run_check(64, 16, 2, "ws_2_0.5", 0); }
TEST(gradcheck_random_bs32_layernorm) { run_check(96, 32, 2, "random_0.4", 1); }
TEST(gradcheck_ba_bs16_one_layer) { run_check(64, 16, 1, "ba_1", 0); }
TEST(gradcheck_mlstm_dense_d2_bs8_two_layers) { run_mlstm(16, 8, 2, "dense", 2, "uniform", 0); }
TEST(gradcheck_mlstm_ba_d3_bs16_identity_ema) { run_mlstm(64, 16, 1, "ba_1", 3, "identity", 0.999); }
TEST(gradcheck_mlstm_ws_d4_bs8_two_layers) { run_mlstm(48, 8, 2, "ws_2_0.5", 4, "uniform", 0.999); }
TEST(gradcheck_mlstm_random_d4_bs32) { run_mlstm(96, 32, 1, "random_0.4", 4, "identity", 0); }
TEST(gradcheck_mlstm_ba_d2_bs16_uniform) { run_mlstm(64, 16, 2, "ba_2", 2, "uniform", 0); }
#endif
