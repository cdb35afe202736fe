// test_list_pieces.c: the host plans of the CUDA products (sparse/list_pieces.h): lists cut
// into pieces longest first, every entry in exactly one piece; the bwd_weight groups of both
// kernels, in their exact order.
#include <stdlib.h>
#include <string.h>
#include "sparse/list_pieces.h"
#include "test.h"

// Lists of 0, 5, 12, 3 and 5 entries in pieces of at most 4: the 12 first, then the two 5s
// (lower list first), the 3, and the empty list as one empty piece.
TEST(cut_pieces_longest_first_exact) {
    const int ptr[] = {0, 0, 5, 17, 20, 25};
    const MmPiece want[] = {{2, 5, 9, 0, 3},   {2, 9, 13, 1, 3},  {2, 13, 17, 2, 3}, {1, 0, 4, 0, 2},
                            {1, 4, 5, 1, 2},   {4, 20, 24, 0, 2}, {4, 24, 25, 1, 2}, {3, 17, 20, 0, 1},
                            {0, 0, 0, 0, 1}};
    int n = 0;
    CHECK_EQ(count_pieces(ptr, 5, 4), 9);
    MmPiece *pc = cut_pieces(ptr, 5, 4, &n);
    CHECK_EQ(n, 9);
    for (int i = 0; i < n; i++) {
        int same = pc[i].ob == want[i].ob && pc[i].beg == want[i].beg && pc[i].end == want[i].end &&
                   pc[i].rank == want[i].rank && pc[i].nparts == want[i].nparts;
        CHECK_MSG(same, "piece %d: {%d, %d, %d, %d, %d}, expected {%d, %d, %d, %d, %d}", i, pc[i].ob, pc[i].beg,
                  pc[i].end, pc[i].rank, pc[i].nparts, want[i].ob, want[i].beg, want[i].end, want[i].rank, want[i].nparts);
    }
    free(pc);
}

// Random lists: every entry in exactly one piece, none longer than asked, a list's pieces
// consecutive in rank order, lists in non-increasing length.
TEST(cut_pieces_cover_every_entry_once) {
    unsigned s = 7;
    for (int trial = 0; trial < 50; trial++) {
        int n = 1 + trial % 23, most = 1 + trial % 9, *ptr = malloc(sizeof(int) * (n + 1));
        ptr[0] = 0;
        for (int i = 0; i < n; i++) s = s * 1103515245u + 12345u, ptr[i + 1] = ptr[i] + (int)(s >> 16) % 40 * (i % 3 != 1);
        int np = 0, ok = 1, prev_len = 1 << 30;
        MmPiece *pc = cut_pieces(ptr, n, most, &np);
        int *seen = calloc((size_t)ptr[n] + 1, sizeof(int));
        ok &= np == count_pieces(ptr, n, most);
        for (int k = 0; k < np && ok; k++) {
            const MmPiece *p = &pc[k];
            int len = ptr[p->ob + 1] - ptr[p->ob];
            ok &= p->end - p->beg <= most && p->beg >= ptr[p->ob] && p->end <= ptr[p->ob + 1] && p->rank < p->nparts;
            ok &= p->rank == 0 ? len <= prev_len && p->beg == ptr[p->ob] : pc[k - 1].ob == p->ob && pc[k - 1].rank == p->rank - 1 && pc[k - 1].end == p->beg;
            if (p->rank == 0) prev_len = len;
            for (int e = p->beg; e < p->end; e++) seen[e]++;
        }
        for (int e = 0; e < ptr[n] && ok; e++) ok &= seen[e] == 1;
        free(seen); free(pc); free(ptr);
        CHECK_MSG(ok, "trial %d (n %d, most %d): pieces do not cover each entry once in order", trial, n, most);
    }
}

static int check_groups(const BsMat *w, int even, const int (*want)[3], int nwant) {
    int *row, *k0, *cnt, n = plan_groups(w, even, &row, &k0, &cnt), ok = n == nwant;
    for (int g = 0; g < n && ok; g++) ok = row[g] == want[g][0] && k0[g] == want[g][1] && cnt[g] == want[g][2];
    free(row); free(k0); free(cnt);
    return ok;
}

// Block rows of 19, 2 and 8 blocks at block 32 (groups of at most 8): the cp.async kernel's
// full groups and rests, most blocks first; the bulk-copy kernel's even deal, fullest first.
// With 4 gates only the first gate's rows are grouped.
TEST(plan_groups_exact) {
    int rp[] = {0, 19, 21, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38};
    BsMat w = {0};
    w.bs = 32, w.nbr = 3, w.ngates = 1, w.row_ptr = rp;
    const int full[][3] = {{0, 0, 8}, {0, 8, 8}, {2, 21, 8}, {0, 16, 3}, {1, 19, 2}};
    const int even[][3] = {{2, 21, 8}, {0, 0, 7}, {0, 7, 6}, {0, 13, 6}, {1, 19, 2}};
    CHECK_MSG(check_groups(&w, 0, full, 5), "full groups differ");
    CHECK_MSG(check_groups(&w, 1, even, 5), "even groups differ");
    w.nbr = 12, w.ngates = 4;
    CHECK_MSG(check_groups(&w, 0, full, 5), "4 gates: full groups differ");
    w.bs = 16, w.nbr = 3, w.ngates = 1;  // groups of at most 16
    const int b16[][3] = {{0, 0, 16}, {2, 21, 8}, {0, 16, 3}, {1, 19, 2}};
    CHECK_MSG(check_groups(&w, 0, b16, 4), "block 16: full groups differ");
}
