// bsmat_dev.cu: the device copy of a block-sparse matrix's indices (backend.h bsmat_upload):
// its CSR and CSC lists, the lists cut into pieces for bsmm.cu's products and the engine, and
// the bwd_weight groups (bsmm_bwd_weight.cu).
#include <stdlib.h>
#include <algorithm>
#include "bsmm/bsmat_dev.cuh"
#include "sparse/piece_plan.h"

int *upload_ints(const int *h, int n) {
    int *d = (int *)cu_alloc(sizeof(int) * (size_t)(n ? n : 1));
    if (n) CUDA_CHECK(cudaMemcpy(d, h, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    return d;
}

// bwd_weight groups (sparse/list_pieces.h plan_groups): the cp.async kernel's full groups
// (one launch, bound by the products: the CTAs that run at once take about as long and walk
// their rows of N side by side, sharing x slabs in L2) and the bulk-copy kernel's even ones
// (a launch a wave, bound by L2 and DRAM: a wave's groups take about as long and a row's
// groups share its dy slab in L2).
static void upload_group_list(BwGroups *l, const BsMat *w, int even) {
    int *row, *k0, *cnt;
    l->n = plan_groups(w, even, &row, &k0, &cnt);
    l->row = upload_ints(row, l->n);
    l->k0 = upload_ints(k0, l->n);
    l->cnt = upload_ints(cnt, l->n);
    free(row); free(k0); free(cnt);
}

static void upload_groups(DevBsMat *d, const BsMat *w) {
    d->grp_gates = w->ngates == 4 ? 4 : 1;
    upload_group_list(&d->grp, w, 0);
    upload_group_list(&d->wgrp, w, 1);
}

MmPiece *pieces_to_device(const MmPiece *pc, int n) {
    MmPiece *d = (MmPiece *)cu_alloc(sizeof(MmPiece) * (size_t)(n ? n : 1));
    if (n) CUDA_CHECK(cudaMemcpy(d, pc, sizeof(MmPiece) * (size_t)n, cudaMemcpyHostToDevice));
    return d;
}

void *upload_pieces(const int *ptr, int n, int most, int *npieces) {
    MmPiece *pc = cut_pieces(ptr, n, most, npieces);
    MmPiece *d = pieces_to_device(pc, *npieces);
    free(pc);
    return d;
}

// Pieces of at most a CTA's share of the entries (half or 1.5 shares measured slower).
static WgPlan upload_plan(const int *ptr, int n) {
    PiecePlan pp;
    const int nw = g_cuda.nsm, most = std::max(cdiv(ptr[n], nw), 4);
    piece_plan(&pp, ptr, n, most, nw);
    MmPiece *pc = (MmPiece *)xmalloc(sizeof(MmPiece) * (size_t)(pp.npieces ? pp.npieces : 1));
    for (int i = 0; i < pp.npieces; i++) {
        const int r = pp.row[i], parts = pp.row_ptr[r + 1] - pp.row_ptr[r];
        pc[i] = {r, pp.k0[i], pp.k0[i] + pp.n[i], (pp.k0[i] - ptr[r]) / most, parts};
    }
    int empty = 0;
    for (int r = 0; r < n; r++) empty += ptr[r + 1] == ptr[r];
    WgPlan p = {pieces_to_device(pc, pp.npieces), upload_ints(pp.worker_ptr, nw + 1), upload_ints(pp.row_ptr, n + 1), nw,
                pp.npieces, empty};
    free(pc);
    piece_plan_free(&pp);
    return p;
}

void bsmat_upload_cuda(BsMat *w) {
    if (w->bs != 8 && w->bs != 16 && w->bs != 32)
        die("block_size = %d: the CUDA backend supports 8, 16 and 32", w->bs);
    DevBsMat *d = (DevBsMat *)xcalloc(1, sizeof *d);
    d->row_ptr = upload_ints(w->row_ptr, w->nbr + 1);
    d->col_idx = upload_ints(w->col_idx, w->nnzb);
    d->col_ptr = upload_ints(w->col_ptr, w->nbc + 1);
    d->csc_row = upload_ints(w->csc_row, w->nnzb);
    d->csc_blk = upload_ints(w->csc_blk, w->nnzb);
    d->fwd_pieces = upload_pieces(w->row_ptr, w->nbr, mm_piece_len(w->bs), &d->fwd_npieces);
    d->bwd_pieces = upload_pieces(w->col_ptr, w->nbc, mm_piece_len(w->bs), &d->bwd_npieces);
    d->wg_fwd = upload_plan(w->row_ptr, w->ngates == 4 ? w->nbr / 4 : w->nbr);
    if (w->ngates == 4) {  // bwd_data walks the first gate's columns (an entry brings all four gates)
        int *ptr, *row, *blk;
        bsmat_columns(w, w->nbr / 4, &ptr, &row, &blk);
        d->g0_row = upload_ints(row, ptr[w->nbc]), d->g0_blk = upload_ints(blk, ptr[w->nbc]);
        d->wg_bwd = upload_plan(ptr, w->nbc);
        free(ptr), free(row), free(blk);
    } else {
        d->wg_bwd = upload_plan(w->col_ptr, w->nbc);
    }
    upload_groups(d, w);
    w->dev = d;
}

void bsmat_release_cuda(BsMat *w) {
    DevBsMat *d = (DevBsMat *)w->dev;
    if (!d) return;
    void *all[] = {d->row_ptr, d->col_idx, d->col_ptr, d->csc_row, d->csc_blk, d->g0_row, d->g0_blk, d->fwd_pieces, d->bwd_pieces,
                   d->wg_fwd.pieces, d->wg_fwd.first, d->wg_fwd.slot0, d->wg_bwd.pieces, d->wg_bwd.first, d->wg_bwd.slot0, d->grp.row, d->grp.k0, d->grp.cnt, d->wgrp.row, d->wgrp.k0, d->wgrp.cnt};
    for (void *p : all) cu_free(p);
    free(d);
    w->dev = NULL;
}
