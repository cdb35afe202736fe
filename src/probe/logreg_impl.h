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
// intercept (logreg_fit converts), so the optimum is the same.
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
    double *mu, *isd, *y;    // standardisation statistics; labels
    double g0;               // KKT violation at w = 0 divided by C: scales the tolerance
    Spectrum sp;
};

// Vectors over coordinates have d + 1 entries; entry d is the (unpenalised) intercept.
typedef struct {
    double *z, *r, *D, *dz, *xp, *u;          // [n]: margins, loss gradient and curvature per
                                              // row, the step's margins, scratch
    double *g, *h, *pg, *dw, *res, *pz, *p, *q;  // [d + 1]
    unsigned char *act;                       // [d + 1]: coordinate moves in this Newton step
    LrCuda *gpu;                              // the products on the GPU, or NULL
} Work;

// logreg_cols.c: columns of E and coordinate vectors.
double col_dot(const LrSolver *s, int j, const double *a);
void col_grad_hess(const LrSolver *s, int j, const double *r, const double *D, double *g, double *h);
void col_axpy(const LrSolver *s, int j, double alpha, double *z);
void col_axpy_wt(const LrSolver *s, int j, double alpha, double *z, double *u, const double *D);
double dot(const double *a, const double *b, int n);
double pseudo_grad(Penalty p, double g, double w);

// L2: the Newton step dw (and dz = its change of the margins) to residual tol.
// Y [d][l] = E^T T, T [n][l] = E V for V [d][l].
void gram_times(const LrSolver *s, LrCuda *gpu, const real *V, int l, real *T, real *Y);
void lr_spectrum_free(Spectrum *sp);
void newton_cg(const LrSolver *s, Work *k, double tol);
// L1: the step of the quadratic model plus |w|_1 over the active coordinates.
void newton_cd(const LrSolver *s, const double *w, Work *k, double tol);
