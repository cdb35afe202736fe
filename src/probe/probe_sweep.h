// probe_sweep.h: fitting many warm-started C paths at once: the (penalty, fold) jobs of a
// probe's sweep run in parallel on the cores (each path is sequential: warm starts), with
// progress on stderr. A path may keep its models for the final answer.
#pragma once
#include "probe/probe.h"

typedef struct {
    Penalty pen;
    LrSet tr, ev;              // fit on tr; count correct rows of ev (ev.n may be 0)
    int keep;                  // keep the model of every C
    int fold;                  // 1..K for a CV fold, else 0 (for progress)
    int correct[PROBE_NC];
    LogReg model[PROBE_NC];    // when keep
} PathJob;

void sweep_run(PathJob *jobs, int njobs, ProbeDevice dev);
void path_job_free(PathJob *j);
