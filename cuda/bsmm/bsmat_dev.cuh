// bsmat_dev.cuh: a block-sparse matrix on the device (bsmat_dev.cu): the pieces and groups
// its products walk, and the block-sparse entry points other cuda folders call.
#pragma once
#include "base/launch.cuh"
#include "base/lowp.cuh"
#include "ops/backend.h"
#include "sparse/list_pieces.h"

// Most entries in a piece: long lists (hub nodes of small-world masks) are cut so that no
// CTA walks far longer than the others; the pieces' partial sums are added in a fixed order.
static inline int mm_piece_len(int bs) { return 2048 / bs; }

// Device copies for bsmat_upload and the engine: ints, and pieces (sparse/list_pieces.h
// cut_pieces plans them on the host).
int *upload_ints(const int *h, int n);
MmPiece *pieces_to_device(const MmPiece *pc, int n);
void *upload_pieces(const int *ptr, int n, int most, int *npieces);

// The wgmma products' work (sparse/piece_plan.h): the lists cut into pieces and dealt to one
// persistent CTA an SM, CTA c's pieces[first[c] .. first[c + 1]); piece p's partial sums, where
// its list is cut, go to slot slot0[list] + rank. Empty lists have no piece (empty: their count).
typedef struct {
    MmPiece *pieces;
    int *first, *slot0;
    int nctas, nslots, empty;
} WgPlan;

// bwd_weight groups: group g owns blocks [k0[g], k0[g] + cnt[g]) of block row row[g] (at most
// 256/bs blocks of one row, so they share their dy slab).
typedef struct {
    int n;
    int *row, *k0, *cnt;
} BwGroups;

// bsmat_upload's device copy of the indices (w->dev).
typedef struct {
    int *row_ptr, *col_idx, *col_ptr, *csc_row, *csc_blk;
    // fwd / bwd_data work: each output block column's list cut into pieces (bsmm.cu, MmPiece)
    void *fwd_pieces, *bwd_pieces;
    int fwd_npieces, bwd_npieces;
    // the wgmma products' (cuda/wgmma/wg_mm.cu); a gate-stacked matrix's walk its first gate's
    // lists (an entry brings all four gates' blocks), bwd_data's entries as g0_row, g0_blk
    // (block row, stored block) in the order of its columns (bsmat_columns)
    WgPlan wg_fwd, wg_bwd;
    int *g0_row, *g0_blk;
    // bwd_weight work lists (backend_cuda.cu upload_groups): grp for the cp.async kernel,
    // wgrp for the bulk-copy one; with grp_gates = 4 the rows are the first gate's and a group
    // covers all 4 gates' copies.
    BwGroups grp, wgrp;
    int grp_gates;
} DevBsMat;

// bsmm_stream.cu: the bf16 forward for few rows (a stream of weights), where it applies.
bool bsmm_stream_takes(const BsMat *w, int N);
void bsmm_stream_fwd(real *y, const real *x, const BsMat *w, const bf16 *wb, int N, int acc);
// dvals += dy^T x over N rows with inputs already in the kernel's type (bf16 when bf).
void bsmm_bwd_weight_typed(real *dvals, const void *dy, const void *x, const BsMat *w, int N, int bf);
