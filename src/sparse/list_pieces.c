// list_pieces.c: list_pieces.h's plans.
#include <stdlib.h>
#include "sparse/list_pieces.h"
#include "base/common.h"

static int cdiv_int(int a, int b) { return (a + b - 1) / b; }
static int list_pieces(int len, int most) { return len ? cdiv_int(len, most) : 1; }

int count_pieces(const int *ptr, int n, int most) {
    int total = 0;
    for (int i = 0; i < n; i++) total += list_pieces(ptr[i + 1] - ptr[i], most);
    return total;
}

typedef struct { int len, i; } ListLen;
static int longest_first(const void *a, const void *b) {
    const ListLen *x = a, *y = b;
    return x->len != y->len ? y->len - x->len : x->i - y->i;
}

MmPiece *cut_pieces(const int *ptr, int n, int most, int *npieces) {
    ListLen *l = xmalloc(sizeof(ListLen) * (size_t)(n ? n : 1));
    int total = count_pieces(ptr, n, most);
    for (int i = 0; i < n; i++) l[i] = (ListLen){ptr[i + 1] - ptr[i], i};
    qsort(l, (size_t)n, sizeof *l, longest_first);
    MmPiece *pc = xmalloc(sizeof(MmPiece) * (size_t)(total ? total : 1));
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

typedef struct { int key, row, k0, cnt; } Group;
static int most_blocks_first(const void *a, const void *b) {
    const Group *x = a, *y = b;
    return x->key != y->key ? y->key - x->key : x->k0 - y->k0;
}

int plan_groups(const BsMat *w, int even, int **row, int **k0, int **cnt) {
    int G = 256 / w->bs, n = 0, rows = w->ngates == 4 ? w->nbr / 4 : w->nbr;
    for (int br = 0; br < rows; br++) n += cdiv_int(w->row_ptr[br + 1] - w->row_ptr[br], G);
    Group *gr = xmalloc(sizeof(Group) * (size_t)(n + 1));
    n = 0;
    for (int br = 0; br < rows; br++) {
        int k = w->row_ptr[br], len = w->row_ptr[br + 1] - k, ng = cdiv_int(len, G);
        for (int q = 0; q < ng; q++, n++) {
            int c = even ? len / ng + (q < len % ng) : (len - q * G < G ? len - q * G : G);
            gr[n] = (Group){even ? cdiv_int(len, ng) : c, br, k, c};
            k += c;
        }
    }
    qsort(gr, (size_t)n, sizeof *gr, most_blocks_first);
    *row = xmalloc(sizeof(int) * (size_t)(n + 1));
    *k0 = xmalloc(sizeof(int) * (size_t)(n + 1));
    *cnt = xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) (*row)[i] = gr[i].row, (*k0)[i] = gr[i].k0, (*cnt)[i] = gr[i].cnt;
    free(gr);
    return n;
}
