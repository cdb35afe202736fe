// logreg_impl.h: the solver's internals, shared by logreg.c (setup, objective, line search,
// the Newton loop), logreg_l2.c (Newton-CG), logreg_l1.c (coordinate descent) and
// logreg_cols.c (the primitives all three use).
#pragma once
#include "base/common.h"
#include "probe/logreg.h"

#define HMIN 1e-12        // curvature floor: confident rows have p(1-p) ~ 0

// A feature column of the training rows, as the solver sees it: e_ij = (x_ij - ctr) * isd.
// Dense columns are centred (ctr = mu). Mostly-zero columns (byte bigrams) are only scaled
// (ctr = 0) and stored sparse: with an unpenalised intercept, centring just shifts the
// intercept (logreg_fit_on converts), so the optimum is the same.
typedef struct {
    int nnz;        // sparse: stored entries
    int *row;       // sparse: row of each entry; NULL for a dense column
    float *val;     // sparse values, or the n values of a dense column
    double ctr, isd;
} Col;

// A subspace holding the leading eigenvectors of E^T E (E: the solver's matrix e_ij), from a
// randomized range finder, for preconditioning.
typedef struct {
    int l;          // its dimension (0: none)
    double *U;      // [l][d], orthonormal rows
    real *P;        // [n][l] = E U^T
    double bulk;    // mean eigenvalue of E^T E / n outside it
} Spectrum;

struct LrSolver {
    int n, d;
    float *xc;               // [d][n]: the training rows, column by column
    real *xr;                // [n][d]: e_ij row by row (for the blocked products of L2)
    Col *col;                // [d]
    int sparse;              // some columns are sparse (then L2 works by columns)
    int dense;               // L2 takes the explicit Hessian (narrow problems)
    double *mu, *isd, *y;    // standardisation statistics; labels
    double g0;               // KKT violation at w = 0 divided by C: scales the tolerance
    double rel_tol;          // the tolerance relative to that (0: the defaults)
    Spectrum sp;
};

// The explicit Hessian model (logreg_gram.c) on the columns W (L1's working set; every
// column for L2 on narrow problems) and the intercept, last. A Newton step may reuse the last
// one formed: L1 takes it as its quadratic model, L2 as CG's preconditioner. It stays with
// the LogReg along a path: the next C starts from it, rescaled (the curvatures scale with C).
struct LrHess {
    const LrSolver *s;                        // the solver and penalty it was formed for
    Penalty pen;
    int m, cap, *cols;                        // W, ascending (m = 0: no model)
    unsigned char *in_w;                      // [d]
    double *G, *L;                            // [(m+1)^2]: the block for the curvatures at C = Cg;
                                              // L: the factor of I + G (L2), scratch (L1)
    double Cg;                                // 0 until formed
    int refresh, factored;                    // form G at the next step; L is up to date
};

// Vectors over coordinates have d + 1 entries; entry d is the (unpenalised) intercept.
typedef struct {
    double *z, *r, *D, *dz, *xp, *u;          // [n]: margins, loss gradient and curvature per
                                              // row, the step's margins, scratch
    double *g, *h, *pg, *dw, *res, *pz, *p, *q;  // [d + 1]
    unsigned char *act;                       // [d + 1]: coordinate moves in this Newton step
    LrCuda *gpu;                              // the products on the GPU, or NULL
    double C;
    LrHess *hm;                               // the model's (LogReg.hess)
} Work;

// logreg_cols.c: columns of E and coordinate vectors.
double col_dot(const LrSolver *s, int j, const double *a);
void col_grad_hess(const LrSolver *s, int j, const double *r, const double *D, double *g, double *h);
void col_axpy(const LrSolver *s, int j, double alpha, double *z);
void margins_change(const LrSolver *s, const double *dw, double *dz);
double dot(const double *a, const double *b, int n);
double pseudo_grad(Penalty p, double g, double w);

// logreg_gram.c: H [(m+1)^2] = the loss Hessian on columns cols[0..m) and the intercept (last),
// from the curvatures D [n].
void gram_block(const LrSolver *s, const int *cols, int m, const double *D, double *H);

// L2: the Newton step dw (and dz = its change of the margins) to residual tol; returns the
// conjugate-gradient iterations it took. Y [d][l] = E^T T, T [n][l] = E V for V [d][l].
void gram_times(const LrSolver *s, LrCuda *gpu, const real *V, int l, real *T, real *Y);
void lr_spectrum_free(Spectrum *sp);
int newton_cg(const LrSolver *s, Work *k, double tol);
// L1: the step that minimises the quadratic model plus |w|_1 over the working set.
void newton_l1(const LrSolver *s, const double *w, Work *k, double tol);
void hess_reserve(LrHess *hm, int m);       // logreg_gram.c: room for m columns in W
void hess_form(const LrSolver *s, Work *k); // G from the current curvatures
// logreg_l1_qp.c: argmin over x [m + 1] of c.x + x^T H x / 2 + sum_{a<m} |u_a + x_a| (the last
// coordinate, the intercept, is not penalised) to KKT tolerance tol; H [(m+1)^2] positive
// definite, scratch [(m+1)^2 + 7 (m+1)] doubles.
void l1_quadratic(const double *H, const double *c, const double *u, int m, double tol, double *x, double *scratch);
