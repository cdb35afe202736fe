// test_bsmat.c: the lists by block column of a gate-stacked matrix's gate 0 (sparse/bsmat.h
// bsmat_columns), what the backward steps walk: every gate-0 block once, in its column's list,
// by ascending block row, pointing at its own CSR index.
#include <stdlib.h>
#include "sparse/bsmat.h"
#include "sparse/mask.h"
#include "test.h"

TEST(bsmat_columns_are_gate_0s) {
    Mask mk = mask_make("ba_3", 20, 20, 7);
    BsMat w;
    bsmat_from_mask(&w, &mk, 32, 4);
    mask_free(&mk);
    int *ptr, *row, *blk;
    bsmat_columns(&w, w.nbc, &ptr, &row, &blk);
    CHECK_EQ(ptr[0], 0);
    CHECK_EQ(ptr[w.nbc], w.nnzb / 4);
    int *seen = calloc((size_t)w.nnzb, sizeof(int));
    for (int j = 0; j < w.nbc; j++)
        for (int q = ptr[j]; q < ptr[j + 1]; q++) {
            CHECK(row[q] >= 0 && row[q] < w.nbc && blk[q] >= 0 && blk[q] < w.nnzb / 4);
            CHECK(blk[q] >= w.row_ptr[row[q]] && blk[q] < w.row_ptr[row[q] + 1] && w.col_idx[blk[q]] == j);
            CHECK(q == ptr[j] || row[q] > row[q - 1]);
            seen[blk[q]]++;
        }
    for (int k = 0; k < w.nnzb / 4; k++) CHECK_EQ(seen[k], 1);
    free(seen), free(ptr), free(row), free(blk);
    bsmat_free(&w);
}
