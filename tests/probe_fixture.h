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
