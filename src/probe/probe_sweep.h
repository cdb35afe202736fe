// probe_sweep.h: fitting many warm-started C paths at once: the (penalty, fold) jobs of a
// probe's sweep advance through C together, one C at a time (the jobs of one C run in
// parallel on the cores; each path is sequential: warm starts), so that the pooled held-out
// accuracy of every C is known before the next: a penalty's paths stop once it has clearly
// peaked (PROBE_STOP_RUN Cs in a row each PROBE_STOP_DROP or more below the best so far).
// Progress on stderr. A path may keep its models for the final answer.
#pragma once
#include "probe/probe.h"

#define PROBE_STOP_RUN 3
#define PROBE_STOP_DROP 0.005

typedef struct {
    Penalty pen;
    LrSet tr, ev;              // fit on tr; count correct rows of ev (ev.n may be 0)
    int keep;                  // keep the model of every C
    int fold;                  // 1..K for a CV fold, else 0 (for progress)
    int ran;                   // the C values fitted: 0 .. ran-1
    int correct[PROBE_NC];
    double kkt[PROBE_NC];      // final KKT violation / tolerance (converged: <= 1)
    long nonzero[PROBE_NC];
    LogReg model[PROBE_NC];    // when keep
} PathJob;

// n_eval: the held-out rows that one C's accuracy pools (dev rows, or all rows over the folds).
void sweep_run(PathJob *jobs, int njobs, const ProbeOpts *o, int n_eval);
void path_job_free(PathJob *j);
