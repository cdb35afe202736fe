// lstm_seq_host.cuh: the recurrent engine's host-side state (lstm_seq_host.cu), shared with
// its path for dense masks (lstm_seq_dense.cu).
#pragma once
#include "engine/lstm_seq.cuh"
#include "engine/seq_plan.h"
#include "wgmma/wg_bwd.h"
#include "wgmma/wg_dw.h"
#include "wgmma/wg_fwd.h"

typedef struct {
    cudaGraphExec_t exec;
    int T;
    const void *w;  // the weights it was captured with (a new bf16 shadow means a new graph)
} Graph;

typedef struct {
    SeqArgs a;
    SeqPlan plan;         // {0, 0} (by shape) but in the tests (seq_plan.h)
    int bf, nlists;
    long gstride;
    MmPiece *pieces[2];   // [0] bwd (column lists), [1] fwd (row lists), each over the mask
    int npieces[2];
    int *idx[2], *blk[2];
    float *part;
    int *count;
    bf16 *hb, *dzb;       // bf16 mode: h [(T+1)B, H] and dz [TB, 4H] as the kernels read them (dz at the first bwd)
    bf16 *actb;           // dz_key: the gate activations [T][B][H][4] (SeqStep actb), a.act a key
    float *dbpart;        // without layer norm: [T][row tiles][4H] column sums of dz, summed into dbias
    cudaStream_t stream;
    Graph g[2];
    int z_key, dz_key;    // a.z / a.dz (and a.act) are address space only (fp32_or_key)
    int dense;            // every block of the mask present: the steps run on cuBLAS (lstm_seq_dense.cu)
    void *wd;             // dense: W_h row-major [4H, H], bf16 or float like the products
    float *dwd;           // dense: dW_h row-major [4H, H] of the window
    WgFwd *wg;            // engine = wgmma where it runs the layer: the forward steps (wg_fwd.h)
    WgBwd *wgb;           // and the backward's data steps (wg_bwd.h) and dW_h (wg_dw.h), with wg
    bf16 *hpk;            // wg: h_t and h_{t+1} as its packed images, two of B * H
    bf16 *dzpk;           // wgb: dz_{t+1} and dz_t as its packed images, two of B * 4H
    float *xb;            // wg: the input table plus the bias [256, 4H]
} Seq;

// The products' operands: h_t [B, H] and dz_t [B, 4H] (t = 0: the whole window from step 0)
// as the kernels and cuBLAS read them, the bf16 copies in bf16 mode.
static inline const void *seq_h_operand(const Seq *s, int t) {
    size_t BH = (size_t)s->a.B * s->a.H;
    return s->bf ? (const void *)(s->hb + t * BH) : (const void *)(s->a.h + t * BH);
}
static inline const void *seq_dz_operand(const Seq *s, int t) {
    size_t BG = (size_t)s->a.B * 4 * s->a.H;
    return s->bf ? (const void *)(s->dzb + t * BG) : (const void *)(s->a.dz + t * BG);
}

// The dense path: a mask with every block present runs each step's recurrent product as one
// cuBLAS GEMM on a row-major copy of W_h, the cell as the per-step kernels (lstm.cu) do, and
// dW_h as one GEMM over the window.
void seq_dense_alloc(Seq *s);
template <bool BF>
void seq_dense_record_fwd(const Seq *s, const void *w, int T);
template <bool BF>
void seq_dense_record_bwd(const Seq *s, int T);
template <bool BF>
void seq_dense_bwd_weight(const Seq *s, int T);
