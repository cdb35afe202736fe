// logreg.c: L1/L2 logistic regression by (orthant-wise) Newton-CG.
#include "probe/logreg.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "probe/logreg_cuda.h"

// KKT tolerances relative to the largest gradient at w = 0 (at least 1).
#define LR_TOL_L2 1e-8
#define LR_TOL_L1 1e-6
#define MAX_OUTER 100
#define INNER_FRAC 0.1    // inner solves to this fraction of the KKT violation
#define ARMIJO 0.01
// A Newton step reuses the last explicit Hessian model while it still pays: L1 while each
// step cuts the KKT violation at least this much, L2 while CG needs few iterations with it.
#define STALE_RATIO 0.1
#define STALE_CG 6
#define SPARSE_FRAC 0.25  // columns with fewer non-zeros than this fraction are kept sparse

// sum_j w_j (mu_j - ctr_j) isd_j: the model's intercept minus the solver's
static double centre_shift(const LrSolver *s, const double *w) {
    double b = 0;
    for (int j = 0; j < s->d; j++) b += w[j] * (s->mu[j] - s->col[j].ctr) * s->isd[j];
    return b;
}

// ---- solver setup ----

static void gather_columns(LrSolver *s, const LrSet *t) {
    for (int k0 = 0; k0 < t->n; k0 += 64)  // blocks of rows keep the transposition cache-friendly
        for (int j = 0; j < t->d; j++)
            for (int k = k0; k < t->n && k < k0 + 64; k++)
                s->xc[(size_t)j * t->n + k] = t->X[(size_t)t->idx[k] * t->d + j];
}

// Statistics of column j and its solver form (sparse or centred dense).
static void make_column(LrSolver *s, int j) {
    const float *x = s->xc + (size_t)j * s->n;
    double sum = 0, ss = 0;
    int nnz = 0;
    for (int i = 0; i < s->n; i++) sum += x[i], nnz += x[i] != 0;
    double mu = sum / s->n;
    for (int i = 0; i < s->n; i++) ss += (x[i] - mu) * (x[i] - mu);
    double sd = sqrt(ss / s->n);
    s->mu[j] = mu;
    s->isd[j] = sd > 0 ? 1 / sd : 1;
    Col *c = &s->col[j];
    *c = (Col){.val = (float *)x, .ctr = mu, .isd = s->isd[j]};
    if (nnz >= SPARSE_FRAC * s->n) return;
    *c = (Col){.nnz = nnz, .row = xmalloc((nnz + 1) * sizeof(int)), .val = xmalloc((nnz + 1) * sizeof(float)), .isd = s->isd[j]};
    for (int i = 0, k = 0; i < s->n; i++)
        if (x[i] != 0) c->row[k] = i, c->val[k++] = x[i];
}

static int count_ones(const LrSet *t) {
    int ones = 0;
    for (int k = 0; k < t->n; k++) {
        int y = t->y[t->idx[k]];
        if (y != 0 && y != 1) die("internal: logistic regression label %d (expected 0 or 1)", y);
        ones += y;
    }
    if (ones == 0 || ones == t->n)
        die("the training set has only label %d: a probe needs examples of both labels 0 and 1", ones ? 1 : 0);
    return ones;
}

LrSolver *lr_solver_new(const LrSet *t) {
    LrSolver *s = xcalloc(1, sizeof *s);
    s->n = t->n;
    s->d = t->d;
    s->xc = xmalloc((size_t)t->n * t->d * sizeof(float));
    s->col = xmalloc(t->d * sizeof(Col));
    s->mu = xmalloc(t->d * sizeof(double));
    s->isd = xmalloc(t->d * sizeof(double));
    s->y = xmalloc(t->n * sizeof(double));
    double *a = xmalloc(t->n * sizeof(double)), ybar = (double)count_ones(t) / t->n;
    for (int k = 0; k < t->n; k++) {
        s->y[k] = t->y[t->idx[k]];
        a[k] = ybar - s->y[k];  // loss gradient per row at w = 0, b = log-odds (sums to 0)
    }
    gather_columns(s, t);
    #pragma omp parallel for schedule(static)
    for (int j = 0; j < s->d; j++) make_column(s, j);
    for (int j = 0; j < s->d; j++) s->sparse |= s->col[j].row != NULL;
    s->xr = xmalloc((size_t)t->n * t->d * sizeof(real));
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->d; j++) s->xr[(size_t)i * s->d + j] = (real)((s->xc[(size_t)j * s->n + i] - s->col[j].ctr) * s->isd[j]);
    s->g0 = 0;
    for (int j = 0; j < s->d; j++) s->g0 = fmax(s->g0, fabs(col_dot(s, j, a)));
    free(a);
    return s;
}

void lr_solver_free(LrSolver *s) {
    if (!s) return;
    for (int j = 0; j < s->d; j++)
        if (s->col[j].row) free(s->col[j].row), free(s->col[j].val);
    lr_spectrum_free(&s->sp);
    free(s->xc); free(s->xr); free(s->col); free(s->mu); free(s->isd); free(s->y);
    free(s);
}

static void hess_free(LrHess *hm) {
    if (!hm) return;
    free(hm->in_w); free(hm->cols); free(hm->G); free(hm->L);
    free(hm);
}

void logreg_init(LogReg *m, const LrSolver *s) {
    double ones = 0;
    for (int i = 0; i < s->n; i++) ones += s->y[i];
    m->d = s->d;
    m->w = xcalloc(s->d, sizeof(double));
    m->hess = NULL;
    m->b = log(ones / (s->n - ones));
    m->mu = xmalloc(s->d * sizeof(double));
    m->isd = xmalloc(s->d * sizeof(double));
    memcpy(m->mu, s->mu, s->d * sizeof(double));
    memcpy(m->isd, s->isd, s->d * sizeof(double));
}

void logreg_copy(LogReg *dst, const LogReg *src) {
    size_t bytes = src->d * sizeof(double);
    *dst = (LogReg){src->d, xmalloc(bytes), src->b, xmalloc(bytes), xmalloc(bytes), NULL};
    memcpy(dst->w, src->w, bytes);
    memcpy(dst->mu, src->mu, bytes);
    memcpy(dst->isd, src->isd, bytes);
}

void logreg_free(LogReg *m) {
    free(m->w); free(m->mu); free(m->isd);
    hess_free(m->hess);
    memset(m, 0, sizeof *m);
}

// ---- the objective ----

static double sigmoid(double z) { return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z)); }
static double softplus(double z) { return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)); }

// logloss(z + dz) - logloss(z) without cancellation: softplus(z + dz) - softplus(z)
// = log1p(sigmoid(z) * expm1(dz)).
static double loss_change(double z, double dz, double y) {
    double sp = fabs(dz) < 30 ? log1p(sigmoid(z) * expm1(dz)) : softplus(z + dz) - softplus(z);
    return sp - y * dz;
}

static double penalty1(Penalty p, double w) { return p == PEN_L2 ? 0.5 * w * w : fabs(w); }

// ---- Newton iterations ----
static double *dvec(size_t n) { return xcalloc(n, sizeof(double)); }

// The model's Hessian state for this fit: a new one has the columns of every weight for L2
// on narrow problems, or of L1's non-zero weights (its working set grows from there), and is
// formed at the first step; a path's next C rescales the last one.
static LrHess *hess_for(const LrSolver *s, Penalty pen, double C, LogReg *m) {
    LrHess *hm = m->hess;
    if (hm && (hm->s != s || hm->pen != pen)) hess_free(hm), hm = m->hess = NULL;
    if (hm) {
        if (hm->Cg > 0 && hm->Cg != C) {
            for (size_t i = 0; i < (size_t)(hm->m + 1) * (hm->m + 1); i++) hm->G[i] *= C / hm->Cg;
            hm->Cg = C;
            hm->factored = 0;
        }
        return hm;
    }
    hm = m->hess = xcalloc(1, sizeof *hm);
    *hm = (LrHess){.s = s, .pen = pen, .in_w = xcalloc(s->d, 1)};
    hm->refresh = 1;
    if (pen == PEN_L2 && !s->dense) return hm;
    for (int j = 0; j < s->d; j++) hm->m += hm->in_w[j] = pen == PEN_L2 || m->w[j] != 0;
    hess_reserve(hm, hm->m);
    for (int j = 0, a = 0; j < s->d; j++)
        if (hm->in_w[j]) hm->cols[a++] = j;
    return hm;
}

static void work_init(Work *k, const LrSolver *s, Penalty pen, double C, LogReg *m, LrCuda *gpu) {
    size_t n = s->n, d1 = s->d + 1;
    k->z = dvec(n); k->r = dvec(n); k->D = dvec(n); k->dz = dvec(n); k->xp = dvec(n); k->u = dvec(n);
    k->g = dvec(d1); k->h = dvec(d1); k->pg = dvec(d1); k->dw = dvec(d1);
    k->res = dvec(d1); k->pz = dvec(d1); k->p = dvec(d1); k->q = dvec(d1);
    k->gpu = gpu;
    k->C = C;
    k->hm = hess_for(s, pen, C, m);
#ifdef SW_CUDA
    if (gpu) { lr_cuda_margins(gpu, s, m->w, m->b, k->z); return; }
#endif
    for (size_t i = 0; i < n; i++) k->z[i] = m->b;
    for (int j = 0; j < s->d; j++)
        if (m->w[j] != 0) col_axpy(s, j, m->w[j], k->z);
}

static void work_free(Work *k) {
    double *v[] = {k->z, k->r, k->D, k->dz, k->xp, k->u, k->g, k->h, k->pg, k->dw, k->res, k->pz, k->p, k->q};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) free(v[i]);
}

// Gradient, Hessian diagonal and pseudo-gradient at the current margins; returns the KKT
// violation.
static double gradient(const LrSolver *s, Penalty pen, double C, const LogReg *m, Work *k) {
    int d = s->d;
    k->g[d] = 0;
    k->h[d] = HMIN;
    for (int i = 0; i < s->n; i++) {
        double p = sigmoid(k->z[i]);
        k->g[d] += k->r[i] = C * (p - s->y[i]);
        k->h[d] += k->D[i] = C * p * (1 - p);
    }
#ifdef SW_CUDA
    if (k->gpu) lr_cuda_grad_hess(k->gpu, s, k);
    else
#endif
    #pragma omp parallel for schedule(static) if (!s->sparse && (long)s->n * d >= 1L << 22)
    for (int j = 0; j < d; j++) col_grad_hess(s, j, k->r, k->D, &k->g[j], &k->h[j]);
    double v = 0;
    for (int j = 0; j <= d; j++) {
        double w = j < d ? m->w[j] : 0;
        k->pg[j] = j < d ? pseudo_grad(pen, k->g[j], w) : k->g[d];
        v = fmax(v, fabs(k->pg[j]));
    }
    for (int j = 0; j < d; j++) k->h[j] += pen == PEN_L2 ? 1 : HMIN;
    return v;
}

// Objective(w + a dw, b + a dw[d]) - objective(w, b), summed term by term so that tiny
// decreases near the optimum are not lost to rounding.
static double objective_change(const LrSolver *s, Penalty pen, double C, const LogReg *m, const Work *k, double a) {
    double loss = 0, pen_change = 0;
    for (int i = 0; i < s->n; i++) loss += loss_change(k->z[i], a * k->dz[i], s->y[i]);
    for (int j = 0; j < s->d; j++)
        if (k->dw[j] != 0) pen_change += penalty1(pen, m->w[j] + a * k->dw[j]) - penalty1(pen, m->w[j]);
    return C * loss + pen_change;
}

// Backtracking line search with newGLMNET's sufficient-decrease condition
// change <= ARMIJO * a * (g . dw + penalty(w + dw) - penalty(w)); 0 if no step decreases.
static int line_search(const LrSolver *s, Penalty pen, double C, LogReg *m, Work *k) {
    double pred = dot(k->g, k->dw, s->d + 1);
    for (int j = 0; j < s->d; j++)
        if (k->dw[j] != 0) pred += penalty1(pen, m->w[j] + k->dw[j]) - penalty1(pen, m->w[j]);
    if (!(pred < 0)) return 0;
    for (double a = 1; a > 1e-10; a *= 0.5) {
        if (objective_change(s, pen, C, m, k, a) > ARMIJO * a * pred) continue;
        for (int j = 0; j < s->d; j++) m->w[j] += a * k->dw[j];
        m->b += a * k->dw[s->d];
        for (int i = 0; i < s->n; i++) k->z[i] += a * k->dz[i];
        return 1;
    }
    return 0;
}

void lr_solver_tolerance(LrSolver *s, double rel) { s->rel_tol = rel; }

double logreg_tol(const LrSolver *s, Penalty pen, double C) {
    return (s->rel_tol > 0 ? s->rel_tol : pen == PEN_L2 ? LR_TOL_L2 : LR_TOL_L1) * fmax(1, C * s->g0);
}

double logreg_fit_on(const LrSolver *s, LrCuda *gpu, Penalty pen, double C, LogReg *m) {
    Work k = {0};
    m->b -= centre_shift(s, m->w);
    work_init(&k, s, pen, C, m, gpu);
    double tol = logreg_tol(s, pen, C), viol, last = INFINITY;
    for (int it = 0;; it++) {
        viol = gradient(s, pen, C, m, &k);
        if (viol <= tol || it == MAX_OUTER) break;
        double itol = fmax(INNER_FRAC * viol, 0.5 * tol);
        if (pen == PEN_L1 && viol > STALE_RATIO * last) k.hm->refresh = 1;
        int fresh = k.hm->refresh || !k.hm->m;
        if (pen == PEN_L1) newton_l1(s, m->w, &k, itol);
        else if (newton_cg(s, &k, itol) > STALE_CG) k.hm->refresh = 1;
        if (!line_search(s, pen, C, m, &k)) {
            if (fresh) break;
            k.hm->refresh = 1;   // a stale model's step may fail where a fresh one's does not
        }
        last = viol;
    }
    m->b += centre_shift(s, m->w);
    work_free(&k);
    return viol;
}

// ---- using a fitted model ----

double logreg_decision(const LogReg *m, const float *x) {
    double z = m->b;
    for (int j = 0; j < m->d; j++) z += m->w[j] * ((x[j] - m->mu[j]) * m->isd[j]);
    return z;
}

int logreg_correct(const LogReg *m, const LrSet *t) {
    int ok = 0;
    for (int k = 0; k < t->n; k++) {
        int row = t->idx[k];
        ok += (logreg_decision(m, t->X + (size_t)row * t->d) > 0) == (t->y[row] == 1);
    }
    return ok;
}

long logreg_nonzero(const LogReg *m, Penalty pen) {
    if (pen == PEN_L2) return m->d;
    long nz = 0;
    for (int j = 0; j < m->d; j++) nz += fabs(m->w[j]) > 1e-8;
    return nz;
}

const char *penalty_name(Penalty p) { return p == PEN_L2 ? "l2" : "l1"; }
