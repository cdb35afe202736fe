// item_deal.h: the wgmma steps' work (cuda/wgmma/wg_lists.cuh) dealt to one persistent CTA an
// SM: each list j over each 128-row tile m is an item, whole, or as two halves where its whole
// would cost more than `split` CTA shares (so that hub lists do not bound the step; below that
// the halves' second reading of their shared operand costs more than the balance buys,
// docs/PERF.md). Items go costliest first, each to the CTA with the least cost so far
// (piece_plan, a plan row an item, no list cut); every item costs its epilogue besides its
// stages, so that no CTA gathers many short ones.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif

// List j over tile m: whole (half < 0) or its half `half` (0 or 1).
typedef struct {
    int j, m, half;
} DealItem;

// In one unit: a list entry's stage in a whole item and in a half, and an item's epilogue;
// split: the CTA shares, in quarters, past which a whole item goes as halves.
typedef struct {
    int whole, half, epi, split;
} DealCosts;

// nb lists (entries ptr[j] .. ptr[j + 1] - 1) over nmt tiles to nctas CTAs: *items in CTA
// order, CTA c's (*items)[(*first)[c] .. (*first)[c + 1]); returns the items' count. The
// caller frees both.
int item_deal(const int *ptr, int nb, int nmt, int nctas, DealCosts c, DealItem **items, int **first);

#ifdef __cplusplus
}
#endif
