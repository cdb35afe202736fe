// probe.h: a linear probe: logistic regression over a sweep of C = 2^-8 .. 2^3 with L2
// and/or L1 penalties, chosen on a dev set or by k-fold cross-validation, refitted on the
// training set and scored on a test set.
#pragma once
#include "logreg.h"
#ifdef __cplusplus
extern "C" {
#endif

#define PROBE_NC 12   // C = 2^(k-8), k = 0..11

typedef struct {
    const float *X;   // [n, d] row-major
    const int *y;     // [n], 0 or 1
    int n, d;
} ProbeSet;

typedef enum { PROBE_CPU = 0, PROBE_CUDA = 1 } ProbeDevice;

typedef struct {
    int penalties;    // bit PEN_L2 (1 << 0) and/or PEN_L1 (1 << 1)
    int folds;        // k-fold CV when there is no dev set
    long seed;        // fold assignment
    int refit_all;    // refit on train + dev for the test score
    ProbeDevice device;  // where L2 paths are fitted
} ProbeOpts;

typedef struct {
    double accuracy;       // on test; without one, the selection accuracy (dev or CV)
    double dev_accuracy;   // selection accuracy of the chosen C and penalty
    double C;
    Penalty penalty;
    long nonzero;
    int folds;             // 0 when a dev set chose
    int n_train, n_test;
    double sweep[2][PROBE_NC];   // selection accuracy per penalty and C (-1: not run)
} ProbeResult;

double probe_C(int k);
int probe_parse_penalty(const char *v);        // "l2" | "l1" | "both" -> bit mask; dies otherwise
ProbeDevice probe_parse_device(const char *v); // "cpu" | "cuda"; cuda dies on a CPU-only build
// dev and test may be NULL. Deterministic for a seed (parallel tasks never share sums).
void probe_run(const ProbeSet *train, const ProbeSet *dev, const ProbeSet *test, const ProbeOpts *o, ProbeResult *r);

#ifdef __cplusplus
}
#endif
