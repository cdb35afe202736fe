// mask_update.c: schedules and new masks of gradual pruning and of SET/RigL (mask_update.h).
#include "model/mask_update.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/rng.h"
#include "model/prune.h"

double prune_density_at(const Config *cfg, long t) {
    if (t <= cfg->prune_start) return 1;
    if (t >= cfg->prune_end) return cfg->prune_to;
    double x = 1 - (double)(t - cfg->prune_start) / (double)(cfg->prune_end - cfg->prune_start);
    return cfg->prune_to + (1 - cfg->prune_to) * x * x * x;
}

int prune_due(const Config *cfg, long t) {
    if (cfg->prune_to >= 1 || t < cfg->prune_start || t > cfg->prune_end) return 0;
    return (t - cfg->prune_start) % cfg->prune_every == 0 || t == cfg->prune_end;
}

long mask_update_end(const Config *cfg) {
    return cfg->mask_update_end ? cfg->mask_update_end : 3 * cfg->max_steps / 4;
}

double mask_update_frac_at(const Config *cfg, long t) {
    long end = mask_update_end(cfg);
    if (cfg->mask_update == MASK_UPDATE_NONE || t <= 0 || t % cfg->mask_update_every || t >= end) return 0;
    return cfg->mask_update_frac * 0.5 * (1 + cos(M_PI * (double)t / (double)end));
}

// out[i] = next(mask i of m, its block norms from params, i, arg) for every matrix of m, an
// empty mask where m has none.
typedef Mask (*NextMask)(const Mask *mk, const double *norm, int i, const void *arg);

static void each_matrix(const Model *m, const real *params, NextMask next, const void *arg, Mask *out) {
    int per = 2 + m->D;
    for (int i = 0; i < per * m->L; i++) {
        const Mask *mk = model_layer_mask(m, i / per, i % per, NULL, NULL);
        if (!mk) { out[i] = (Mask){0, 0, NULL}; continue; }
        double *norm = model_block_norms(m, params, i / per, i % per);
        out[i] = next(mk, norm, i, arg);
        free(norm);
    }
}

typedef struct { const Mask *drawn; double density; } PruneArg;

static Mask pruned(const Mask *mk, const double *norm, int i, const void *arg) {
    const PruneArg *p = arg;
    long want = lround(p->density * (double)mask_count(&p->drawn[i])), have = mask_count(mk), floor;
    return mask_keep_largest(mk, norm, want < have ? want : have, &floor);
}

void mask_prune_gradual(const Model *m, const real *params, const Mask *drawn, double density, Mask *out) {
    PruneArg p = {drawn, density};
    each_matrix(m, params, pruned, &p, out);
}

static int most(const int *v, int n) {
    int m = 0;
    for (int i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

// Whether a row or column with `has` blocks takes a regrown one in pass `pass`: 0, up to its
// count before the update (`before`: the mask's row and column lengths stay as they were, so
// its products balance as before); 1, up to the longest before (`cap`: the block-sparse
// products wait on their longest row, and the backward's on their longest column); 2, always.
static int room(int pass, int has, int before, int cap) {
    return pass == 2 || has < (pass == 0 ? before : cap);
}

// mk with its `want` smallest blocks dropped (sparing each row's and column's last) and as
// many of its absent blocks of largest grow score added, in room's passes.
static Mask move_blocks(const Mask *mk, const double *norm, const double *grow, long want) {
    size_t n = (size_t)mk->nr * mk->nc;
    Mask out = {mk->nr, mk->nc, memcpy(xmalloc(n + 1), mk->m, n)};
    int nrc = mk->nr + mk->nc, *row = xcalloc(2 * (size_t)nrc, sizeof(int)), *col = row + mk->nr, *before = row + nrc;
    for (size_t i = 0; i < n; i++) row[i / mk->nc] += mk->m[i], col[i % mk->nc] += mk->m[i];
    memcpy(before, row, sizeof(int) * (size_t)nrc);
    const int row_cap = most(row, mk->nr), col_cap = most(col, mk->nc);
    long cnt, nabs, dropped = 0, grown = 0;
    long *kept = mask_order(mk, norm, 1, &cnt), *lacked = mask_order(mk, grow, 0, &nabs);
    for (long q = cnt - 1; q >= 0 && dropped < want && dropped < nabs; q--) {
        long i = kept[q];
        int r = (int)(i / mk->nc), c = (int)(i % mk->nc);
        if (row[r] == 1 || col[c] == 1) continue;
        out.m[i] = 0, row[r]--, col[c]--, dropped++;
    }
    for (int pass = 0; pass < 3; pass++)
        for (long q = 0; q < nabs && grown < dropped; q++) {
            long i = lacked[q];
            int r = (int)(i / mk->nc), c = (int)(i % mk->nc);
            if (out.m[i] || !room(pass, row[r], before[r], row_cap) || !room(pass, col[c], before[mk->nr + c], col_cap)) continue;
            out.m[i] = 1, row[r]++, col[c]++, grown++;
        }
    free(kept);
    free(lacked);
    free(row);
    return out;
}

typedef struct { double frac; double *const *grow; } MoveArg;

static Mask moved(const Mask *mk, const double *norm, int i, const void *arg) {
    const MoveArg *a = arg;
    return move_blocks(mk, norm, a->grow[i], lround(a->frac * (double)mask_count(mk)));
}

void mask_move_blocks(const Model *m, const real *params, double frac, double *const *grow, Mask *out) {
    MoveArg a = {frac, grow};
    each_matrix(m, params, moved, &a, out);
}

double *mask_random_scores(const Mask *mk, long seed, long t, int i) {
    size_t n = (size_t)mk->nr * mk->nc;
    double *s = xmalloc(sizeof(double) * (n + 1));
    Rng r;
    rng_seed(&r, (uint64_t)seed ^ 0x5e7b10c5ULL ^ ((uint64_t)t << 8) ^ (uint64_t)i);
    for (size_t q = 0; q < n; q++) s[q] = rng_uniform(&r);
    return s;
}
