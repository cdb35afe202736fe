// list_pieces.h: the host plans of the CUDA block-sparse products (cuda/bsmm/bsmat_dev.cu and
// the recurrent engine): lists cut into pieces, and a matrix's bwd_weight groups. Plain C so
// that the CPU tests check them; the CUDA side only uploads what they return.
#pragma once
#include "sparse/bsmat.h"
#ifdef __cplusplus
extern "C" {
#endif

// A piece of one output block column's list: entries [beg, end) of its CSR (fwd) or CSC
// (bwd_data) list, piece `rank` of `nparts`; pieces of one column are consecutive.
typedef struct { int ob, beg, end, rank, nparts; } MmPiece;

// How many pieces cut_pieces makes of the n lists ptr[i]..ptr[i+1] with at most `most`
// entries a piece (an empty list is one empty piece: its output is still written).
int count_pieces(const int *ptr, int n, int most);
// The pieces themselves (*npieces of them; the caller frees the array), lists taken longest
// first (ties: the lower list), so CTAs launched in this order start the long work first and
// the last wave holds short pieces.
MmPiece *cut_pieces(const int *ptr, int n, int most, int *npieces);

// bwd_weight groups: group g owns blocks [k0[g], k0[g] + cnt[g]) of block row row[g], at most
// 256/bs blocks of one row (they share its dy slab); over the first gate's rows only when 4
// gates share the mask (the kernels take all 4 copies). even = 0: each row cut into full
// groups and the rest (19 as 8, 8, 3), the groups with the most blocks first (the cp.async
// kernel); even = 1: a row's blocks dealt evenly (19 as 7, 6, 6), its groups side by side,
// rows with the fullest groups first (the bulk-copy kernel). Ties: the lower first block.
// Returns the count; *row, *k0, *cnt: host arrays the caller frees.
int plan_groups(const BsMat *w, int even, int **row, int **k0, int **cnt);

#ifdef __cplusplus
}
#endif
