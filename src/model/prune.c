// prune.c: block pruning by norm (prune.h).
#include "model/prune.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *model_mask_name(const Model *m, int l, int k) {
    size_t off;
    const BsMat *w;
    model_layer_mask(m, l, k, &w, &off);
    for (int t = 0; t < m->ntensor; t++)
        if (m->tensor[t].off == off) return m->tensor[t].name;
    return "?";
}

double *model_block_norms(const Model *m, const real *vals, int l, int k) {
    const BsMat *w;
    size_t off;
    const Mask *mk = model_layer_mask(m, l, k, &w, &off);
    double *norm = xcalloc((size_t)mk->nr * mk->nc, sizeof(double));
    long bb = (long)w->bs * w->bs;
    vals += off;
    // Row r of every gate copy in one thread: every mask update takes the norms of all the weights.
#pragma omp parallel for schedule(dynamic, 1)
    for (int r = 0; r < mk->nr; r++)
        for (int br = r; br < w->nbr; br += mk->nr)
            for (int q = w->row_ptr[br]; q < w->row_ptr[br + 1]; q++) {
                double s = 0;
                for (long i = 0; i < bb; i++) s += (double)vals[q * bb + i] * vals[q * bb + i];
                norm[(size_t)r * mk->nc + w->col_idx[q]] += s;
            }
    return norm;
}

static _Thread_local const double *g_score;  // qsort's key (rank threads sort at once)
static int larger_first(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    if (g_score[x] != g_score[y]) return g_score[x] > g_score[y] ? -1 : 1;
    return x < y ? -1 : 1;
}

long *mask_order(const Mask *mk, const double *score, int present, long *cnt) {
    size_t n = (size_t)mk->nr * mk->nc;
    long *order = xmalloc(sizeof(long) * (n + 1));
    *cnt = 0;
    for (size_t i = 0; i < n; i++)
        if (!mk->m[i] == !present) order[(*cnt)++] = (long)i;
    g_score = score;
    qsort(order, (size_t)*cnt, sizeof(long), larger_first);
    return order;
}

// Marks in keep[] the largest present block of each row (by == 1) or column (by == 0).
static void keep_best_of_lines(const Mask *mk, const double *norm, int by_row, uint8_t *keep) {
    int lines = by_row ? mk->nr : mk->nc, len = by_row ? mk->nc : mk->nr;
    for (int a = 0; a < lines; a++) {
        long best = -1;
        for (int b = 0; b < len; b++) {
            long i = by_row ? (long)a * mk->nc + b : (long)b * mk->nc + a;
            if (mk->m[i] && (best < 0 || norm[i] > norm[best])) best = i;
        }
        if (best >= 0) keep[best] = 1;
    }
}

// Rows to columns: a maximum matching over the present blocks (Kuhn's augmenting paths).
typedef struct {
    int *adj_ptr, *adj;          // each row's columns, largest block first
    int *col_of, *row_of;        // the match of each row and column, -1 if none
    int *seen, stamp;            // columns visited by this search
} Matching;

static int augment(Matching *g, int r) {
    for (int q = g->adj_ptr[r]; q < g->adj_ptr[r + 1]; q++) {
        int c = g->adj[q];
        if (g->seen[c] == g->stamp) continue;
        g->seen[c] = g->stamp;
        if (g->row_of[c] < 0 || augment(g, g->row_of[c])) {
            g->col_of[r] = c, g->row_of[c] = r;
            return 1;
        }
    }
    return 0;
}

// Marks in keep[] the fewest blocks of mk that leave no row or column empty: a maximum
// matching of rows to columns (taken largest block first, then grown by augmenting paths),
// and the largest block of each row and column it leaves unmatched.
// order: mk's cnt blocks, largest first (mask_order).
static void keep_cover(const Mask *mk, const long *order, long cnt, uint8_t *keep) {
    int nr = mk->nr, nc = mk->nc;
    Matching g = {xcalloc((size_t)nr + 1, sizeof(int)), xmalloc(sizeof(int) * ((size_t)cnt + 1)),
                  xmalloc(sizeof(int) * (size_t)nr), xmalloc(sizeof(int) * (size_t)nc), xcalloc((size_t)nc, sizeof(int)), 0};
    int *at = xmalloc(sizeof(int) * (size_t)nr);
    for (long q = 0; q < cnt; q++) g.adj_ptr[order[q] / nc + 1]++;
    for (int r = 0; r < nr; r++) g.adj_ptr[r + 1] += g.adj_ptr[r], at[r] = g.adj_ptr[r], g.col_of[r] = -1;
    for (int c = 0; c < nc; c++) g.row_of[c] = -1;
    for (long q = 0; q < cnt; q++) {
        int r = (int)(order[q] / nc), c = (int)(order[q] % nc);
        g.adj[at[r]++] = c;
        if (g.col_of[r] < 0 && g.row_of[c] < 0) g.col_of[r] = c, g.row_of[c] = r;
    }
    for (int r = 0; r < nr; r++)
        if (g.col_of[r] < 0) g.stamp++, augment(&g, r);
    for (int r = 0; r < nr; r++)
        if (g.col_of[r] >= 0) keep[(size_t)r * nc + g.col_of[r]] = 1;
    for (long q = 0; q < cnt; q++) {  // largest first: each unmatched line keeps its first
        int r = (int)(order[q] / nc), c = (int)(order[q] % nc);
        if (g.col_of[r] < 0) keep[order[q]] = 1, g.col_of[r] = c;
        if (g.row_of[c] < 0) keep[order[q]] = 1, g.row_of[c] = r;
    }
    free(g.adj_ptr), free(g.adj), free(g.col_of), free(g.row_of), free(g.seen), free(at);
}

Mask mask_keep_largest(const Mask *mk, const double *norm, long want, long *floor) {
    size_t n = (size_t)mk->nr * mk->nc;
    Mask out = {mk->nr, mk->nc, xcalloc(n + 1, 1)};
    long cnt, *order = mask_order(mk, norm, 1, &cnt);
    keep_best_of_lines(mk, norm, 1, out.m);
    keep_best_of_lines(mk, norm, 0, out.m);
    if (mask_count(&out) > want) memset(out.m, 0, n), keep_cover(mk, order, cnt, out.m);
    long have = *floor = mask_count(&out);
    for (long q = 0; q < cnt && have < want; q++)
        if (!out.m[order[q]]) out.m[order[q]] = 1, have++;
    free(order);
    return out;
}

void model_prune_masks(const Model *m, const real *params, double density, Mask *out) {
    static const Mask none = {0, 0, NULL};
    int per = 2 + m->D;
    for (int l = 0; l < m->L; l++)
        for (int k = 0; k < per; k++) {
            const Mask *mk = model_layer_mask(m, l, k, NULL, NULL);
            Mask *o = &out[l * per + k];
            if (!mk) { *o = none; continue; }
            double *norm = model_block_norms(m, params, l, k);
            long want = lround(density * (double)mask_count(mk)), floor;
            want = want > 0 ? want : 1;
            *o = mask_keep_largest(mk, norm, want, &floor);
            free(norm);
            if (floor > want)
                die("prune: density %g keeps %ld blocks of %s, fewer than its block rows and columns need (%ld: "
                    "each keeps at least one)", density, want, model_mask_name(m, l, k), floor);
        }
}
