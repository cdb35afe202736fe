// lstm_seq.cuh: the recurrent engine's step kernels (lstm_seq.cu: a launch per time step)
// and what the host side (lstm_seq_host.cu) passes them. A step of a whole layer is a set of tiles: for each
// hidden block j (32 units) and TM rows, the four gates' block rows of W_h share one mask,
// so one CTA reads each activation slab once for all four gate blocks and then applies the
// cell in its epilogue: z, c and h never round-trip through a separate kernel.
#pragma once
#include "bsmm/bulk.cuh"
#include "bsmm/bsmat_dev.cuh"
#include "ops/ops.cuh"

#define SQ_BS 32        // the engine's block size (8 and 16 run step by step)
#define SQ_PIECE 32     // most list entries per CTA; longer lists (hubs) are cut into pieces

// Epilogues: EPI_CELL applies the cell (fwd) or its gradient (bwd); EPI_SUM only adds the
// product in (z_t += W_h h_t, or dh += dz W_h), for layer norm, whose row statistics need
// the whole row first, and for the carried state's gradient.
enum { EPI_CELL, EPI_SUM };

typedef struct {
    const MmPiece *pieces;  // one per blockIdx.x (bsmat_dev.cuh), over the mask's lists
    const int *idx, *blk;   // entry p: slab idx[p] (fwd: block column, bwd: block row), gate-0 block blk[p]
    long gstride;           // stored blocks from one gate's copy of a block to the next (nnzb / 4)
    const void *w;          // weights, bf16 or float like the kernel's T
    const void *in;         // fwd: h_t [B, H]; bwd: dz_{t+1} [B, 4H]; NULL: no product (bwd at t = T-1)
    const real *xtab;       // fwd, layer 0: row b of z_t's input projection is row tok[b] of
    const int *tok;         // xtab [256, 4H] (SeqArgs); xtab NULL: z_t holds the projection
    float *part;            // [piece][gridDim.y][tile] partial tiles of cut lists
    int *count;             // [list][gridDim.y] pieces finished (back to 0 when done)
    int B, H, epi;
    int plane;              // the step of `in` within its window (fwd t, bwd t + 1): the tensor maps' third index
    const real *bias;
    // fwd at step t: z = z_t (input projection in; the full pre-activation out with EPI_SUM),
    // act = act_t, c0 = c_t, c1 = c_{t+1}, h1 = h_{t+1}, hb1 = its bf16 copy (bf16 mode)
    // bwd at step t: dh = dh_{t+1} (upstream in, total out), dc running, act = act_t,
    // c0 = c_t, c1 = c_{t+1}, dz = dz_t, or in bf16 mode dzb = dz_t in bf16 instead
    real *z, *act, *c0, *c1, *h1, *dh, *dc, *dz;
    bf16 *hb1, *dzb;
    bf16 *actb;             // bf16 mode, cell fused: act_t instead, a unit's 4 gates side by side ([B][H][4])
    real *dbpart;           // bwd EPI_CELL: [gridDim.y, 4H] sums of dz_t over each tile's rows (for dbias)
} SeqStep;

template <typename P>
__host__ __device__ inline P *seq_adv(P *p, long n) { return p ? p + n : p; }

// Step t's arguments from the window's: `w` holds step 0's (fwd), or in bwd those of step 0
// with in = dz_0 and dh = dh_0. The backward runs t = T-1 (no product: nothing comes back
// from t = T) down to t = -1, the carried state's dh_0 += dz_0 W_h. esize: bytes of an
// element of in and x (the kernels' type).
__host__ __device__ inline SeqStep seq_at(SeqStep w, int t, bool fwd, int T, int esize, int ntiles) {
    const long BH = (long)w.B * w.H, BG = 4 * BH;
    w.plane = fwd ? t : t + 1;
    if (fwd) {
        w.in = (const char *)w.in + t * BH * esize;
        w.tok += t * w.B;
    } else {
        w.in = t == T - 1 ? NULL : (const char *)w.in + (t + 1) * BG * esize;
        w.dh += (t + 1) * BH;
        if (t < 0) {
            w.epi = EPI_SUM;
            return w;
        }
    }
    w.z = seq_adv(w.z, t * BG), w.act = seq_adv(w.act, t * BG), w.actb = seq_adv(w.actb, t * BG);
    w.dz = seq_adv(w.dz, t * BG), w.dzb = seq_adv(w.dzb, t * BG);
    w.c0 += t * BH, w.c1 += t * BH;
    w.h1 = seq_adv(w.h1, t * BH), w.hb1 = seq_adv(w.hb1, t * BH);
    w.dbpart = seq_adv(w.dbpart, (long)t * ntiles * 4 * w.H);
    return w;
}

// The tensor maps the bf16 backward step kernel reads through (lstm_seq_bulk.cuh): dz over
// the window's [T][B][4H] in boxes of TM rows x 32 of one step (SeqStep plane); w over W_h's
// stored blocks as rows of 32.
typedef struct {
    CUtensorMap dz, w;
} SeqMaps;
SeqMaps seq_maps(const bf16 *dz, int T, int B, int H, const bf16 *w, long nnzb);

// Launches one step on `stream`: BF selects bf16 tensor cores, FWD the direction; the bf16
// backward's tile copies through the bulk copy engine, over maps (else NULL). ring (forward
// only; SeqPlan.ring): 0 where the grid picks, else RING_SHALLOW + 1 or RING_DEEP + 1.
template <bool BF, bool FWD>
void seq_step_launch(const SeqStep &a, int npieces, cudaStream_t stream, const SeqMaps *maps, int ring);
// CTAs per SM of the step kernel that a direction runs for B rows (the forward's shallow ring).
int seq_step_ctas_per_sm(bool bf, bool fwd, int B);
// Rows per CTA for a batch of B rows (32, 64 or 128), both directions.
int seq_tm(int B);
