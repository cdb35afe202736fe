// probe_sweep.c: the jobs of a sweep on the cores, largest first, with progress on stderr.
#include "probe/probe_sweep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "probe/logreg_cuda.h"

#define QUIET_S 3       // no progress for sweeps shorter than this
#define EVERY_S 2       // seconds between progress lines (10 when stderr is not a terminal)

typedef struct { int done, total; double t0, last; int tty; } Progress;

static void progress_tick(Progress *p, const PathJob *j, int k) {
    #pragma omp critical(probe_progress)
    {
        p->done++;
        double now = now_sec(), el = now - p->t0;
        if (el >= QUIET_S && (now - p->last >= (p->tty ? EVERY_S : 5 * EVERY_S) || p->done == p->total)) {
            p->last = now;
            char where[32] = "full set";
            if (j->fold) snprintf(where, sizeof where, "fold %d", j->fold);
            fprintf(stderr, "%sprobe: %d/%d fits (last: %s, %s, C=2^%d), %.0f s elapsed, ETA %.0f s%s", p->tty ? "\r" : "",
                    p->done, p->total, penalty_name(j->pen), where, k - 8, el,
                    el / p->done * (p->total - p->done), p->tty && p->done < p->total ? "  " : "\n");
            fflush(stderr);
        }
    }
}

static void fit_path(PathJob *j, ProbeDevice dev, Progress *p) {
    LrSolver *s = lr_solver_new(&j->tr);
    LrCuda *gpu = NULL;
#ifdef SW_CUDA
    if (dev == PROBE_CUDA && j->pen == PEN_L2) gpu = lr_cuda_new(s);
#endif
    if (j->pen == PEN_L2) lr_solver_precondition(s, gpu);
    LogReg m;
    logreg_init(&m, s);
    for (int k = 0; k < PROBE_NC; k++) {
        logreg_fit_on(s, gpu, j->pen, probe_C(k), &m);
        if (j->ev.n) j->correct[k] = logreg_correct(&m, &j->ev);
        if (j->keep) logreg_copy(&j->model[k], &m);
        progress_tick(p, j, k);
    }
#ifdef SW_CUDA
    lr_cuda_free(gpu);
#endif
    logreg_free(&m);
    lr_solver_free(s);
}

// One job alone gets both cores inside its products; several share them one job per core.
void sweep_run(PathJob *jobs, int njobs, ProbeDevice dev) {
    Progress p = {0, njobs * PROBE_NC, now_sec(), now_sec(), isatty(2)};
    #pragma omp parallel for schedule(dynamic, 1) if (njobs > 1)
    for (int i = 0; i < njobs; i++) fit_path(&jobs[i], dev, &p);
}

void path_job_free(PathJob *j) {
    free((void *)j->tr.idx);
    free((void *)j->ev.idx);
    for (int k = 0; k < PROBE_NC; k++)
        if (j->keep) logreg_free(&j->model[k]);
}
