// logreg.h: binary logistic regression for linear probes, in double precision.
// Objective (sklearn's convention): C * sum_i logloss_i + penalty(w), penalty
// 0.5*||w||^2 (L2) or ||w||_1 (L1); the intercept is not penalised. Features are
// standardised with the training set's mean and std (std 0 -> 1); weights live in those units.
// Both penalties take Newton steps and a backtracking (Armijo) line search until the KKT
// conditions hold to a tight tolerance. L2 solves each step by conjugate gradients,
// preconditioned by the explicit Hessian or a spectral model (logreg_l2.c; products on the
// GPU with logreg_cuda.h); L1 minimises newGLMNET's quadratic model plus |w|_1 exactly on a
// working set of coordinates (logreg_l1.c, logreg_l1_qp.c) with the explicit Hessian block
// (logreg_gram.c, or the GPU's).
#pragma once
#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PEN_L2 = 0, PEN_L1 = 1 } Penalty;

// Rows idx[0..n) of the row-major matrix X [*, d]; y[row] is 0 or 1.
typedef struct {
    const float *X;
    int d;
    const int *y;
    const int *idx;
    int n;
} LrSet;

typedef struct LrHess LrHess;
typedef struct {
    int d;
    double *w, b;       // weights on standardised features, intercept
    double *mu, *isd;   // training mean and 1/std of each feature
    LrHess *hess;       // the fit's last Hessian model, for the next C of a path (not copied)
} LogReg;

// Standardisation statistics plus a column-major copy of the training rows. Read-only once
// built, so several threads may fit from one solver. Dies unless both classes occur.
typedef struct LrSolver LrSolver;
typedef struct LrCuda LrCuda;   // the products on a GPU (logreg_cuda.h); NULL: on the CPU
LrSolver *lr_solver_new(const LrSet *train);
void lr_solver_free(LrSolver *s);
// Picks L2's preconditioner: up to 512 dense columns, the explicit Hessian (formed during the
// fits); wider, the leading eigenvectors of the training rows' covariance (two blocked matrix
// products now; on the GPU when gpu is not NULL); sparse columns keep Jacobi. Optional:
// without it, L2 uses Jacobi (slow on correlated features). Not thread-safe.
void lr_solver_precondition(LrSolver *s, LrCuda *gpu);

// The starting point: w = 0, b = training log-odds, the solver's statistics.
void logreg_init(LogReg *m, const LrSolver *s);
void logreg_free(LogReg *m);
void logreg_copy(LogReg *dst, const LogReg *src);   // dst: a new model equal to src
// Minimises the objective starting from m (so a path over increasing C warm-starts), with the
// products on the GPU when gpu is not NULL (from lr_cuda_new; L1 forms its Hessian blocks
// there). Returns the final KKT violation (largest over coordinates and intercept): the fit
// converged when it is at most logreg_tol.
double logreg_fit_on(const LrSolver *s, LrCuda *gpu, Penalty pen, double C, LogReg *m);
// The KKT tolerance: rel times max(1, C * the largest |d loss / d w_j| / C at w = 0), rel =
// 1e-8 (L2) or 1e-6 (L1) unless lr_solver_tolerance set it (0: back to those).
double logreg_tol(const LrSolver *s, Penalty pen, double C);
void lr_solver_tolerance(LrSolver *s, double rel);

double logreg_decision(const LogReg *m, const float *x);   // b + w . standardised x
int logreg_correct(const LogReg *m, const LrSet *set);      // rows predicted right (decision > 0 -> 1)
long logreg_nonzero(const LogReg *m, Penalty pen);          // |w| > 1e-8 for L1; all d for L2
const char *penalty_name(Penalty p);

#ifdef __cplusplus
}
#endif
