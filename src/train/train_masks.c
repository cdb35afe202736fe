// train_masks.c: masks that change while training runs (gradual pruning, SET, RigL; the
// config's prune_* and mask_update* keys, model/mask_update.h). Before the step after each
// step their schedules name, the new masks are computed from the weights (and, for RigL, a
// full gradient of this window), and the trainer's model, Adam moments and windows are
// rebuilt on them. Every rank computes the same masks from the same weights, summed
// gradients and seed; a checkpoint holds the masks of its step, so a resumed run redoes the
// same update at the same step.
#include <stdlib.h>
#include <string.h>
#include "model/mask_update.h"
#include "model/prune.h"
#include "train/trainer.h"

static int nmasks(const Model *m) { return (2 + m->D) * m->L; }

// Mask i of m in model_create_with_masks's order, NULL where m has none.
static const Mask *mask_i(const Model *m, int i) { return model_layer_mask(m, i / (2 + m->D), i % (2 + m->D), NULL, NULL); }

static void free_masks(Mask *masks, int n) {
    for (int i = 0; i < n; i++) mask_free(&masks[i]);
}

static real *host_copy(const Model *m, const real *src) {
    real *h = xmalloc(sizeof(real) * m->nparams);
    m->be->to_host(h, src, sizeof(real) * m->nparams);
    return h;
}

// A window of a's rows and steps for m, holding a's carried state.
static Acts *acts_with_state(const Model *m, const Acts *a) {
    Acts *n = acts_create(m, a->B, a->T);
    size_t bytes = (size_t)a->B * m->H * sizeof(real);
    for (int l = 0; l < m->L; l++) {
        m->be->copy(n->h[l], a->h[l], bytes);
        m->be->copy(n->c[l], a->c[l], bytes);
    }
    return n;
}

static Acts *acts_moved(const Model *m, const Model *old, Acts *a) {
    Acts *n = acts_with_state(m, a);
    acts_free(old, a);
    return n;
}

static real *moment_moved(const Model *old, real *v, const Model *m) {
    real *n = m->be->alloc(sizeof(real) * m->nparams);
    model_remap_backend(old, v, m, n);
    old->be->free(v);
    return n;
}

// The trainer on new masks: weights, moving average and Adam moments of the blocks that stay,
// zero for the new ones. Whatever the backend planned for the old masks goes with the old
// model and windows (block indices, the engine's lists and graphs, replayed windows, the bf16
// shadow) and is made anew for the new ones.
static void rebuild(Trainer *tr, const Mask *masks) {
    Model *old = tr->m, *m = model_remask(old, masks);
    dist_trainer_free(tr);
    tr->adam_m = moment_moved(old, tr->adam_m, m);
    tr->adam_v = moment_moved(old, tr->adam_v, m);
    tr->a = acts_moved(m, old, tr->a);
    if (tr->ea) tr->ea = acts_moved(m, old, tr->ea);
    if (tr->raw) {
        old->be->free(tr->raw);
        tr->raw = m->be->alloc(sizeof(real) * m->nparams);
    }
    model_free(old);
    tr->m = m;
    dist_trainer_setup(tr);
}

// Blocks of the new masks that the model's lack (as many as left, for a move).
static long blocks_new(const Model *m, const Mask *masks) {
    long n = 0;
    for (int i = 0; i < nmasks(m); i++) {
        const Mask *mk = mask_i(m, i);
        for (size_t q = 0; mk && q < (size_t)mk->nr * mk->nc; q++) n += masks[i].m[q] && !mk->m[q];
    }
    return n;
}

// Blocks of all masks: the model's, or those given.
static long blocks_of(const Model *m, const Mask *masks) {
    long b = 0;
    for (int i = 0; i < nmasks(m); i++) {
        const Mask *mk = masks ? &masks[i] : mask_i(m, i);
        b += mk && mk->m ? mask_count(mk) : 0;
    }
    return b;
}

// RigL's grow scores: block norms of this window's gradient for the model on full masks, whose
// absent blocks hold zero: the gradient at every block of the current model, present or not.
static void full_grad_norms(Trainer *tr, double **grow) {
    Model *m = tr->m;
    Mask full[SW_MAX_MASKS];
    for (int i = 0; i < nmasks(m); i++) {
        const Mask *mk = mask_i(m, i);
        full[i] = mk ? mask_make("dense", mk->nr, mk->nc, 0) : (Mask){0, 0, NULL};
    }
    Config cfg = m->cfg;
    cfg.ema = 0;  // the full model is run once: no moving average
    Model *d = model_create_blank(&cfg, m->be, full);
    model_remap_backend(m, m->params, d, d->params);
    Acts *da = acts_with_state(d, tr->a);
    d->be->zero(d->grads, sizeof(real) * d->nparams);
    model_forward(d, da, tr->tok, tr->tgt, tr->cfg.seq_length);
    model_backward(d, da, tr->cfg.seq_length);
    if (tr->world > 1) {
        dist_allreduce_sum(d->grads, d->nparams);
        dist_wait("the full gradient of a mask update");
    }
    real *g = host_copy(d, d->grads);
    for (int i = 0; i < nmasks(m); i++)
        grow[i] = full[i].m ? model_block_norms(d, g, i / (2 + m->D), i % (2 + m->D)) : NULL;
    free(g);
    free_masks(full, nmasks(m));
    acts_free(d, da);
    model_free(d);
    m->be->register_params(m->params, m->nparams);  // d's parameters took their place
}

static void prune(Trainer *tr, long t) {
    Model *m = tr->m;
    Mask drawn[SW_MAX_MASKS], out[SW_MAX_MASKS];
    int n = model_draw_masks(&tr->cfg, drawn);
    real *p = host_copy(m, m->params);
    double density = prune_density_at(&tr->cfg, t);
    mask_prune_gradual(m, p, drawn, density, out);
    free(p);
    long had = blocks_of(m, NULL), have = blocks_of(m, out);
    if (have < had) {  // pruning only drops blocks: the same count is the same masks
        rebuild(tr, out);
        if (tr->rank == 0)
            printf("step %ld: pruned to %.1f%% of the drawn blocks: %ld of %ld blocks kept, %zu parameters\n", t,
                   100 * density, have, had, tr->m->nparams);
    }
    free_masks(drawn, n);
    free_masks(out, n);
}

// SET or RigL: drop the smallest blocks, regrow as many at random or where the gradient is largest.
static void move(Trainer *tr, long t, double frac) {
    Model *m = tr->m;
    int n = nmasks(m), rigl = !strcmp(tr->cfg.mask_update, "rigl");
    double *grow[SW_MAX_MASKS];
    Mask out[SW_MAX_MASKS];
    if (rigl) full_grad_norms(tr, grow);
    for (int i = 0; i < n && !rigl; i++) {
        const Mask *mk = mask_i(m, i);
        grow[i] = mk ? mask_random_scores(mk, tr->cfg.seed, t, i) : NULL;
    }
    real *p = host_copy(m, m->params);
    mask_move_blocks(m, p, frac, grow, out);
    free(p);
    long moved = blocks_new(m, out);
    if (moved) rebuild(tr, out);
    if (tr->rank == 0)
        printf("step %ld: mask update (%s) moved %ld of %ld blocks (%.2f%%)\n", t, tr->cfg.mask_update, moved,
               blocks_of(tr->m, NULL), 100.0 * moved / (double)blocks_of(tr->m, NULL));
    for (int i = 0; i < n; i++) free(grow[i]);
    free_masks(out, n);
}

void train_masks_update(Trainer *tr) {
    long t = tr->ts.step;
    if (t == tr->masks_step) return;  // the step is retried after a skipped non-finite one
    tr->masks_step = t;
    if (prune_due(&tr->cfg, t)) prune(tr, t);
    double frac = mask_update_frac_at(&tr->cfg, t);
    if (frac > 0) move(tr, t, frac);
}
