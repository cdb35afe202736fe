// probe_fixture.h: rows with the correlation of LSTM features for the probe tests (CPU and
// GPU): tanh of 4 shared factors plus noise; labels from units 3 and 7 plus noise.
#pragma once
#include <math.h>
#include <stdlib.h>
#include "test.h"

static inline void correlated_rows(float *X, int *y, int n, int d, unsigned long long seed) {
    double *A = malloc(sizeof(double) * 4 * d);
    for (int k = 0; k < 4 * d; k++) A[k] = 2 * test_rand(&seed) - 1;
    for (int i = 0; i < n; i++) {
        double z[4];
        for (int k = 0; k < 4; k++) z[k] = 2 * test_rand(&seed) - 1;
        for (int j = 0; j < d; j++) {
            double v = 0.3 * (2 * test_rand(&seed) - 1);
            for (int k = 0; k < 4; k++) v += z[k] * A[k * d + j];
            X[(size_t)i * d + j] = (float)tanh(v);
        }
        y[i] = X[(size_t)i * d + 3] - 0.5 * X[(size_t)i * d + 7] + 0.3 * (2 * test_rand(&seed) - 1) > 0;
    }
    free(A);
}

// Rows like a char-LM's raw final cell states (MR on configs/tiny.cfg: mean 3, std 59,
// correlation eigenvalues from 185 down to 2.5e-5): one dominant shared factor, three weaker
// ones and little noise, at scale 60; labels from units 1 and 5 (of the noise-level part)
// plus noise, so the fit leans on ill-conditioned directions.
static inline void raw_state_rows(float *X, int *y, int n, int d, unsigned long long seed) {
    double *A = malloc(sizeof(double) * 4 * d);
    for (int k = 0; k < 4 * d; k++) A[k] = (k < d ? 1 : 0.2) * (2 * test_rand(&seed) - 1);
    for (int i = 0; i < n; i++) {
        double z[4], v[64];
        for (int k = 0; k < 4; k++) z[k] = 2 * test_rand(&seed) - 1;
        for (int j = 0; j < d && j < 64; j++) {
            v[j] = 0.01 * (2 * test_rand(&seed) - 1);
            for (int k = 0; k < 4; k++) v[j] += z[k] * A[k * d + j];
            X[(size_t)i * d + j] = (float)(3 + 60 * v[j]);
        }
        y[i] = 40 * (v[1] - v[5]) + 0.5 * (2 * test_rand(&seed) - 1) > 0;
    }
    free(A);
}
