// reduce.cu: deterministic reductions. sumsq (CPU twin: sumsq_cpu in src/ops/adam_cpu.c) and the
// column sums behind dbias (matmul_bwd, lstm_bwd).
#include "ops/reduce.cuh"

#define SUMSQ_BLOCKS 1024

// part[b] = sum of x[i]^2 over i = b*256 + t (mod the grid), in double.
__global__ void sumsq_part_kernel(double *part, const real *x, size_t n) {
    __shared__ double buf[32];
    double s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * (double)x[i];
    s = block_sum(s, buf);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void sum_parts_kernel(double *out, const double *part, int n) {
    __shared__ double buf[32];
    double s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += part[i];
    s = block_sum(s, buf);
    if (threadIdx.x == 0) *out = s;
}

// The grid is fixed (not sized from the device), so the result is the same on every GPU.
double sumsq_cuda(const real *x, size_t n) {
    if (!n) return 0;
    double *part = (double *)cuda_scratch(SCRATCH_SUMSQ, (SUMSQ_BLOCKS + 1) * sizeof(double)), r;
    sumsq_part_kernel<<<SUMSQ_BLOCKS, 256, 0, g_cuda.stream>>>(part, x, n);
    LAUNCH_CHECK();
    sum_parts_kernel<<<1, 256, 0, g_cuda.stream>>>(part + SUMSQ_BLOCKS, part, SUMSQ_BLOCKS);
    LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpy(&r, part + SUMSQ_BLOCKS, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

// out[y*R + r] (=|+=) sum of in[n][r] over the rows of slice y, [y*rows, (y+1)*rows) cut at N,
// in col_sum's order.
__global__ void colsum_kernel(real *out, const real *in, long N, int R, long rows, int acc) {
    const int r = blockIdx.x * 32 + threadIdx.x;
    const long n0 = blockIdx.y * rows, n1 = n0 + rows < N ? n0 + rows : N;
    float s = col_sum([&](long n, int c) { return in[n * R + c]; }, n0, n1, r, R);
    if (threadIdx.y || r >= R) return;
    real *o = out + (long)blockIdx.y * R + r;
    *o = acc ? *o + s : s;
}

// Tall inputs are cut into row slices summed side by side, then the slice sums are added in
// order: parallel, and still one fixed order for a given N.
#define COLSUM_SLICE_ROWS (32 * COL_LANES)  // 32 rows a thread
static long colsum_rows(int N) { return N > 65535L * COLSUM_SLICE_ROWS ? cdiv(N, 65535) : COLSUM_SLICE_ROWS; }

void colsum_reserve(int N, int R) {
    int slices = cdiv(N, colsum_rows(N));
    if (slices > 1) cuda_scratch(SCRATCH_COLSUM, sizeof(real) * (size_t)slices * R);
}

void colsum_acc(real *out, const real *in, int N, int R, cudaStream_t stream) {
    if (N <= 0 || R <= 0) return;
    long rows = colsum_rows(N);
    int slices = cdiv(N, rows);
    if (slices == 1) {
        colsum_kernel<<<dim3(cdiv(R, 32), 1), col_threads(), 0, stream>>>(out, in, N, R, N, 1);
        LAUNCH_CHECK();
        return;
    }
    real *part = (real *)cuda_scratch(SCRATCH_COLSUM, sizeof(real) * (size_t)slices * R);
    colsum_kernel<<<dim3(cdiv(R, 32), slices), col_threads(), 0, stream>>>(part, in, N, R, rows, 0);
    LAUNCH_CHECK();
    colsum_kernel<<<dim3(cdiv(R, 32), 1), col_threads(), 0, stream>>>(out, part, slices, R, slices, 1);
    LAUNCH_CHECK();
}
