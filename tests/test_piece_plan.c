// test_piece_plan.c: the pieces the device sampling loop's warps run (sparse/piece_plan.h):
// every block in exactly one piece, pieces no longer than asked, each row's pieces in block
// order, and the longest-first deal within one piece of the ideal balance; the columns each
// span reads, the stages chosen to fill shared memory and the mLSTM loop's blocks held so that
// its stages stream evenly.
#include <stdlib.h>
#include <string.h>
#include "sparse/piece_plan.h"
#include "test.h"

static void check_plan(const int *rp, int nrows, int most, int nw) {
    PiecePlan p;
    piece_plan(&p, rp, nrows, most, nw);
    int nblk = rp[nrows], *seen = calloc((size_t)nblk + 1, sizeof(int)), total = 0, top = 0;
    CHECK_EQ(p.worker_ptr[0], 0);
    CHECK_EQ(p.worker_ptr[nw], p.npieces);
    for (int w = 0; w < nw; w++) {
        int load = 0;
        for (int i = p.worker_ptr[w]; i < p.worker_ptr[w + 1]; i++) {
            CHECK(p.n[i] >= 1 && p.n[i] <= most);
            CHECK(p.k0[i] >= rp[p.row[i]] && p.k0[i] + p.n[i] <= rp[p.row[i] + 1]);
            for (int k = p.k0[i]; k < p.k0[i] + p.n[i]; k++) seen[k]++;
            load += p.n[i];
        }
        total += load;
        top = load > top ? load : top;
    }
    CHECK_EQ(total, nblk);
    CHECK_EQ(top, p.most_blocks);
    for (int k = 0; k < nblk; k++) CHECK_EQ(seen[k], 1);
    // Each row's pieces tile it in order.
    for (int r = 0; r < nrows; r++) {
        int k = rp[r];
        for (int j = p.row_ptr[r]; j < p.row_ptr[r + 1]; j++) {
            int i = p.row_piece[j];
            CHECK_EQ(p.row[i], r);
            CHECK_EQ(p.k0[i], k);
            k += p.n[i];
        }
        CHECK_EQ(k, rp[r + 1]);
    }
    // Longest first to the least loaded: no worker ends more than one piece above the mean.
    CHECK_MSG(top <= (nblk + nw - 1) / nw + most, "worst worker %d blocks, mean %.1f, pieces of %d", top, (double)nblk / nw, most);
    free(seen);
    piece_plan_free(&p);
}

TEST(piece_plan_covers_rows_in_order) {
    int rp[41] = {0};
    unsigned long long s = 5;
    for (int r = 0; r < 40; r++) rp[r + 1] = rp[r] + (r % 7 == 3 ? 0 : 1 + (int)(test_rand(&s) * 30));
    check_plan(rp, 40, 6, 16);
    check_plan(rp, 40, 1, 7);
    check_plan(rp, 40, 100, 3);
    check_plan(rp, 40, 4, 500);  // more workers than pieces: some run none
}

TEST(piece_plan_is_deterministic) {
    int rp[9] = {0, 9, 9, 18, 27, 30, 31, 40, 49};
    PiecePlan a, b;
    piece_plan(&a, rp, 8, 4, 5);
    piece_plan(&b, rp, 8, 4, 5);
    CHECK(a.npieces == b.npieces && !memcmp(a.row, b.row, sizeof(int) * a.npieces) &&
          !memcmp(a.k0, b.k0, sizeof(int) * a.npieces) && !memcmp(a.worker_ptr, b.worker_ptr, sizeof(int) * 6));
    piece_plan_free(&a);
    piece_plan_free(&b);
}

TEST(span_columns_lists_each_spans_columns_once) {
    int cols[] = {3, 1, 3, 0, 2, 2, 2, 5}, span[] = {0, 3, 3, 8};
    int *ptr, *list;
    span_columns(cols, span, 3, 6, &ptr, &list);
    int want_ptr[] = {0, 2, 2, 5}, want[] = {1, 3, 0, 2, 5};
    CHECK(!memcmp(ptr, want_ptr, sizeof want_ptr));
    CHECK(!memcmp(list, want, sizeof want));
    free(ptr);
    free(list);
}

TEST(fit_most_fills_the_room) {
    size_t s[] = {91, 59, 59, 59, 235};  // H = 8192 ba_7 D = 4's spans in KB: three internal stages beat W_h0 + head
    CHECK_EQ(fit_most(s, 5, 182), 14u);
    CHECK_EQ(fit_most(s, 5, 150), 3u);   // 91 + 59, the lowest of the equal sets
    CHECK_EQ(fit_most(s, 5, 58), 0u);
    CHECK_EQ(fit_most(s, 5, 1000), 31u);
    CHECK_EQ(fit_most(s, 0, 10), 0u);
}

// Held blocks fill the room and leave every stage streaming min(n, t) blocks for the least t.
static void check_even(const int *n, int k, int room, const int *want) {
    int keep[8];
    stream_even(n, k, room, keep);
    for (int i = 0; i < k; i++) CHECK_MSG(keep[i] == want[i], "room %d: stage %d holds %d, want %d", room, i, keep[i], want[i]);
}

TEST(stream_even_streams_each_stage_alike) {
    const int n[5] = {9, 9, 9, 9, 16};
    check_even(n, 5, 100, n);                             // everything fits
    check_even(n, 5, 7, (const int[]){0, 0, 0, 0, 7});    // t = 9: only the gates' stage holds
    check_even(n, 5, 11, (const int[]){0, 0, 0, 0, 7});   // t = 8 needs 12
    check_even(n, 5, 12, (const int[]){1, 1, 1, 1, 8});
    check_even(n, 5, 0, (const int[]){0, 0, 0, 0, 0});
    check_even((const int[]){0, 3}, 2, 1, (const int[]){0, 1});
}
