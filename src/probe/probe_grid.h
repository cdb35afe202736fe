// probe_grid.h: the grid of C a probe sweeps, C = 2^-8 .. 2^3, and the Cs a path may add past
// each of its edges; shared by the probe (probe.h) and its sweep (probe_sweep.h), below both.
#pragma once
#include <math.h>

#define PROBE_NC 12      // the grid: C = 2^-8 .. 2^3
#define PROBE_EXTRA 4    // Cs a path may add past each edge of the grid: C = 2^-12 .. 2^7 at most
#define PROBE_NK (PROBE_NC + 2 * PROBE_EXTRA)   // C index k: C = 2^(k - 8 - PROBE_EXTRA)
#define PROBE_K0 PROBE_EXTRA                    // the grid: k = PROBE_K0 .. PROBE_K0 + PROBE_NC - 1

static inline int probe_log2C(int k) { return k - 8 - PROBE_EXTRA; }
static inline double probe_C(int k) { return ldexp(1.0, probe_log2C(k)); }   // the C of index k
