// logreg.cu: the probe solver's matrix products on the GPU (see src/probe/logreg_cuda.h).
// E [n][d] row-major is, to cuBLAS, the column-major d x n matrix Et (ld = d).
#include "base/state.cuh"
#include "probe/logreg_cuda.h"

struct LrCuda {
    cudaStream_t st;
    cublasHandle_t blas;
    double *E;            // [n][d]
    double *vn, *vd;      // [n], [d] vectors
    double *hd;           // [d]
    double *V, *T, *Y;    // gram_times: [d][l], [n][l], [d][l] (allocated on first use)
    int l;
    double *R, *H;        // lr_cuda_gram: [n][cap + 1], [(cap + 1)^2] (grown on use)
    int *cols, cap;
};

LrCuda *lr_cuda_new(const LrSolver *s) {
    LrCuda *g = (LrCuda *)xcalloc(1, sizeof *g);
    size_t n = s->n, d = s->d, rows = ((size_t)1 << 22) / d + 1;
    CUDA_CHECK(cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&g->blas));
    CUBLAS_CHECK(cublasSetStream(g->blas, g->st));
    CUDA_CHECK(cudaMalloc(&g->E, n * d * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&g->vn, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&g->vd, d * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&g->hd, d * sizeof(double)));
    double *buf = (double *)xmalloc(rows * d * sizeof(double));
    for (size_t i0 = 0; i0 < n; i0 += rows) {   // in slices: the host copy stays small
        size_t m = n - i0 < rows ? n - i0 : rows;
        for (size_t k = 0; k < m * d; k++) buf[k] = s->xr[i0 * d + k];
        CUDA_CHECK(cudaMemcpyAsync(g->E + i0 * d, buf, m * d * sizeof(double), cudaMemcpyHostToDevice, g->st));
        CUDA_CHECK(cudaStreamSynchronize(g->st));
    }
    free(buf);
    return g;
}

void lr_cuda_free(LrCuda *g) {
    if (!g) return;
    cudaFree(g->E); cudaFree(g->vn); cudaFree(g->vd); cudaFree(g->hd);
    cudaFree(g->V); cudaFree(g->T); cudaFree(g->Y);
    cudaFree(g->R); cudaFree(g->H); cudaFree(g->cols);
    cublasDestroy(g->blas);
    cudaStreamDestroy(g->st);
    free(g);
}

static void up(LrCuda *g, double *dst, const double *src, size_t n) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(double), cudaMemcpyHostToDevice, g->st));
}
static void down(LrCuda *g, double *dst, const double *src, size_t n) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(double), cudaMemcpyDeviceToHost, g->st));
    CUDA_CHECK(cudaStreamSynchronize(g->st));
}

// out [n] = E x [d] (cuBLAS: Et^T x)
static void e_times(LrCuda *g, int n, int d, const double *x, double *out) {
    const double one = 1, zero = 0;
    CUBLAS_CHECK(cublasDgemv(g->blas, CUBLAS_OP_T, d, n, &one, g->E, d, x, 1, &zero, out, 1));
}
// out [d] = E^T x [n]
static void et_times(LrCuda *g, int n, int d, const double *x, double *out) {
    const double one = 1, zero = 0;
    CUBLAS_CHECK(cublasDgemv(g->blas, CUBLAS_OP_N, d, n, &one, g->E, d, x, 1, &zero, out, 1));
}

void lr_cuda_hess_vec(LrCuda *g, const LrSolver *s, Work *k) {
    int n = s->n, d = s->d;
    up(g, g->vd, k->p, d);
    e_times(g, n, d, g->vd, g->vn);
    down(g, k->xp, g->vn, n);
    for (int i = 0; i < n; i++) k->xp[i] += k->p[d], k->u[i] = k->D[i] * k->xp[i];
    up(g, g->vn, k->u, n);
    et_times(g, n, d, g->vn, g->vd);
    down(g, k->q, g->vd, d);
    k->q[d] = HMIN * k->p[d];
    for (int j = 0; j < d; j++) k->q[j] += k->p[j];
    for (int i = 0; i < n; i++) k->q[d] += k->u[i];
}

// h[j] = sum_i E[i][j]^2 D[i]: one thread per column, rows in order (deterministic).
__global__ void col_sq_kernel(double *h, const double *E, const double *D, int n, int d) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d) return;
    double acc = 0;
    for (int i = 0; i < n; i++) {
        double e = E[(size_t)i * d + j];
        acc += e * e * D[i];
    }
    h[j] = acc;
}

void lr_cuda_grad_hess(LrCuda *g, const LrSolver *s, Work *k) {
    int n = s->n, d = s->d;
    up(g, g->vn, k->r, n);
    et_times(g, n, d, g->vn, g->vd);
    down(g, k->g, g->vd, d);
    up(g, g->vn, k->D, n);
    col_sq_kernel<<<(d + 127) / 128, 128, 0, g->st>>>(g->hd, g->E, g->vn, n, d);
    LAUNCH_CHECK();
    down(g, k->h, g->hd, d);
}

void lr_cuda_margins(LrCuda *g, const LrSolver *s, const double *w, double b, double *z) {
    up(g, g->vd, w, s->d);
    e_times(g, s->n, s->d, g->vd, g->vn);
    down(g, z, g->vn, s->n);
    for (int i = 0; i < s->n; i++) z[i] += b;
}

// R [n][m + 1]: row i of E on cols, then 1, times sqrt(D_i).
__global__ void gram_rows_kernel(double *R, const double *E, const int *cols, const double *D, int n, int d, int m) {
    const long e = blockIdx.x * (long)blockDim.x + threadIdx.x, m1 = m + 1;
    if (e >= n * m1) return;
    const long i = e / m1, a = e % m1;
    R[e] = sqrt(D[i]) * (a < m ? E[i * d + cols[a]] : 1.0);
}

void lr_cuda_gram(LrCuda *g, const LrSolver *s, const int *cols, int m, const double *D, double *H) {
    const int n = s->n, m1 = m + 1;
    if (m > g->cap || !g->R) {
        cudaFree(g->R); cudaFree(g->H); cudaFree(g->cols);
        g->cap = m > 2 * g->cap ? m : 2 * g->cap < s->d ? 2 * g->cap : s->d;
        CUDA_CHECK(cudaMalloc(&g->R, (size_t)n * (g->cap + 1) * sizeof(double)));
        CUDA_CHECK(cudaMalloc(&g->H, (size_t)(g->cap + 1) * (g->cap + 1) * sizeof(double)));
        CUDA_CHECK(cudaMalloc(&g->cols, (size_t)(g->cap + 1) * sizeof(int)));
    }
    CUDA_CHECK(cudaMemcpyAsync(g->cols, cols, m * sizeof(int), cudaMemcpyHostToDevice, g->st));
    up(g, g->vn, D, n);
    const long total = (long)n * m1;
    gram_rows_kernel<<<(unsigned)((total + 255) / 256), 256, 0, g->st>>>(g->R, g->E, g->cols, g->vn, n, s->d, m);
    LAUNCH_CHECK();
    // Row-major R is the column-major m1 x n matrix Rt: H = Rt Rt^T, symmetric, so either order.
    const double one = 1, zero = 0;
    CUBLAS_CHECK(cublasDgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, m1, m1, n, &one, g->R, m1, g->R, m1, &zero, g->H, m1));
    down(g, H, g->H, (size_t)m1 * m1);
}

void lr_cuda_gram_times(LrCuda *g, const LrSolver *s, const real *V, int l, real *T, real *Y) {
    int n = s->n, d = s->d;
    if (g->l != l) {
        cudaFree(g->V); cudaFree(g->T); cudaFree(g->Y);
        CUDA_CHECK(cudaMalloc(&g->V, (size_t)d * l * sizeof(double)));
        CUDA_CHECK(cudaMalloc(&g->T, (size_t)n * l * sizeof(double)));
        CUDA_CHECK(cudaMalloc(&g->Y, (size_t)d * l * sizeof(double)));
        g->l = l;
    }
    double *h = (double *)xmalloc((size_t)(n > d ? n : d) * l * sizeof(double));
    for (size_t i = 0; i < (size_t)d * l; i++) h[i] = V[i];
    up(g, g->V, h, (size_t)d * l);
    const double one = 1, zero = 0;
    // T [n][l] = E V: column-major T (l x n) = V (l x d) Et (d x n)
    CUBLAS_CHECK(cublasDgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, l, n, d, &one, g->V, l, g->E, d, &zero, g->T, l));
    // Y [d][l] = E^T T: column-major Y (l x d) = T (l x n) Et^T (n x d)
    CUBLAS_CHECK(cublasDgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, l, d, n, &one, g->T, l, g->E, d, &zero, g->Y, l));
    down(g, h, g->Y, (size_t)d * l);
    for (size_t i = 0; i < (size_t)d * l; i++) Y[i] = (real)h[i];
    down(g, h, g->T, (size_t)n * l);
    for (size_t i = 0; i < (size_t)n * l; i++) T[i] = (real)h[i];
    free(h);
}
