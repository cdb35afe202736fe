// item_deal.c: the wgmma steps' items dealt to CTAs (item_deal.h).
#include "sparse/item_deal.h"
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "sparse/piece_plan.h"

int item_deal(const int *ptr, int nb, int nmt, int nctas, DealCosts c, DealItem **items, int **first) {
    long total = 0;
    for (int j = 0; j < nb; j++) total += (long)c.whole * (ptr[j + 1] - ptr[j]) * nmt;
    DealItem *cand = xmalloc(sizeof(DealItem) * (size_t)(2 * nb * nmt + 1));
    int *cost = xmalloc(sizeof(int) * (size_t)(2 * nb * nmt + 1));  // prefix sums: the plan's rows
    int n = 0, most = 1;
    cost[0] = 0;
    for (int j = 0; j < nb; j++)
        for (int m = 0; m < nmt; m++) {
            const int len = ptr[j + 1] - ptr[j], whole = 4L * c.whole * len * nctas <= (long)c.split * total;
            for (int h = whole ? -1 : 0; h < (whole ? 0 : 2); h++) {
                cand[n] = (DealItem){j, m, h};
                const int k = c.epi + (whole ? c.whole : c.half) * len;
                cost[n + 1] = cost[n] + (k > 0 ? k : 1);  // an empty list still runs its epilogue
                if (cost[n + 1] - cost[n] > most) most = cost[n + 1] - cost[n];
                n++;
            }
        }
    PiecePlan plan;
    piece_plan(&plan, cost, n, most, nctas);
    *items = xmalloc(sizeof(DealItem) * (size_t)(plan.npieces + 1));
    for (int i = 0; i < plan.npieces; i++) (*items)[i] = cand[plan.row[i]];
    *first = xmalloc(sizeof(int) * (size_t)(nctas + 1));
    memcpy(*first, plan.worker_ptr, sizeof(int) * (size_t)(nctas + 1));
    const int count = plan.npieces;
    piece_plan_free(&plan);
    free(cand), free(cost);
    return count;
}
