// probe_sweep.h: fitting many warm-started C paths at once: the (penalty, fold) jobs of a
// probe's sweep advance through C together, one C at a time (the jobs of one C run in
// parallel on the cores; each path is sequential: warm starts), so that the pooled held-out
// accuracy of every C is known before the next: a penalty's paths stop once it has clearly
// peaked (PROBE_STOP_RUN Cs in a row each PROBE_STOP_DROP or more below the best so far).
// A penalty whose best C is an edge of the grid goes on past that edge, one C at a time,
// until its best is inside the Cs fitted or PROBE_EXTRA Cs were added (probe_grid.h): above the
// grid the paths go on from their models; below it each C starts at w = 0 (strong
// regularisation: the optimum lies near it). Progress on stderr. A path may keep its models
// for the final answer.
#pragma once
#include "probe/logreg.h"
#include "probe/probe_grid.h"

#define PROBE_STOP_RUN 3
#define PROBE_STOP_DROP 0.005

typedef struct {
    Penalty pen;
    LrSet tr, ev;              // fit on tr; count correct rows of ev (ev.n may be 0)
    int keep;                  // keep the model of every C
    int fold;                  // 1..K for a CV fold, else 0 (for progress)
    int lo, hi;                // the C indices fitted: lo .. hi - 1
    int correct[PROBE_NK];
    double kkt[PROBE_NK];      // final KKT violation / tolerance (converged: <= 1)
    long nonzero[PROBE_NK];
    LogReg model[PROBE_NK];    // when keep
} PathJob;

// n_eval: the held-out rows that one C's accuracy pools (dev rows, or all rows over the folds).
// tol: every fit's relative KKT tolerance (0: the solver's defaults); gpu: the products on the
// GPU; progress: as ProbeOpts.progress (0: on a terminal, 1: always, 2: never).
void sweep_run(PathJob *jobs, int njobs, int n_eval, double tol, int gpu, int progress);
void path_job_free(PathJob *j);
// acc[k]: penalty p's held-out accuracy at C index k, pooled over its jobs (-1: not fitted).
void sweep_accuracy(const PathJob *jobs, int njobs, Penalty p, int n_eval, double acc[PROBE_NK]);
// The C index of the best accuracy, ties to the smaller C; -1 when none was fitted.
int sweep_best(const double acc[PROBE_NK]);
