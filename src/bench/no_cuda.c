// no_cuda.c: bench_cuda.h in a build without CUDA: the device timing the GPU tables need
// says so and exits (the probe's table runs on either build).
#ifndef SW_CUDA
#include "base/common.h"
#include "bench/bench_cuda.h"

__attribute__((noreturn)) static void no_cuda(void) {
    die("bench: this swlstm was built without CUDA (nvcc was not found by make); benchmarks need a GPU build "
        "(bench --probe runs on either)");
}

double cb_time_ms(BenchFn fn, void *arg, int warmup, int reps) { no_cuda(); }
double cb_copy_gbps(void) { no_cuda(); }
double cb_l2_gbps(size_t l2_bytes) { no_cuda(); }
double cb_read_gbps(size_t bytes) { no_cuda(); }
double cb_multicast_gbps(int cluster, int *ctas) { no_cuda(); }
double cb_ring_gbps(int mode, int stages, int *ctas) { no_cuda(); }
double cb_wgmma_fwd_us(const int *rowptr, const int *col, int H, int B, int steps, const int *tok, const CbStepWeights *wt) {
    no_cuda();
}
double cb_wgmma_bwd_us(const int *colptr, const int *row, const int *blk, int H, int B, int steps, const CbStepWeights *wt) {
    no_cuda();
}
double cb_wgmma_dw_ms(const BsMat *w, int N, double *mma) { no_cuda(); }
double cb_dense_ms(int N, int R, int C, int bf16, int reps) { no_cuda(); }
double cb_sparse_ms(const BsMat *w, const real *vals, int nsets, int N, int bf16, int reps, char *why, size_t whylen) {
    no_cuda();
}
void cb_device(char *buf, size_t n, size_t *l2_bytes) { no_cuda(); }
double cb_mem_used_gib(void) { no_cuda(); }
int cb_sync(const TablePrint *tp) { no_cuda(); }
#endif
