// probe.c: the jobs of the C sweep, model selection (dev split or k-fold CV) and the final score.
#include "probe/probe.h"
#include "probe/probe_sweep.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "base/rng.h"

static LrSet all_rows(const ProbeSet *s) {
    int *idx = xmalloc((s->n + 1) * sizeof(int));
    for (int i = 0; i < s->n; i++) idx[i] = i;
    return (LrSet){s->X, s->d, s->y, idx, s->n};
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

// Job of fold f: training rows outside it, evaluation rows in it.
static void fold_job(PathJob *j, const ProbeSet *s, const int *fold, int f) {
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

// The jobs of a sweep, per penalty (L1 first: its paths are the slowest): the final path (on
// `fit`, keeping its models; scored on dev when it is the training set) first, being the
// largest, then one job per CV fold.
static PathJob *make_jobs(const ProbeSet *train, const ProbeSet *dev, const ProbeSet *fit, const ProbeOpts *o, int *njobs) {
    Penalty pens[2];
    int np = penalty_list(o->penalties, pens), K = dev ? 0 : o->folds, per = 1 + K;
    if (!dev && (K < 2 || K > train->n)) die("--folds %d: expected 2 to %d (the number of training documents)", K, train->n);
    int *fold = dev ? NULL : fold_of_rows(train->n, K, o->seed);
    PathJob *jobs = xcalloc(np * per + (dev && fit != train ? np : 0), sizeof(PathJob));
    *njobs = 0;
    for (int p = np - 1; p >= 0; p--) {
        PathJob *j = &jobs[(*njobs)++];
        *j = (PathJob){.pen = pens[p], .tr = all_rows(fit), .keep = 1};
        if (dev && fit == train) j->ev = all_rows(dev);
        if (dev && fit != train) {   // --refit-all: the dev path is a job of its own
            j = &jobs[(*njobs)++];
            *j = (PathJob){.pen = pens[p], .tr = all_rows(train), .ev = all_rows(dev)};
        }
        for (int f = 0; f < K; f++) {
            j = &jobs[(*njobs)++];
            j->pen = pens[p];
            j->fold = f + 1;
            fold_job(j, train, fold, f);
        }
    }
    free(fold);
    return jobs;
}

// r->sweep: dev or pooled CV accuracy for every penalty and C; the final path's non-zero
// weights; how well the fits converged; the Cs each penalty's paths fitted.
static void tally(const PathJob *jobs, int njobs, int n_eval, ProbeResult *r) {
    for (int p = 0; p < 2; p++) {
        sweep_accuracy(jobs, njobs, (Penalty)p, n_eval, r->sweep[p]);
        for (int k = 0; k < PROBE_NK; k++) r->sweep_kkt[p][k] = -1, r->sweep_nonzero[p][k] = -1;
    }
    for (int i = 0; i < njobs; i++) {
        const PathJob *j = &jobs[i];
        r->k_lo[j->pen] = j->lo;
        r->k_hi[j->pen] = j->hi;
        for (int k = j->lo; k < j->hi; k++) {
            double *kkt = &r->sweep_kkt[j->pen][k];
            if (j->keep) r->sweep_nonzero[j->pen][k] = j->nonzero[k];
            *kkt = fmax(*kkt, j->kkt[k]);
            r->worst_kkt = fmax(r->worst_kkt, j->kkt[k]);
            r->fits++;
            r->unconverged += !(j->kkt[k] <= 1);
        }
    }
}

// Best selection accuracy among penalties p0..p1; ties go to the smaller C, then to L2.
static int best_of(const ProbeResult *r, int p0, int p1, int *pen) {
    int bp = -1, bk = 0;
    for (int p = p0; p <= p1; p++) {
        int k = sweep_best(r->sweep[p]);
        double a = k < 0 ? -1 : r->sweep[p][k];
        if (k >= 0 && (bp < 0 || a > r->sweep[bp][bk] || (a == r->sweep[bp][bk] && k < bk))) bp = p, bk = k;
    }
    *pen = bp;
    return bk;
}

static int choose(ProbeResult *r) {
    int bp, bk = best_of(r, 0, 1, &bp);
    r->penalty = (Penalty)bp;
    r->C = probe_C(bk);
    r->dev_accuracy = r->sweep[bp][bk];
    r->c_interior = bk > r->k_lo[bp] && bk < r->k_hi[bp] - 1;
    return bk;
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

static const LogReg *kept_model(const PathJob *jobs, int njobs, Penalty pen, int k) {
    for (int i = 0; i < njobs; i++)
        if (jobs[i].keep && jobs[i].pen == pen) return &jobs[i].model[k];
    return NULL;
}

// The L1 model's largest weights and the best single unit (scored on `eval`).
static void unit_view(ProbeResult *r, const PathJob *jobs, int njobs, const ProbeSet *fit, const ProbeSet *eval) {
    int pen, k = best_of(r, PEN_L1, PEN_L1, &pen);
    if (pen == PEN_L1) {
        r->n_top = fit->d < PROBE_TOP ? fit->d : PROBE_TOP;
        r->top_C = probe_C(k);
        probe_top_units(kept_model(jobs, njobs, PEN_L1, k), r->top_unit, r->top_weight, r->n_top);
    }
    r->single = probe_single_unit(fit);
    r->single_accuracy = single_unit_accuracy(&r->single, eval);
}

void probe_run(const ProbeSet *train, const ProbeSet *dev, const ProbeSet *test, const ProbeOpts *o, ProbeResult *r) {
    memset(r, 0, sizeof *r);
    float *X = NULL;
    int *y = NULL, njobs;
    ProbeSet fit = dev && o->refit_all ? concat(train, dev, &X, &y) : *train;
    PathJob *jobs = make_jobs(train, dev, dev && o->refit_all ? &fit : train, o, &njobs);
    int n_eval = dev ? dev->n : train->n;
    sweep_run(jobs, njobs, n_eval, o->tol, o->device == PROBE_CUDA, o->progress);
    tally(jobs, njobs, n_eval, r);
    int k = choose(r);
    const LogReg *m = kept_model(jobs, njobs, r->penalty, k);
    LrSet te = test ? all_rows(test) : (LrSet){0};
    r->accuracy = test ? (double)logreg_correct(m, &te) / test->n : r->dev_accuracy;
    r->nonzero = logreg_nonzero(m, r->penalty);
    r->folds = dev ? 0 : o->folds;
    r->n_train = fit.n;
    r->n_test = test ? test->n : 0;
    unit_view(r, jobs, njobs, &fit, test ? test : dev ? dev : &fit);
    for (int i = 0; i < njobs; i++) path_job_free(&jobs[i]);
    free(jobs);
    free((void *)te.idx);
    free(X);
    free(y);
}
