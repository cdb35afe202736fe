// probe.h: a linear probe: logistic regression over a sweep of C = 2^-8 .. 2^3 with L2
// and/or L1 penalties, chosen on a dev set or by k-fold cross-validation, refitted on the
// training set and scored on a test set. When a penalty's best C lies at an edge of that
// grid, its paths go on past the edge, a factor of 2 at a time, up to PROBE_EXTRA Cs
// (probe_grid.h).
#pragma once
#include "probe/logreg.h"
#include "probe/probe_grid.h"
#ifdef __cplusplus
extern "C" {
#endif

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
    double tol;          // relative KKT tolerance of every fit (0: the solver's defaults)
    int progress;        // progress on stderr: 0 when it is a terminal (the default), 1 always, 2 never
} ProbeOpts;

#define PROBE_TOP 10   // units reported by their L1 weight

// One unit as a classifier: predicts 1 when sign * (x[unit] - thr) > 0.
typedef struct {
    int unit;
    double thr;
    int sign;
    double train_acc;      // on the training rows, where the unit and threshold were chosen
} SingleUnit;

typedef struct {
    double accuracy;       // on test; without one, the selection accuracy (dev or CV)
    double dev_accuracy;   // selection accuracy of the chosen C and penalty
    double C;
    Penalty penalty;
    long nonzero;
    int folds;             // 0 when a dev set chose
    int n_train, n_test;
    double sweep[2][PROBE_NK];   // selection accuracy per penalty and C index (-1: not run, or
                                 // cut by the early stop once the accuracy had peaked)
    long sweep_nonzero[2][PROBE_NK];  // non-zero weights of the final path's model
    double sweep_kkt[2][PROBE_NK];    // largest KKT violation / tolerance of the C's fits
    int k_lo[2], k_hi[2];  // the C indices penalty p's paths fitted: k_lo .. k_hi - 1 (0, 0: none)
    int c_interior;        // the chosen C has a C tried on each side (else the path reached PROBE_EXTRA)
    // Every fit must meet its KKT tolerance; one that does not is counted here (and the
    // verb says so): its accuracy is not that of the optimum.
    int fits, unconverged;
    double worst_kkt;      // largest KKT violation / tolerance over all fits (<= 1: all converged)
    // The sentiment-unit view. top_*: the L1 model at the best L1 C (n_top = 0 without L1).
    int n_top, top_unit[PROBE_TOP];
    double top_weight[PROBE_TOP], top_C;
    SingleUnit single;     // the best unit alone, chosen on the final training rows
    double single_accuracy;  // on test; else dev; else training rows
} ProbeResult;

// dev and test may be NULL. Deterministic for a seed (parallel tasks never share sums).
void probe_run(const ProbeSet *train, const ProbeSet *dev, const ProbeSet *test, const ProbeOpts *o, ProbeResult *r);

// probe_units.c: the `top` units of largest |w| (standardised units), in order.
void probe_top_units(const LogReg *m, int *unit, double *weight, int top);
SingleUnit probe_single_unit(const ProbeSet *train);
double single_unit_accuracy(const SingleUnit *u, const ProbeSet *s);

#ifdef __cplusplus
}
#endif
