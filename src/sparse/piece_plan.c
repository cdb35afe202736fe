// piece_plan.c: rows cut into pieces and dealt to workers, longest first (piece_plan.h).
#include "sparse/piece_plan.h"
#include <stdlib.h>
#include <string.h>
#include "base/common.h"

typedef struct { int row, k0, n, worker; } Piece;

static int longest_first(const void *a, const void *b) {
    const Piece *x = a, *y = b;
    if (x->n != y->n) return y->n - x->n;
    return x->row != y->row ? x->row - y->row : x->k0 - y->k0;
}

static int by_worker(const void *a, const void *b) {
    const Piece *x = a, *y = b;
    if (x->worker != y->worker) return x->worker - y->worker;
    return x->row != y->row ? x->row - y->row : x->k0 - y->k0;
}

// The least loaded worker, the lowest of equals: a linear scan (workers number about a thousand,
// pieces a few thousand; the plan is made once per model).
static int least_loaded(const long *load, int nw) {
    int b = 0;
    for (int w = 1; w < nw; w++)
        if (load[w] < load[b]) b = w;
    return b;
}

void piece_plan(PiecePlan *p, const int *row_ptr, int nrows, int most, int nworkers) {
    if (most < 1 || nworkers < 1) die("internal: piece_plan with pieces of %d blocks over %d workers", most, nworkers);
    int np = 0;
    for (int r = 0; r < nrows; r++) np += (row_ptr[r + 1] - row_ptr[r] + most - 1) / most;
    Piece *pc = xmalloc(sizeof(Piece) * (size_t)(np ? np : 1));
    np = 0;
    for (int r = 0; r < nrows; r++)
        for (int k = row_ptr[r]; k < row_ptr[r + 1]; k += most)
            pc[np++] = (Piece){r, k, row_ptr[r + 1] - k < most ? row_ptr[r + 1] - k : most, 0};
    qsort(pc, (size_t)np, sizeof *pc, longest_first);
    long *load = xcalloc((size_t)nworkers, sizeof(long));
    for (int i = 0; i < np; i++) {
        pc[i].worker = least_loaded(load, nworkers);
        load[pc[i].worker] += pc[i].n;
    }
    qsort(pc, (size_t)np, sizeof *pc, by_worker);
    memset(p, 0, sizeof *p);
    p->nrows = nrows, p->npieces = np, p->nworkers = nworkers;
    size_t sz = sizeof(int) * (size_t)(np ? np : 1);
    p->row = xmalloc(sz), p->k0 = xmalloc(sz), p->n = xmalloc(sz), p->row_piece = xmalloc(sz);
    p->worker_ptr = xcalloc((size_t)nworkers + 1, sizeof(int));
    p->row_ptr = xcalloc((size_t)nrows + 1, sizeof(int));
    for (int i = 0; i < np; i++) {
        p->row[i] = pc[i].row, p->k0[i] = pc[i].k0, p->n[i] = pc[i].n;
        p->worker_ptr[pc[i].worker + 1]++;
        p->row_ptr[pc[i].row + 1]++;
    }
    for (int w = 0; w < nworkers; w++) p->worker_ptr[w + 1] += p->worker_ptr[w];
    for (int r = 0; r < nrows; r++) p->row_ptr[r + 1] += p->row_ptr[r];
    // Each row's pieces in block order: pieces of a row sit in k0 order within a worker, but
    // a row's pieces may lie with several workers, so place them by k0.
    for (int i = 0; i < np; i++) {
        int r = pc[i].row, j = p->row_ptr[r] + (pc[i].k0 - row_ptr[r]) / most;
        p->row_piece[j] = i;
    }
    for (int w = 0; w < nworkers; w++)
        if (load[w] > p->most_blocks) p->most_blocks = (int)load[w];
    free(load);
    free(pc);
}

void piece_plan_free(PiecePlan *p) {
    free(p->row); free(p->k0); free(p->n); free(p->worker_ptr); free(p->row_ptr); free(p->row_piece);
    memset(p, 0, sizeof *p);
}

void span_columns(const int *cols, const int *span, int nspans, int ncols, int **ptr, int **list) {
    int *pt = xmalloc(sizeof(int) * (size_t)(nspans + 1)), *ls = xmalloc(sizeof(int) * ((size_t)span[nspans] + 1));
    unsigned char *seen = xmalloc((size_t)ncols + 1);
    pt[0] = 0;
    for (int b = 0; b < nspans; b++) {
        memset(seen, 0, (size_t)ncols);
        for (int k = span[b]; k < span[b + 1]; k++) seen[cols[k]] = 1;
        pt[b + 1] = pt[b];
        for (int c = 0; c < ncols; c++)
            if (seen[c]) ls[pt[b + 1]++] = c;
    }
    free(seen);
    *ptr = pt, *list = ls;
}

unsigned fit_most(const size_t *size, int n, size_t room) {
    if (n < 0 || n > 16) die("internal: fit_most over %d items", n);
    unsigned best = 0;
    size_t most = 0;
    for (unsigned set = 1; set < 1u << n; set++) {
        size_t b = 0;
        for (int i = 0; i < n; i++)
            if (set >> i & 1) b += size[i];
        if (b <= room && b > most) most = b, best = set;
    }
    return best;
}

void stream_even(const int *n, int k, int room, int *keep) {
    if (room < 0) die("internal: stream_even with room %d", room);
    for (int t = 0;; t++) {
        long held = 0;
        for (int i = 0; i < k; i++) held += n[i] > t ? n[i] - t : 0;
        if (held > room) continue;
        for (int i = 0; i < k; i++) keep[i] = n[i] > t ? n[i] - t : 0;
        return;
    }
}
