// piece_plan.h: a block-sparse product's rows cut into pieces of at most `most` blocks and
// dealt to workers (the CUDA sampling loop's warps) so that each does about as many blocks.
// A row cut in several pieces is summed from its pieces' partial sums in block order.
#pragma once
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

#ifdef __cplusplus
}
#endif
