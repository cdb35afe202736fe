// probe.c: the C sweep, model selection (dev split or k-fold CV) and the final score.
#include "probe.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "rng.h"

double probe_C(int k) { return ldexp(1.0, k - 8); }

// One fit-and-score job: train on rows tr of a set, count correct rows ev along the C path.
typedef struct {
    Penalty pen;
    LrSet tr, ev;
    int correct[PROBE_NC];
} Job;

static LrSet all_rows(const ProbeSet *s) {
    int *idx = xmalloc((s->n + 1) * sizeof(int));
    for (int i = 0; i < s->n; i++) idx[i] = i;
    return (LrSet){s->X, s->d, s->y, idx, s->n};
}

// Fits C_0 .. C_last in turn (warm starts), scoring ev at each if ev->n > 0; m keeps the last.
static void fit_path(const LrSet *tr, Penalty pen, int last, const LrSet *ev, int *correct, LogReg *m) {
    LrSolver *s = lr_solver_new(tr);
    logreg_init(m, s);
    for (int k = 0; k <= last; k++) {
        logreg_fit(s, pen, probe_C(k), m);
        if (ev && ev->n) correct[k] = logreg_correct(m, ev);
    }
    lr_solver_free(s);
}

static void run_jobs(Job *jobs, int njobs) {
    #pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < njobs; i++) {
        LogReg m;
        fit_path(&jobs[i].tr, jobs[i].pen, PROBE_NC - 1, &jobs[i].ev, jobs[i].correct, &m);
        logreg_free(&m);
    }
}

// Fold f of K holds the rows at positions p = f, f+K, ... of a seeded shuffle.
static int *fold_of_rows(int n, int K, long seed) {
    int *perm = xmalloc(n * sizeof(int)), *fold = xmalloc(n * sizeof(int));
    for (int i = 0; i < n; i++) perm[i] = i;
    Rng r;
    rng_seed(&r, (uint64_t)seed);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int p = 0; p < n; p++) fold[perm[p]] = p % K;
    free(perm);
    return fold;
}

// Jobs of fold f: training rows outside it, evaluation rows in it.
static void fold_job(Job *j, const ProbeSet *s, const int *fold, int f) {
    int *tr = xmalloc(s->n * sizeof(int)), *ev = xmalloc(s->n * sizeof(int)), ntr = 0, nev = 0;
    for (int i = 0; i < s->n; i++) {
        if (fold[i] == f) ev[nev++] = i;
        else tr[ntr++] = i;
    }
    j->tr = (LrSet){s->X, s->d, s->y, tr, ntr};
    j->ev = (LrSet){s->X, s->d, s->y, ev, nev};
    int ones = 0;
    for (int k = 0; k < ntr; k++) ones += s->y[tr[k]];
    if (ones == 0 || ones == ntr)
        die("probe: the training part of cross-validation fold %d has only label %d (%d documents): use fewer folds or more data",
            f + 1, ones ? 1 : 0, ntr);
}

static int penalty_list(int mask, Penalty *p) {
    int n = 0;
    if (mask & 1 << PEN_L2) p[n++] = PEN_L2;
    if (mask & 1 << PEN_L1) p[n++] = PEN_L1;
    return n;
}

// Fills r->sweep with dev or pooled CV accuracy for every penalty and C.
static void sweep(const ProbeSet *train, const ProbeSet *dev, const ProbeOpts *o, ProbeResult *r) {
    Penalty pens[2];
    int np = penalty_list(o->penalties, pens), K = dev ? 1 : o->folds, njobs = np * K;
    if (!dev && (K < 2 || K > train->n)) die("--folds %d: expected 2 to %d (the number of training documents)", K, train->n);
    int *fold = dev ? NULL : fold_of_rows(train->n, K, o->seed);
    Job *jobs = xcalloc(njobs, sizeof(Job));
    for (int i = 0; i < njobs; i++) {
        jobs[i].pen = pens[i / K];
        if (dev) jobs[i].tr = all_rows(train), jobs[i].ev = all_rows(dev);
        else fold_job(&jobs[i], train, fold, i % K);
    }
    run_jobs(jobs, njobs);
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < PROBE_NC; k++) r->sweep[p][k] = -1;
    for (int i = 0; i < njobs; i++)
        for (int k = 0; k < PROBE_NC; k++) {
            double *acc = &r->sweep[jobs[i].pen][k];
            *acc = (*acc < 0 ? 0 : *acc) + (double)jobs[i].correct[k] / (dev ? dev->n : train->n);
        }
    for (int i = 0; i < njobs; i++) free((void *)jobs[i].tr.idx), free((void *)jobs[i].ev.idx);
    free(jobs);
    free(fold);
}

// Best selection accuracy; ties go to the smaller C, then to L2.
static void choose(ProbeResult *r) {
    int bp = -1, bk = 0;
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < PROBE_NC; k++) {
            double a = r->sweep[p][k];
            if (a >= 0 && (bp < 0 || a > r->sweep[bp][bk] || (a == r->sweep[bp][bk] && k < bk))) bp = p, bk = k;
        }
    r->penalty = (Penalty)bp;
    r->C = probe_C(bk);
    r->dev_accuracy = r->sweep[bp][bk];
}

// train followed by dev, as one set (for --refit-all).
static ProbeSet concat(const ProbeSet *a, const ProbeSet *b, float **X, int **y) {
    size_t na = (size_t)a->n * a->d, nb = (size_t)b->n * b->d;
    *X = xmalloc((na + nb + 1) * sizeof(float));
    *y = xmalloc((a->n + b->n) * sizeof(int));
    memcpy(*X, a->X, na * sizeof(float));
    memcpy(*X + na, b->X, nb * sizeof(float));
    memcpy(*y, a->y, a->n * sizeof(int));
    memcpy(*y + a->n, b->y, b->n * sizeof(int));
    return (ProbeSet){*X, *y, a->n + b->n, a->d};
}

void probe_run(const ProbeSet *train, const ProbeSet *dev, const ProbeSet *test, const ProbeOpts *o, ProbeResult *r) {
    memset(r, 0, sizeof *r);
    sweep(train, dev, o, r);
    choose(r);
    float *X = NULL;
    int *y = NULL;
    ProbeSet fit = dev && o->refit_all ? concat(train, dev, &X, &y) : *train;
    LrSet tr = all_rows(&fit), te = test ? all_rows(test) : (LrSet){0};
    LogReg m;
    int k = 0;
    while (probe_C(k) < r->C) k++;
    fit_path(&tr, r->penalty, k, NULL, NULL, &m);
    r->accuracy = test ? (double)logreg_correct(&m, &te) / test->n : r->dev_accuracy;
    r->nonzero = logreg_nonzero(&m, r->penalty);
    r->folds = dev ? 0 : o->folds;
    r->n_train = fit.n;
    r->n_test = test ? test->n : 0;
    logreg_free(&m);
    free((void *)tr.idx);
    free((void *)te.idx);
    free(X);
    free(y);
}
