// train_masks.c: masks that change while training runs (gradual pruning, SET, RigL; the
// config's prune_* and mask_update* keys, model/mask_update.h). Before the step after each
// step their schedules name, the new masks are computed from the weights (and, for RigL, the
// block norms of this window's dense gradients, model/grow_scores.h), and the trainer's
// model, Adam moments and windows are rebuilt on them. Every rank computes the same masks
// from the same weights, summed gradients and seed; a checkpoint holds the masks of its step,
// so a resumed run redoes the same update at the same step.
#include <stdlib.h>
#include <string.h>
#include "model/grow_scores.h"
#include "model/mask_update.h"
#include "model/remask.h"
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

static real *moment_moved(const Model *old, real *v, const Model *m) {
    real *n = m->be->alloc(sizeof(real) * m->nparams);
    model_remap_backend(old, v, m, n);
    old->be->free(v);
    return n;
}

// The trainer on new masks: weights, moving average and Adam moments of the blocks that stay,
// zero for the new ones, moved on the backend. Whatever the backend planned for the old masks
// goes with the old model (block indices, the bf16 shadow); the windows keep their buffers and
// carried state and make their plans anew (acts_remask: the engine's lists and graphs, the
// mlstm's recorded windows).
static void rebuild(Trainer *tr, const Mask *masks) {
    Model *old = tr->m, *m = model_remask(old, masks);
    dist_trainer_free(tr);
    tr->adam_m = moment_moved(old, tr->adam_m, m);
    tr->adam_v = moment_moved(old, tr->adam_v, m);
    acts_remask(old, m, tr->a);
    if (tr->ea) acts_remask(old, m, tr->ea);
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

static void rank_sum(real *buf, size_t n) {
    dist_allreduce_sum(buf, n);
    dist_wait("RigL's gradient scores");
}

// RigL's grow scores: a forward and backward of this window on the current model (the carried
// state stays, the forward writes the later steps only; the step zeroes the gradients after),
// then each matrix's dense gradient from its operands, summed over ranks.
static void grow_scores(Trainer *tr, double **grow) {
    Model *m = tr->m;
    void (*ready)(void *, size_t) = m->grads_ready;
    m->grads_ready = NULL;  // the step's bucketed all-reduce is not wanted: the scores sum their own
    m->be->zero(m->grads, sizeof(real) * m->nparams);
    model_forward(m, tr->a, tr->tok, tr->tgt, tr->cfg.seq_length);
    model_backward(m, tr->a, tr->cfg.seq_length);
    m->grads_ready = ready;
    model_grow_scores(m, tr->a, tr->world > 1 ? rank_sum : NULL, grow);
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
    int n = nmasks(m), rigl = tr->cfg.mask_update == MASK_UPDATE_RIGL;
    double *grow[SW_MAX_MASKS], t0 = now_sec();
    Mask out[SW_MAX_MASKS];
    if (rigl) grow_scores(tr, grow);
    double scored = now_sec() - t0;
    for (int i = 0; i < n && !rigl; i++) {
        const Mask *mk = mask_i(m, i);
        grow[i] = mk ? mask_random_scores(mk, tr->cfg.seed, t, i) : NULL;
    }
    real *p = host_copy(m, m->params);
    mask_move_blocks(m, p, frac, grow, out);
    free(p);
    long moved = blocks_new(m, out);
    if (moved) rebuild(tr, out);
    tr->m->be->sync();
    if (tr->rank == 0)
        printf("step %ld: mask update (%s) moved %ld of %ld blocks (%.2f%%) in %.2f s (scores %.2f s)\n", t,
               CFG_NAME(&tr->cfg, mask_update), moved, blocks_of(tr->m, NULL), 100.0 * moved / (double)blocks_of(tr->m, NULL),
               now_sec() - t0, scored);
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
