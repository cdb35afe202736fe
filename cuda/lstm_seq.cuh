// lstm_seq.cuh: the recurrent engine's step kernels (lstm_seq.cu) and what the host side
// (lstm_seq_host.cu) passes them. One launch runs one time step of a whole layer: for each
// hidden block j (32 units) and TM rows, the four gates' block rows of W_h share one mask,
// so one CTA reads each activation slab once for all four gate blocks and then applies the
// cell in its epilogue: z, c and h never round-trip through a separate kernel.
#pragma once
#include "common.cuh"

#define SQ_BS 32        // the engine's block size (8 and 16 run step by step)
#define SQ_PIECE 16     // most list entries per CTA; longer lists (hubs) are cut into pieces

// Epilogues: EPI_CELL applies the cell (fwd) or its gradient (bwd); EPI_SUM only adds the
// product in (z_t += W_h h_t, or dh += dz W_h), for layer norm, whose row statistics need
// the whole row first, and for the carried state's gradient.
enum { EPI_CELL, EPI_SUM };

typedef struct {
    const MmPiece *pieces;  // one per blockIdx.x (common.cuh), over the mask's lists
    const int *idx, *blk;   // entry p: slab idx[p] (fwd: block column, bwd: block row), gate-0 block blk[p]
    long gstride;           // stored blocks from one gate's copy of a block to the next (nnzb / 4)
    const void *w;          // weights, bf16 or float like the kernel's T
    const void *in;         // fwd: h_t [B, H]; bwd: dz_{t+1} [B, 4H]; NULL: no product (bwd at t = T-1)
    const void *x, *wx;     // fwd with the input fused: x_t [B, E] and W_x [4H, E] (a piece of rank 0
    int E;                  // takes their E/32 slabs after its list); x NULL: z_t holds the projection
    float *part;            // [piece][gridDim.y][tile] partial tiles of cut lists
    int *count;             // [list][gridDim.y] pieces finished (back to 0 when done)
    int B, H, epi;
    const real *bias;
    // fwd at step t: z = z_t (input projection in; the full pre-activation out with EPI_SUM),
    // act = act_t, c0 = c_t, c1 = c_{t+1}, h1 = h_{t+1}, hb1 = its bf16 copy (bf16 mode)
    // bwd at step t: dh = dh_{t+1} (upstream in, total out), dc running, act = act_t,
    // c0 = c_t, c1 = c_{t+1}, dz = dz_t, or in bf16 mode dzb = dz_t in bf16 instead
    real *z, *act, *c0, *c1, *h1, *dh, *dc, *dz;
    bf16 *hb1, *dzb;
    real *dbpart;           // bwd EPI_CELL: [gridDim.y, 4H] sums of dz_t over each tile's rows (for dbias)
} SeqStep;

// Launches one step on `stream`: BF selects bf16 tensor cores, FWD the direction.
template <bool BF, bool FWD>
void seq_step_launch(const SeqStep &a, int npieces, cudaStream_t stream);
// Rows per CTA for a batch of B rows (32, 64 or 128), both directions.
int seq_tm(int B);
