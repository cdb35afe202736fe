// piece_plan.h: a block-sparse product's rows cut into pieces of at most `most` blocks and
// dealt to workers (the CUDA sampling loop's warps) so that each does about as many blocks.
// A row cut in several pieces is summed from its pieces' partial sums in block order.
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int nrows, npieces, nworkers;
    // Per piece, in worker order (worker w runs pieces worker_ptr[w] .. worker_ptr[w+1]-1):
    // its block row, its first block (a CSR index) and its block count.
    int *row, *k0, *n;
    int *worker_ptr;              // [nworkers + 1]
    int *row_ptr, *row_piece;     // [nrows + 1], [npieces]: each row's pieces, in block order
    int most_blocks;              // the largest worker's block count
} PiecePlan;

// row_ptr: CSR offsets [nrows + 1]. Longest pieces first, each to the least loaded worker
// (ties: the lower worker), so the plan depends only on its arguments.
void piece_plan(PiecePlan *p, const int *row_ptr, int nrows, int most, int nworkers);
void piece_plan_free(PiecePlan *p);

// The distinct values of cols (each in [0, ncols)) over each span [span[b], span[b+1]),
// b < nspans, ascending: *ptr [nspans + 1] and *list (the caller frees both). The loop's
// mLSTM normalizes only the input columns that a CTA's span of blocks reads.
void span_columns(const int *cols, const int *span, int nspans, int ncols, int **ptr, int **list);
// Of the subsets of n items (n <= 16) whose sizes sum to at most room, one with the largest
// sum, the lowest such bit mask (bit i: item i): the loop's stages held in shared memory.
unsigned fit_most(const size_t *size, int n, size_t room);
// Of k stages of n[i] blocks (a warp's runs in the mLSTM loop), how many to hold, keep[i]
// (the first of each run), so that at most room (>= 0) are held and the rest streams as evenly
// as it can: n[i] - keep[i] = min(n[i], t) for the least t that fits.
void stream_even(const int *n, int k, int room, int *keep);

#ifdef __cplusplus
}
#endif
