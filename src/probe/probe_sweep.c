// probe_sweep.c: the jobs of a sweep on the cores, one C at a time (largest jobs first), with
// the early stop and progress on stderr.
#include "probe/probe_sweep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/progress.h"
#include "probe/logreg_cuda.h"

static void progress_tick(Progress *p, int *done) {
    #pragma omp critical(probe_progress)
    progress_show(p, ++*done);
}

// A path's state between its C values.
typedef struct {
    LrSolver *s;
    LrCuda *gpu;
    LogReg m;
} PathState;

static void path_open(PathState *st, const PathJob *j, const ProbeOpts *o) {
    st->s = lr_solver_new(&j->tr);
    st->gpu = NULL;
    lr_solver_tolerance(st->s, o->tol);
#ifdef SW_CUDA
    if (o->device == PROBE_CUDA) st->gpu = lr_cuda_new(st->s);   // L1 too: its Hessian blocks and gradients
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

static void path_step(PathJob *j, PathState *st, int k) {
    double C = probe_C(k);
    j->kkt[k] = logreg_fit_on(st->s, st->gpu, j->pen, C, &st->m) / logreg_tol(st->s, j->pen, C);
    if (j->ev.n) j->correct[k] = logreg_correct(&st->m, &j->ev);
    j->nonzero[k] = logreg_nonzero(&st->m, j->pen);
    if (j->keep) logreg_copy(&j->model[k], &st->m);
    j->ran = k + 1;
}

// Whether penalty p's paths stop after C index k: its pooled accuracy at the last
// PROBE_STOP_RUN Cs each PROBE_STOP_DROP or more below its best so far.
static int peaked(const PathJob *jobs, int njobs, Penalty p, int k, int n_eval) {
    double acc[PROBE_NC] = {0}, best = 0;
    for (int i = 0; i < njobs; i++)
        for (int c = 0; c <= k && jobs[i].pen == p && jobs[i].ev.n; c++) acc[c] += (double)jobs[i].correct[c] / n_eval;
    for (int c = 0; c <= k; c++) best = acc[c] > best ? acc[c] : best;
    if (k + 1 < PROBE_STOP_RUN) return 0;
    for (int c = k + 1 - PROBE_STOP_RUN; c <= k; c++)
        if (acc[c] > best - PROBE_STOP_DROP) return 0;
    return 1;
}

// A job alone (or the last one not stopped) gets both cores inside its products; several
// share them one job per core.
void sweep_run(PathJob *jobs, int njobs, const ProbeOpts *o, int n_eval) {
    Progress p;
    int done = 0;
    progress_init(&p, "probe", "fits", njobs * PROBE_NC, o->progress == 0 ? -1 : o->progress == 1);
    PathState *st = xcalloc(njobs, sizeof *st);
    int stopped[2] = {0, 0};
    #pragma omp parallel for schedule(dynamic, 1) if (njobs > 1)
    for (int i = 0; i < njobs; i++) path_open(&st[i], &jobs[i], o);
    for (int k = 0; k < PROBE_NC; k++) {
        int active = 0;
        for (int i = 0; i < njobs; i++) active += !stopped[jobs[i].pen];
        #pragma omp parallel for schedule(dynamic, 1) if (active > 1)
        for (int i = 0; i < njobs; i++) {
            if (stopped[jobs[i].pen]) continue;
            path_step(&jobs[i], &st[i], k);
            progress_tick(&p, &done);
        }
        for (int pen = 0; pen < 2; pen++)
            if (!stopped[pen] && peaked(jobs, njobs, (Penalty)pen, k, n_eval)) {
                stopped[pen] = 1;
                for (int i = 0; i < njobs; i++) p.total -= (int)jobs[i].pen == pen ? PROBE_NC - 1 - k : 0;
            }
    }
    progress_done(&p);
    for (int i = 0; i < njobs; i++) path_close(&st[i]);
    free(st);
}

void path_job_free(PathJob *j) {
    free((void *)j->tr.idx);
    free((void *)j->ev.idx);
    for (int k = 0; k < j->ran; k++)
        if (j->keep) logreg_free(&j->model[k]);
}
