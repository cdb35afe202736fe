// bsmat.h: the index structure of a block-sparse weight matrix.
#pragma once
#include "sparse/mask.h"
#ifdef __cplusplus
extern "C" {
#endif

// W is rows x cols (dense shape). Only nnzb blocks of bs x bs are stored, in
// block-row (CSR) order; block k holds W[br*bs + i][bc*bs + j] at vals[k*bs*bs + i*bs + j].
typedef struct BsMat {
    int rows, cols, bs;
    int nbr, nbc, nnzb;
    int ngates;    // copies of one mask stacked vertically (block row g*nbr/ngates + r is row r of gate g)
    int *row_ptr;  // [nbr+1]
    int *col_idx;  // [nnzb]  block column of block k
    int *col_ptr;  // [nbc+1] CSC view of the same blocks
    int *csc_row;  // [nnzb]  block row, in CSC order
    int *csc_blk;  // [nnzb]  CSR index of that block
    void *dev;     // the backend's own copy of the indices (set by Backend.bsmat_upload)
} BsMat;

// LSTM weights stack `ngates` copies of the square mask vertically (gates i, f, g, o),
// so W has ngates*mask.nr*bs rows and mask.nc*bs columns.
void bsmat_from_mask(BsMat *w, const Mask *m, int bs, int ngates);
void bsmat_free(BsMat *w);
// The lists by block column of w's first nr block rows (a gate-stacked matrix's gate 0 where
// nr = nbc), in CSC order: column j's entries (*ptr)[j] .. (*ptr)[j + 1] - 1, each its block row
// and CSR index (*row, *blk). The caller frees all three.
void bsmat_columns(const BsMat *w, int nr, int **ptr, int **row, int **blk);
static inline long bsmat_nvals(const BsMat *w) { return (long)w->nnzb * w->bs * w->bs; }
// Every block present, stored row by row in column order (as bsmat_from_mask stores a dense
// mask): vals is then W in a blocked row-major layout.
static inline int bsmat_is_dense(const BsMat *w) {
    if ((long)w->nnzb != (long)w->nbr * w->nbc) return 0;
    for (int k = 0; k < w->nnzb; k++)
        if (w->col_idx[k] != k % w->nbc) return 0;
    return 1;
}

#ifdef __cplusplus
}
#endif
