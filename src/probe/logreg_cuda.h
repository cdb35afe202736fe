// logreg_cuda.h: the solver's products on the GPU (cuda/probe/logreg.cu), twins of the CPU
// ones: the solver's matrix E is kept on the device in double and multiplied with cuBLAS
// gemv/gemm; the Newton loops (L2's CG, L1's quadratic subproblem), preconditioner and line
// search stay the CPU code's, so the GPU path solves the same problem to the same tolerance.
// CUDA builds only.
#pragma once
#include "probe/logreg_impl.h"
#ifdef __cplusplus
extern "C" {
#endif

LrCuda *lr_cuda_new(const LrSolver *s);   // uploads E; one per thread (own stream and handle)
void lr_cuda_free(LrCuda *g);
// Twin of hess_vec (logreg_l2.c): q, xp and u of k from p and D.
void lr_cuda_hess_vec(LrCuda *g, const LrSolver *s, Work *k);
// Twin of the gradient's column loop (logreg.c): g[j] = sum_i e_ij r_i, h[j] = sum_i e_ij^2 D_i.
void lr_cuda_grad_hess(LrCuda *g, const LrSolver *s, Work *k);
// Twin of the margins in work_init (logreg.c): z = E w + b.
void lr_cuda_margins(LrCuda *g, const LrSolver *s, const double *w, double b, double *z);
// Twin of gram_block (logreg_gram.c): H [(m+1)^2] = R^T R, R the columns cols of E and a column
// of ones, each row i times sqrt(D_i).
void lr_cuda_gram(LrCuda *g, const LrSolver *s, const int *cols, int m, const double *D, double *H);
// Twin of gram_times (logreg_l2.c): T [n][l] = E V, Y [d][l] = E^T T for V [d][l].
void lr_cuda_gram_times(LrCuda *g, const LrSolver *s, const real *V, int l, real *T, real *Y);

#ifdef __cplusplus
}
#endif
