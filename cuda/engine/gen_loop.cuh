// gen_loop.cuh: the sampling loop's launch arguments, shared by its kernel (gen_loop.cu) and
// its host side (gen_host.cu).
#pragma once
#include "bsmm/bsmat_dev.cuh"

enum { GEN_THREADS = 256, GEN_WARPS = GEN_THREADS / 32, GEN_BLOCK = 32 * 32, GEN_MAX_STAGES = SW_MAX_DEPTH + 1 };

// One product of a time step. Stage 0 reads h: [W_h; W_o] for the plain cell, [W_h0; W_o]
// for the mLSTM (W_o cut into 32 x 32 blocks, its 8 block rows last: the mLSTM's in chunks of
// H/32/nq blocks); the mLSTM's stage j (1 .. D-1) is W_hj and stage D the gates'. The plain
// loop runs a stage as pieces of block rows dealt to warps (sparse/piece_plan.h), the mLSTM's
// as rows dealt whole to CTAs (its plan's pieces), each CTA's span cut evenly over its warps.
// Blocks lie in wblk in worker order, so that each CTA's blocks are one span, which it holds
// in shared memory where it fits and reads from L2/HBM otherwise.
struct GenStage {
    const void *wblk;        // [nblk, 32, 32], float or bf16
    const int *cols;         // [nblk] block column
    const int *worker_ptr;   // [workers + 1] pieces per worker: warps (plain), CTAs (mLSTM)
    const int *piece_blk;    // [npieces + 1]: first block in wblk (the next piece's is its end)
    const int *piece_row;    // [npieces] each piece's block row (mLSTM)
    const int *row_ptr, *row_piece;  // plain: each block row's pieces in block order (partial sums)
    const int *cta_blk;      // [grid + 1]: each CTA's span of wblk
    const int *cta_col_ptr, *cta_col;  // mLSTM: [grid + 1], and the block columns each CTA's span reads (its input's only rows it needs)
    const int *res;          // mLSTM: [grid] each CTA's blocks a warp holds in shared memory (the first of its run)
    float *part;             // plain: [npieces, 32] partial sums
    // mLSTM: block rows 0 .. nfin-1 are finished by the CTA that owns them: their values into
    // out [nfin * 32], their (sum, sum of squares) into stat [nfin]; stage 0's rows from nfin
    // on are W_o's chunks, into GenLaunch.hpart.
    float *out;
    double2 *stat;
    int rows, npieces, resident, nfin, most_span, most_seg, most_cols;  // most_*: the largest CTA's blocks, pieces, columns (mLSTM)
    unsigned smem_off;       // plain, where resident
};

struct GenLaunch {
    int H, D, steps, nfeed, nsample, par;  // D: the mLSTM's depth, 0 for the plain cell; par: which half of h holds the state
    GenStage st[GEN_MAX_STAGES];           // D + 1 of them (1 for the plain cell)
    const float *bias, *xtab, *bo;
    const float *gain, *sln, *mtab;  // mLSTM: gates' norm gains [4H], internal norms [D][gain, bias][H], m and a [2][256][H]
    float *hpart;            // mLSTM: W_o's chunk sums [8 * nq, 32], a head row's nq chunks in column order
    int nq, ring;            // mLSTM: chunks a head row; whether warps stream blocks through rings
    unsigned off[7];         // mLSTM: shared memory offsets (gen_mlstm_layout)
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

// Shared memory before the resident blocks: h, the draw's scratch, stage 0's piece lists
// (nrows + 1 + npieces ints), rounded up to 16 bytes.
size_t gen_head_bytes(int H, int nrows0, int npieces0);
// Units the cell phase covers: a warp runs 8 units' 4 gates, one pass.
static inline int gen_max_units(int grid) { return grid * GEN_WARPS * 8; }
// CTAs of the loop an SM holds with smem bytes of shared memory (0: the launch cannot run).
template <typename W>
int gen_loop_ctas_per_sm(size_t smem);
template <typename W>
void gen_loop_launch(const GenLaunch &a, int grid, size_t smem);
// The mLSTM loop (gen_mlstm.cu): fills L.off from L.H, L.D and the stages' most_*; returns
// the shared memory bytes before the resident blocks (the rings included where L.ring).
size_t gen_mlstm_layout(GenLaunch *L);
template <typename W>
int gen_mlstm_ctas_per_sm(size_t smem);
template <typename W>
void gen_mlstm_launch(const GenLaunch &a, int grid, size_t smem);
template <typename W>
void gen_gather(W *dst, const int *src, int nblk, const real *wh, const real *wo, int H);
