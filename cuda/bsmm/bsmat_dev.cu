// bsmat_dev.cu: the device copy of a block-sparse matrix's indices (backend.h bsmat_upload):
// its CSR and CSC lists, the lists cut into pieces for bsmm.cu's products and the engine, and
// the bwd_weight groups (bsmm_bwd_weight.cu).
#include <stdlib.h>
#include "bsmm/bsmat_dev.cuh"

int *upload_ints(const int *h, int n) {
    int *d = (int *)cu_alloc(sizeof(int) * (size_t)(n ? n : 1));
    if (n) CUDA_CHECK(cudaMemcpy(d, h, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    return d;
}

// bwd_weight groups: blocks of one block row, at most 256/bs per group; over the first gate's
// rows only when 4 gates share the mask (the kernels take all 4 copies). Two lists:
//   - the cp.async kernel's (one launch, bound by the products): rows cut into full groups and
//     the rest (19 as 8, 8, 3), the groups with the most blocks first, so the CTAs that run at
//     once take about as long and walk their rows of N side by side, sharing x slabs in L2
//     (more L2 hits, a faster bwd-weight);
//   - the bulk-copy kernel's (a launch a wave, bound by L2 and DRAM): a row's blocks dealt
//     evenly (19 as 7, 6, 6) and its groups side by side, rows with the fullest groups first,
//     so a wave's groups take about as long and a row's groups share its dy slab in L2.
typedef struct { int key, row, k0, cnt; } Group;
static int most_blocks_first(const void *a, const void *b) {
    const Group *x = (const Group *)a, *y = (const Group *)b;
    return x->key != y->key ? y->key - x->key : x->k0 - y->k0;
}

static void upload_group_list(BwGroups *l, const BsMat *w, int even) {
    int G = 256 / w->bs, n = 0, rows = w->ngates == 4 ? w->nbr / 4 : w->nbr;
    for (int br = 0; br < rows; br++) n += cdiv(w->row_ptr[br + 1] - w->row_ptr[br], G);
    Group *gr = (Group *)xmalloc(sizeof(Group) * (size_t)(n + 1));
    n = 0;
    for (int br = 0; br < rows; br++) {
        int k = w->row_ptr[br], len = w->row_ptr[br + 1] - k, ng = cdiv(len, G);
        for (int q = 0; q < ng; q++, n++) {
            int cnt = even ? len / ng + (q < len % ng) : (len - q * G < G ? len - q * G : G);
            gr[n] = (Group){even ? cdiv(len, ng) : cnt, br, k, cnt};
            k += cnt;
        }
    }
    qsort(gr, (size_t)n, sizeof *gr, most_blocks_first);
    int *f[3];
    for (int j = 0; j < 3; j++) f[j] = (int *)xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) f[0][i] = gr[i].row, f[1][i] = gr[i].k0, f[2][i] = gr[i].cnt;
    l->n = n;
    l->row = upload_ints(f[0], n);
    l->k0 = upload_ints(f[1], n);
    l->cnt = upload_ints(f[2], n);
    for (int j = 0; j < 3; j++) free(f[j]);
    free(gr);
}

static void upload_groups(DevBsMat *d, const BsMat *w) {
    d->grp_gates = w->ngates == 4 ? 4 : 1;
    upload_group_list(&d->grp, w, 0);
    upload_group_list(&d->wgrp, w, 1);
}

// Cuts each of the n lists ptr[i]..ptr[i+1] into pieces of at most `most` entries (an empty
// list is one empty piece: its output is still written). Lists are taken longest first, so
// CTAs launched in this order start the long work first and the last wave holds short pieces.
typedef struct { int len, i; } ListLen;
static int longest_first(const void *a, const void *b) {
    const ListLen *x = (const ListLen *)a, *y = (const ListLen *)b;
    return x->len != y->len ? y->len - x->len : x->i - y->i;
}

static int list_pieces(int len, int most) { return len ? cdiv(len, most) : 1; }

int count_pieces(const int *ptr, int n, int most) {
    int total = 0;
    for (int i = 0; i < n; i++) total += list_pieces(ptr[i + 1] - ptr[i], most);
    return total;
}

MmPiece *cut_pieces(const int *ptr, int n, int most, int *npieces) {
    ListLen *l = (ListLen *)xmalloc(sizeof(ListLen) * (size_t)(n ? n : 1));
    int total = count_pieces(ptr, n, most);
    for (int i = 0; i < n; i++) l[i] = (ListLen){ptr[i + 1] - ptr[i], i};
    qsort(l, (size_t)n, sizeof *l, longest_first);
    MmPiece *pc = (MmPiece *)xmalloc(sizeof(MmPiece) * (size_t)(total ? total : 1));
    int k = 0;
    for (int j = 0; j < n; j++) {
        int i = l[j].i, parts = list_pieces(l[j].len, most);
        for (int r = 0; r < parts; r++, k++) {
            int beg = ptr[i] + r * most, end = beg + most < ptr[i + 1] ? beg + most : ptr[i + 1];
            pc[k] = (MmPiece){i, beg, end, r, parts};
        }
    }
    free(l);
    *npieces = total;
    return pc;
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
    upload_groups(d, w);
    w->dev = d;
}

void bsmat_release_cuda(BsMat *w) {
    DevBsMat *d = (DevBsMat *)w->dev;
    if (!d) return;
    void *all[] = {d->row_ptr, d->col_idx, d->col_ptr, d->csc_row, d->csc_blk, d->fwd_pieces, d->bwd_pieces,
                   d->grp.row, d->grp.k0, d->grp.cnt, d->wgrp.row, d->wgrp.k0, d->wgrp.cnt};
    for (int i = 0; i < 13; i++) cu_free(all[i]);
    free(d);
    w->dev = NULL;
}
