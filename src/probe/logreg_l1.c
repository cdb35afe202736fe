// logreg_l1.c: the L1 Newton step (newGLMNET's quadratic model of the loss plus |w|_1) on a
// working set W: the non-zero weights plus zero weights whose gradient lies outside [-1, 1]
// (only those can move), the most violating first and a bounded number per step (glmnet's
// active sets), so that the Hessian block stays small while a path warms up. The model's
// Hessian is the explicit block of logreg_gram.c, solved exactly (logreg_l1_qp.c).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "probe/logreg_impl.h"

#define WS_ADD_MIN 32     // zero weights added to W per step: up to max(this, |W|)
#define WS_KEEP 0.9       // a zero weight stays in W while its gradient's size is at least this

typedef struct { double v; int j; } Cand;

static int by_violation(const void *a, const void *b) {   // descending, ties by column
    const Cand *x = a, *y = b;
    return x->v < y->v ? 1 : x->v > y->v ? -1 : x->j - y->j;
}

// Adds violating zero weights to W (kept ascending); returns how many.
static int grow_working_set(const LrSolver *s, Work *k) {
    LrHess *hm = k->hm;
    Cand *c = xmalloc((s->d + 1) * sizeof(Cand));
    int nc = 0, lim = hm->m > WS_ADD_MIN ? hm->m : WS_ADD_MIN;
    for (int j = 0; j < s->d; j++)
        if (!hm->in_w[j] && k->pg[j] != 0) c[nc++] = (Cand){fabs(k->pg[j]), j};
    int add = nc < lim ? nc : lim;
    if (add < nc) qsort(c, nc, sizeof(Cand), by_violation);
    for (int a = 0; a < add; a++) hm->in_w[c[a].j] = 1;
    free(c);
    if (!add) return 0;
    hess_reserve(hm, hm->m + add);
    hm->m = 0;
    for (int j = 0; j < s->d; j++)
        if (hm->in_w[j]) hm->cols[hm->m++] = j;
    return add;
}

// At a refresh, drops from W the zero weights whose gradient lies well inside [-1, 1]
// (glmnet's shrinking): they stay zero, and each column of W costs the Hessian block
// n (m + 1) multiply-adds. The KKT check runs over every column, so a dropped one that turns
// violating joins again (grow_working_set).
static void shrink_working_set(const double *w, Work *k) {
    LrHess *hm = k->hm;
    int m = 0;
    for (int a = 0; a < hm->m; a++) {
        int j = hm->cols[a];
        if (w[j] == 0 && fabs(k->g[j]) < WS_KEEP) hm->in_w[j] = 0;
        else hm->cols[m++] = j;
    }
    hm->m = m;
}

void newton_l1(const LrSolver *s, const double *w, Work *k, double tol) {
    LrHess *hm = k->hm;
    if (hm->refresh) shrink_working_set(w, k);
    if (grow_working_set(s, k) || hm->refresh) hess_form(s, k);
    int m = hm->m, d = s->d;
    double *c = k->p, *u = k->q, *x = k->res;   // [m + 1] each (p, q, res: unused by L1)
    for (int a = 0; a < m; a++) c[a] = k->g[hm->cols[a]], u[a] = w[hm->cols[a]];
    c[m] = k->g[d], u[m] = 0;
    l1_quadratic(hm->G, c, u, m, tol, x, hm->L);
    memset(k->dw, 0, (d + 1) * sizeof(double));
    for (int a = 0; a < m; a++) k->dw[hm->cols[a]] = x[a];
    k->dw[d] = x[m];
    margins_change(s, k->dw, k->dz);
}
