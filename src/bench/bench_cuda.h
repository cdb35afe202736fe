// bench_cuda.h: the device timing behind the GPU tables of `swlstm bench` (src/bench/);
// cuda/bench/bench.cu, or no_cuda.c in a build without CUDA.
#pragma once
#include <stddef.h>
#include "base/common.h"
#include "sparse/bsmat.h"
#ifdef __cplusplus
extern "C" {
#endif

// One timed call; `iter` counts calls so that inputs can rotate.
typedef void (*BenchFn)(void *arg, int iter);
// Milliseconds per call after `warmup` calls: the median over groups of 10 calls issued back
// to back between two CUDA events (launch gaps hide behind running work, as in training).
double cb_time_ms(BenchFn fn, void *arg, int warmup, int reps);
// Device-to-device copy bandwidth, bytes read plus written, GB/s (median of a few 1 GB copies).
double cb_copy_gbps(void);
// L2 read bandwidth, GB/s: a buffer of a quarter of L2 read again and again by every SM.
double cb_l2_gbps(size_t l2_bytes);
// Read bandwidth over a working set of `bytes` read again and again, GB/s (the L2's below its
// size, the HBM's above).
double cb_read_gbps(size_t bytes);
// Bytes a second, GB/s, that reach the SMs' shared memory when 16 KB bulk copies out of L2
// are each multicast to the `cluster` CTAs (1, 2, 4 or 8) of a cluster (multicast.cu); the L2
// reads them at 1/cluster of that; *ctas: the CTAs (one an SM) that ran. < 0 where no such
// cluster fits.
double cb_multicast_gbps(int cluster, int *ctas);
// Bytes a second, GB/s, that reach the SMs' shared memory when each SM streams 16 KB stages
// out of L2 through a ring of `stages` slots (4, 8 or 12): mode 0, a bulk copy a stage; 1,
// four bulk copies of 4 KB; 2, a warpgroup's 16-byte cp.async copies (ring.cu). < 0: no such mode.
double cb_ring_gbps(int mode, int stages, int *ctas);
// A layer's weights as the wgmma step reads them, host fp32: w, W_h's blocks (32 x 32 row-major;
// list entry p's gate g at block p + g * nnz), xtab, layer 0's input table plus the bias [256, 4H].
typedef struct {
    const float *w, *xtab;
} CbStepWeights;
// `swlstm bench --wgmma` (wgmma_step.cu): us a time step of the wgmma forward step
// (cuda/wgmma/wg_fwd.h) over a window of `steps`, W_h's mask as lists by block row (rowptr,
// col), step t's input bytes tok[t * B ..] (host; NULL: row b reads byte (37 b + 11) mod 256
// at every step, all distinct), on weights wt (NULL: random); < 0 where the kernel does not
// run the shape or the device.
double cb_wgmma_fwd_us(const int *rowptr, const int *col, int H, int B, int steps, const int *tok, const CbStepWeights *wt);
// The same of the backward data step (cuda/wgmma/wg_bwd.h), the mask as lists by block
// column (colptr, row: block rows; blk: each entry's block of gate 0 in wt's layout, or in the
// random weights'), dz, dh, dc, c and the gates random; < 0 as above.
double cb_wgmma_bwd_us(const int *colptr, const int *row, const int *blk, int H, int B, int steps, const CbStepWeights *wt);
// The window's weight gradient dvals += dz^T h over N rows of a gate-stacked block-32 W_h (w,
// uploaded to the CUDA backend; dz, h random bf16): ms a call of the wgmma kernel
// (cuda/wgmma/wg_dw.h), and in *mma the bulk-copy mma.sync kernel's (bsmm_bwd_weight); < 0
// where wgmma does not run the shape or the device.
double cb_wgmma_dw_ms(const BsMat *w, int N, double *mma);
// cuBLAS dense y[N,R] = x[N,C] W^T with W stored in bf16 (bf16 = 1) or fp32, fp32 accumulate.
double cb_dense_ms(int N, int R, int C, int bf16, int reps);
// cuSPARSE BSR SpMM of the same product with w's blocks (vals: `nsets` rotated fp32 weight
// sets on the device). Returns < 0 and says why in `why` when cuSPARSE refuses the problem.
double cb_sparse_ms(const BsMat *w, const real *vals, int nsets, int N, int bf16, int reps, char *why, size_t whylen);
// "NVIDIA H100 80GB HBM3, 132 SMs, 50 MB L2"
void cb_device(char *buf, size_t n, size_t *l2_bytes);
// How the device side prints a table it measures: src/bench/table.h's functions, handed down
// (cuda/bench sits below src/bench).
typedef struct {
    void (*head)(const char *name, const char *head);
    void (*row)(const char *fmt, ...);
    void (*note)(const char *fmt, ...);
} TablePrint;
// `swlstm bench --sync` (sync.cu): the table of microseconds per dependent step under each
// way of ordering a chain of small dependent ops. Returns 1 if a mechanism failed its check.
int cb_sync(const TablePrint *tp);
// GPU memory in use on the device (all allocations of this process and others), GiB.
double cb_mem_used_gib(void);

#ifdef __cplusplus
}
#endif
