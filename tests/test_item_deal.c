// test_item_deal.c: the wgmma steps' items dealt to CTAs (sparse/item_deal.h): every list and
// row tile exactly once, whole or as its two halves, halves exactly where a whole item would
// pass 1.5 CTA shares, CTAs in order and within one item of the ideal balance, the same deal
// twice; on a shipped mask (lstm_3min's ba_8 at 256 rows, both steps' costs) and on fewer
// items than CTAs.
#include <stdlib.h>
#include <string.h>
#include "sparse/bsmat.h"
#include "sparse/item_deal.h"
#include "sparse/mask.h"
#include "test.h"

static long item_cost(const int *ptr, DealCosts c, const DealItem *it) {
    const long k = c.epi + (long)(it->half < 0 ? c.whole : c.half) * (ptr[it->j + 1] - ptr[it->j]);
    return k > 0 ? k : 1;
}

// *halves: the lists dealt as halves.
static void check_deal(const int *ptr, int nb, int nmt, int nctas, DealCosts c, int *halves_out) {
    DealItem *items, *again;
    int *first, *first2;
    const int n = item_deal(ptr, nb, nmt, nctas, c, &items, &first);
    long total = 0, sum = 0, top = 0, most = 0;
    int nhalves = 0;
    *halves_out = -1;
    for (int j = 0; j < nb; j++) total += (long)c.whole * (ptr[j + 1] - ptr[j]) * nmt;
    int *seen = calloc((size_t)nb * nmt * 3, sizeof(int));  // [j][m][whole, half 0, half 1]
    CHECK_EQ(first[0], 0);
    CHECK_EQ(first[nctas], n);
    for (int w = 0; w < nctas; w++) {
        CHECK(first[w] <= first[w + 1]);
        long load = 0;
        for (int i = first[w]; i < first[w + 1]; i++) {
            const DealItem *it = &items[i];
            CHECK(it->j >= 0 && it->j < nb && it->m >= 0 && it->m < nmt && it->half >= -1 && it->half <= 1);
            seen[(it->j * nmt + it->m) * 3 + it->half + 1]++;
            const long k = item_cost(ptr, c, it);
            load += k, most = k > most ? k : most;
        }
        sum += load, top = load > top ? load : top;
    }
    for (int j = 0; j < nb; j++) {
        const int halves = 4L * c.whole * (ptr[j + 1] - ptr[j]) * nctas > (long)c.split * total;
        nhalves += halves;
        for (int m = 0; m < nmt; m++) {
            const int *v = seen + (j * nmt + m) * 3;
            CHECK_MSG(halves ? v[0] == 0 && v[1] == 1 && v[2] == 1 : v[0] == 1 && v[1] == 0 && v[2] == 0,
                      "list %d tile %d: whole %d, halves %d and %d (halves expected: %d)", j, m, v[0], v[1], v[2], halves);
        }
    }
    CHECK_MSG(top <= (sum + nctas - 1) / nctas + most, "worst CTA %ld, mean %.1f, largest item %ld", top, (double)sum / nctas, most);
    CHECK_EQ(item_deal(ptr, nb, nmt, nctas, c, &again, &first2), n);
    CHECK(!memcmp(items, again, sizeof(DealItem) * n) && !memcmp(first, first2, sizeof(int) * (nctas + 1)));
    free(seen), free(items), free(first), free(again), free(first2);
    *halves_out = nhalves;
}

TEST(item_deal_covers_every_item_once) {
    Mask mk = mask_make("ba_8", 256, 256, 1);
    BsMat w;
    bsmat_from_mask(&w, &mk, 32, 1);
    mask_free(&mk);
    const DealCosts fwd = {4, 3, 50, 6}, bwd = {10, 6, 40, 4}, no_epi = {4, 3, 0, 6};
    int halves;
    check_deal(w.row_ptr, w.nbr, 2, 132, fwd, &halves);
    CHECK_EQ(halves, 0);  // lstm_3min: all whole
    check_deal(w.col_ptr, w.nbc, 2, 132, bwd, &halves);  // past one share: the hubs as halves
    CHECK_MSG(halves > 0 && halves < 10, "%d lists as halves", halves);
    check_deal(w.row_ptr, w.nbr, 1, 132, no_epi, &halves);  // one tile: the hubs go as halves
    CHECK_MSG(halves > 0 && halves < 40, "%d lists as halves", halves);
    check_deal(w.row_ptr, 5, 1, 132, fwd, &halves);  // fewer items than CTAs: all halves, most CTAs run none
    CHECK_EQ(halves, 5);
    bsmat_free(&w);
}

// An empty list still has its epilogue to run (h from the input projection alone): with no
// epilogue charge it costs nothing and must still be dealt (pruned or thinned masks have them).
TEST(item_deal_deals_empty_lists) {
    const int ptr[] = {0, 2, 2, 3, 3, 7};
    int halves;
    check_deal(ptr, 5, 2, 4, (DealCosts){4, 3, 0, 6}, &halves);
    check_deal(ptr, 5, 1, 132, (DealCosts){4, 3, 0, 6}, &halves);
}
