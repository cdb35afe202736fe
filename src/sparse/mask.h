// mask.h: block-level sparsity layouts (dense, random, Barabasi-Albert, Watts-Strogatz).
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

// A block layout: nr x nc blocks, row-major, m[r*nc + c] is 1 where the block is stored.
typedef struct {
    int nr, nc;
    uint8_t *m;
} Mask;

typedef struct {
    long blocks;        // stored blocks
    double density;     // blocks / (nr*nc)
    int deg_min, deg_max;
    double deg_mean;    // stored blocks per block row
    double avg_path;    // mean shortest path length over reachable ordered pairs (graph view)
    double clustering;  // mean local clustering coefficient (undirected view)
} MaskStats;

// Descriptors: "dense", "random_<density>", "ba_<m>", "ws_<k>_<p>".
// Returns 0 if desc is well formed for an nr x nc layout, else writes why into err.
int mask_check_desc(const char *desc, int nr, int nc, char *err, int errlen);
// Builds the layout; dies with a one-line message naming desc on bad input.
// Every block row and column is non-empty. Same (desc, size, seed) gives the same mask.
Mask mask_make(const char *desc, int nr, int nc, uint64_t seed);
void mask_free(Mask *m);
long mask_count(const Mask *m);
MaskStats mask_stats(const Mask *m);
// avg_path is exact (a BFS from every node) up to MASK_STATS_EXACT_MAX nodes; above, it is the
// mean over MASK_STATS_SOURCES sources sampled with a fixed seed.
#define MASK_STATS_EXACT_MAX 4096
#define MASK_STATS_SOURCES 256
int mask_path_sources(int n);  // how many BFS sources mask_stats uses for n nodes
// The mixing of D square layouts of one size applied in turn (steps[0] first, one block hop
// each): share[k] = the fraction of (source, target) pairs of blocks, hence of units, where the
// target is reachable from the source through steps[0..k].
void mask_reach(const Mask *steps, int D, double *share);
// Block rows dealt to `nowners` consumers in contiguous runs (owner o holds rows
// mask_owner_row(nr, nowners, o) .. mask_owner_row(nr, nowners, o + 1) - 1) and, for each owner,
// the block columns its rows read, ascending and each once: *ptr [nowners + 1] and *list (the
// caller frees both). In a square layout column c is row c's output: an owner that waits on
// those rows' producers alone has all its inputs.
int mask_owner_row(int nr, int nowners, int o);
void mask_owner_columns(const Mask *m, int nowners, int **ptr, int **list);
// Writes a greyscale PNG, one pixel per block (scaled up for small layouts).
void mask_write_png(const Mask *m, const char *path);

#ifdef __cplusplus
}
#endif
