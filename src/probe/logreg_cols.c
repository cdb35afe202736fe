// logreg_cols.c: the solver's primitives over the columns of E and over coordinate vectors,
// shared by the Newton loop (logreg.c) and both Newton steps (logreg_l1.c, logreg_l2.c).
#include <math.h>
#include "probe/logreg_impl.h"

// Runs body with i (row) and x (e_ij / isd) over the stored entries of column c.
#define FOR_COL(c, n, body)                                                                  \
    if ((c)->row)                                                                            \
        for (int k_ = 0; k_ < (c)->nnz; k_++) { int i = (c)->row[k_]; double x = (c)->val[k_]; body } \
    else                                                                                     \
        for (int i = 0; i < (n); i++) { double x = (c)->val[i] - (c)->ctr; body }

double col_dot(const LrSolver *s, int j, const double *a) {   // sum_i e_ij a_i
    const Col *c = &s->col[j];
    double acc = 0;
    FOR_COL(c, s->n, acc += x * a[i];)
    return acc * c->isd;
}

// g = sum_i e_ij r_i and h = sum_i e_ij^2 D_i in one pass (SIMD sums over a dense column:
// the Newton loop's one pass over the data per step)
SW_AVX2_CLONES
void col_grad_hess(const LrSolver *s, int j, const double *r, const double *D, double *g, double *h) {
    const Col *c = &s->col[j];
    double ag = 0, ah = 0;
    if (c->row) {
        FOR_COL(c, s->n, ag += x * r[i]; ah += x * x * D[i];)
    } else {
        const float *v = c->val;
        double ctr = c->ctr;
        #pragma omp simd reduction(+ : ag, ah)
        for (int i = 0; i < s->n; i++) {
            double x = v[i] - ctr;
            ag += x * r[i];
            ah += x * x * D[i];
        }
    }
    *g = ag * c->isd;
    *h = ah * c->isd * c->isd;
}

void col_axpy(const LrSolver *s, int j, double alpha, double *z) {  // z += alpha e_j
    const Col *c = &s->col[j];
    alpha *= c->isd;
    FOR_COL(c, s->n, z[i] += alpha * x;)
}

// dz = E dw + dw[d] (the intercept): the margins' change along a step, from the columns
// in double, so that the margins the line search keeps stay those of the weights.
void margins_change(const LrSolver *s, const double *dw, double *dz) {
    for (int i = 0; i < s->n; i++) dz[i] = dw[s->d];
    for (int j = 0; j < s->d; j++)
        if (dw[j] != 0) col_axpy(s, j, dw[j], dz);
}

// The objective's gradient in w_j, or for L1 the minimum-norm subgradient (OWL-QN's pseudo-
// gradient): its largest magnitude over all coordinates is the KKT violation.
double pseudo_grad(Penalty p, double g, double w) {
    if (p == PEN_L2) return g + w;
    if (w != 0) return g + (w > 0 ? 1 : -1);
    return g > 1 ? g - 1 : g < -1 ? g + 1 : 0;
}

double dot(const double *a, const double *b, int n) {
    double acc = 0;
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}
