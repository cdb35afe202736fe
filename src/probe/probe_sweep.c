// probe_sweep.c: the jobs of a sweep on the cores, one C at a time (largest jobs first), with
// the early stop, the steps past the grid's edges and progress on stderr.
#include "probe/probe_sweep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/progress.h"
#include "probe/logreg_cuda.h"

// The shared progress line and the fits done so far (the threads take turns).
typedef struct {
    Progress line;
    int done;
} Tally;

static void progress_tick(Tally *t) {
    #pragma omp critical(probe_progress)
    progress_show(&t->line, ++t->done);
}

// A path's state between its C values.
typedef struct {
    LrSolver *s;
    LrCuda *gpu;
    LogReg m;
} PathState;

static void path_open(PathState *st, const PathJob *j, double tol, int gpu) {
    st->s = lr_solver_new(&j->tr);
    st->gpu = NULL;
    lr_solver_tolerance(st->s, tol);
#ifdef SW_CUDA
    if (gpu) st->gpu = lr_cuda_new(st->s);   // L1 too: its Hessian blocks and gradients
#endif
    if (j->pen == PEN_L2) lr_solver_precondition(st->s, st->gpu);
    logreg_init(&st->m, st->s);
}

static void path_close(PathState *st) {
#ifdef SW_CUDA
    lr_cuda_free(st->gpu);
#endif
    logreg_free(&st->m);
    lr_solver_free(st->s);
}

// Fits job j at C index k: the C after its last (from the path's model) or the C below its
// first (from w = 0).
static void path_step(PathJob *j, PathState *st, int k) {
    double C = probe_C(k);
    int down = k < j->lo;
    LogReg below, *m = down ? &below : &st->m;
    if (down) logreg_init(&below, st->s);
    j->kkt[k] = logreg_fit_on(st->s, st->gpu, j->pen, C, m) / logreg_tol(st->s, j->pen, C);
    if (j->ev.n) j->correct[k] = logreg_correct(m, &j->ev);
    j->nonzero[k] = logreg_nonzero(m, j->pen);
    if (j->keep) logreg_copy(&j->model[k], m);
    if (down) logreg_free(&below), j->lo = k;
    else j->hi = k + 1;
}

void sweep_accuracy(const PathJob *jobs, int njobs, Penalty p, int n_eval, double acc[PROBE_NK]) {
    for (int k = 0; k < PROBE_NK; k++) acc[k] = -1;
    for (int i = 0; i < njobs; i++)
        for (int k = jobs[i].lo; k < jobs[i].hi && jobs[i].pen == p && jobs[i].ev.n; k++)
            acc[k] = (acc[k] < 0 ? 0 : acc[k]) + (double)jobs[i].correct[k] / n_eval;
}

int sweep_best(const double acc[PROBE_NK]) {
    int best = -1;
    for (int k = 0; k < PROBE_NK; k++)
        if (acc[k] >= 0 && (best < 0 || acc[k] > acc[best])) best = k;
    return best;
}

// Whether penalty p's paths go on to the C after k, their largest so far: inside the grid
// until the early stop (the last PROBE_STOP_RUN Cs each PROBE_STOP_DROP or more below the
// best); past it while k is the best.
static int go_up(const PathJob *jobs, int njobs, Penalty p, int k, int n_eval) {
    double acc[PROBE_NK];
    sweep_accuracy(jobs, njobs, p, n_eval, acc);
    int best = sweep_best(acc);
    if (k + 1 >= PROBE_K0 + PROBE_NC) return k + 1 < PROBE_NK && best == k;
    if (k + 1 - PROBE_K0 < PROBE_STOP_RUN) return 1;
    for (int c = k + 1 - PROBE_STOP_RUN; c <= k; c++)
        if (acc[c] > acc[best] - PROBE_STOP_DROP) return 1;
    return 0;
}

// Whether penalty p's paths go on to the C below k, their smallest so far: while k is the best.
static int go_down(const PathJob *jobs, int njobs, Penalty p, int k, int n_eval) {
    double acc[PROBE_NK];
    sweep_accuracy(jobs, njobs, p, n_eval, acc);
    return k > 0 && sweep_best(acc) == k;
}

// One C for the paths of each penalty that goes on: penalty p's at C index next[p] (-1: p is
// done). A job alone (or the last one not done) gets both cores inside its products; several
// share them one job per core.
static void sweep_round(PathJob *jobs, int njobs, PathState *st, const int next[2], Tally *pr) {
    int active = 0;
    for (int i = 0; i < njobs; i++) {
        int k = next[jobs[i].pen];
        active += k >= 0;
        pr->line.total += k >= 0 && (k < PROBE_K0 || k >= PROBE_K0 + PROBE_NC);   // past the grid: not planned
    }
    #pragma omp parallel for schedule(dynamic, 1) if (active > 1)
    for (int i = 0; i < njobs; i++) {
        int k = next[jobs[i].pen];
        if (k < 0) continue;
        path_step(&jobs[i], &st[i], k);
        progress_tick(pr);
    }
}

void sweep_run(PathJob *jobs, int njobs, int n_eval, double tol, int gpu, int progress) {
    Tally pr = {.done = 0};
    progress_init(&pr.line, "probe", "fits", njobs * PROBE_NC, progress == 0 ? -1 : progress == 1);
    PathState *st = xcalloc(njobs, sizeof *st);
    int next[2] = {-1, -1}, count[2] = {0, 0};
    for (int i = 0; i < njobs; i++) {
        jobs[i].lo = jobs[i].hi = PROBE_K0;
        next[jobs[i].pen] = PROBE_K0;
        count[jobs[i].pen]++;
    }
    #pragma omp parallel for schedule(dynamic, 1) if (njobs > 1)
    for (int i = 0; i < njobs; i++) path_open(&st[i], &jobs[i], tol, gpu);
    while (next[0] >= 0 || next[1] >= 0) {   // up from the grid's smallest C
        sweep_round(jobs, njobs, st, next, &pr);
        for (int p = 0; p < 2; p++) {
            if (next[p] < 0) continue;
            if (go_up(jobs, njobs, (Penalty)p, next[p], n_eval)) next[p]++;
            else {
                int unplanned = PROBE_K0 + PROBE_NC - 1 - next[p];   // the grid's Cs the early stop cut
                pr.line.total -= count[p] * (unplanned > 0 ? unplanned : 0);
                next[p] = -1;
            }
        }
    }
    for (int p = 0; p < 2; p++)
        next[p] = count[p] && go_down(jobs, njobs, (Penalty)p, PROBE_K0, n_eval) ? PROBE_K0 - 1 : -1;
    while (next[0] >= 0 || next[1] >= 0) {   // down from it while it is the best
        sweep_round(jobs, njobs, st, next, &pr);
        for (int p = 0; p < 2; p++)
            if (next[p] >= 0) next[p] = go_down(jobs, njobs, (Penalty)p, next[p], n_eval) ? next[p] - 1 : -1;
    }
    progress_done(&pr.line);
    for (int i = 0; i < njobs; i++) path_close(&st[i]);
    free(st);
}

void path_job_free(PathJob *j) {
    free((void *)j->tr.idx);
    free((void *)j->ev.idx);
    for (int k = j->lo; k < j->hi; k++)
        if (j->keep) logreg_free(&j->model[k]);
}
