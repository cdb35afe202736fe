// gen_loop.cuh: the sampling loop's launch arguments, shared by its kernel (gen_loop.cu) and
// its host side (gen_host.cu).
#pragma once
#include "ops/common.cuh"

enum { GEN_THREADS = 256, GEN_WARPS = GEN_THREADS / 32, GEN_BLOCK = 32 * 32 };

// The product [W_h; W_o] h runs as pieces of block rows (sparse/piece_plan.h): rows
// 0 .. 4H/32-1 are the gates', the next 8 the head's (W_o cut into 32 x 32 blocks). Blocks
// lie in wblk in worker order, so that each CTA's blocks are one span, which it copies into
// its shared memory when every CTA's span fits (resident) and reads from L2 otherwise.
struct GenLaunch {
    int H, gate_rows, npieces, steps, nfeed, nsample, par;  // par: which half of h holds the state
    const void *wblk;        // [nblk, 32, 32], float or bf16
    const int *cols;         // [nblk] block column
    const int *worker_ptr;   // [warps + 1] pieces per warp
    const int *piece_blk;    // [npieces + 1]: first block in wblk (the next piece's is its end)
    const int *row_ptr, *row_piece;  // each block row's pieces in block order (partial sums)
    const int *cta_blk;      // [grid + 1]: each CTA's span of wblk
    int resident;
    const float *bias, *xtab, *bo;
    float *part;             // [npieces, 32] partial sums
    float *h, *c;            // [2, H] (par selects), [H]
    unsigned long long *bar; // the grid barrier's counter, zero at launch
    const int *feed;
    double temperature, top_p;
    int top_k;
    uint64_t rng[4];
    unsigned char *out;
    float *logits;           // [steps, 256] or NULL
    uint64_t *rng_out;
};

// Shared memory a CTA needs: h, the draw's scratch, the rows' piece lists (npieces), and its
// resident blocks (0 when streamed).
size_t gen_smem_bytes(int H, int npieces, size_t resident_blocks, int bf);
// Units the cell phase covers: a warp runs 8 units' 4 gates, one pass.
static inline int gen_max_units(int grid) { return grid * GEN_WARPS * 8; }
// CTAs of the loop an SM holds with smem bytes of shared memory (0: the launch cannot run).
template <typename W>
int gen_loop_ctas_per_sm(size_t smem);
template <typename W>
void gen_loop_launch(const GenLaunch &a, int grid, size_t smem);
template <typename W>
void gen_gather(W *dst, const int *src, int nblk, const real *wh, const real *wo, int H);
