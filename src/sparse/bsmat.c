// bsmat.c: CSR and CSC block indices from a mask.
#include "sparse/bsmat.h"
#include "base/common.h"
#include <stdlib.h>
#include <string.h>

void bsmat_from_mask(BsMat *w, const Mask *m, int bs, int ngates) {
    memset(w, 0, sizeof *w);
    w->bs = bs;
    w->ngates = ngates;
    w->nbr = m->nr * ngates;
    w->nbc = m->nc;
    w->rows = w->nbr * bs;
    w->cols = w->nbc * bs;
    w->nnzb = (int)mask_count(m) * ngates;
    w->row_ptr = xcalloc((size_t)w->nbr + 1, sizeof(int));
    w->col_idx = xmalloc(sizeof(int) * (size_t)w->nnzb);
    w->col_ptr = xcalloc((size_t)w->nbc + 1, sizeof(int));
    w->csc_row = xmalloc(sizeof(int) * (size_t)w->nnzb);
    w->csc_blk = xmalloc(sizeof(int) * (size_t)w->nnzb);
    int k = 0;
    for (int br = 0; br < w->nbr; br++) {
        const uint8_t *row = m->m + (size_t)(br % m->nr) * m->nc;
        for (int bc = 0; bc < w->nbc; bc++)
            if (row[bc]) { w->col_idx[k++] = bc; w->col_ptr[bc + 1]++; }
        w->row_ptr[br + 1] = k;
    }
    for (int bc = 0; bc < w->nbc; bc++) w->col_ptr[bc + 1] += w->col_ptr[bc];
    int *fill = xmalloc(sizeof(int) * (size_t)w->nbc);
    memcpy(fill, w->col_ptr, sizeof(int) * (size_t)w->nbc);
    for (int br = 0; br < w->nbr; br++)
        for (int k2 = w->row_ptr[br]; k2 < w->row_ptr[br + 1]; k2++) {
            int pos = fill[w->col_idx[k2]]++;
            w->csc_row[pos] = br;
            w->csc_blk[pos] = k2;
        }
    free(fill);
}

void bsmat_columns(const BsMat *w, int nr, int **ptr, int **row, int **blk) {
    *ptr = xmalloc(sizeof(int) * ((size_t)w->nbc + 1));
    *row = xmalloc(sizeof(int) * ((size_t)w->nnzb + 1));
    *blk = xmalloc(sizeof(int) * ((size_t)w->nnzb + 1));
    int q = 0;
    for (int j = 0; j < w->nbc; j++) {
        (*ptr)[j] = q;
        for (int p = w->col_ptr[j]; p < w->col_ptr[j + 1]; p++)
            if (w->csc_row[p] < nr) (*row)[q] = w->csc_row[p], (*blk)[q++] = w->csc_blk[p];
    }
    (*ptr)[w->nbc] = q;
}

void bsmat_free(BsMat *w) {
    free(w->row_ptr); free(w->col_idx); free(w->col_ptr); free(w->csc_row); free(w->csc_blk);
    memset(w, 0, sizeof *w);
}
