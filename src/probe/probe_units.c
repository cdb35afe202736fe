// probe_units.c: the sentiment-unit view of a probe: the units with the largest L1 weights,
// and the best single unit alone, used as a threshold classifier (Radford et al. 2017 read
// sentiment off one unit this way).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "probe/probe.h"

void probe_top_units(const LogReg *m, int *unit, double *weight, int top) {
    for (int t = 0; t < top; t++) {
        int best = -1;
        for (int j = 0; j < m->d; j++) {
            int taken = 0;
            for (int u = 0; u < t; u++) taken |= unit[u] == j;
            if (!taken && (best < 0 || fabs(m->w[j]) > fabs(m->w[best]))) best = j;
        }
        unit[t] = best;
        weight[t] = best < 0 ? 0 : m->w[best];
    }
}

typedef struct { float v; int y; } Pt;

static int by_value(const void *a, const void *b) {
    float x = ((const Pt *)a)->v, z = ((const Pt *)b)->v;
    return (x > z) - (x < z);
}

// Best training accuracy of "x > thr -> sign" over thresholds between distinct values
// (thr = the midpoint), for column j of s; pt [n] is scratch.
static SingleUnit best_threshold(const ProbeSet *s, int j, Pt *pt) {
    int n = s->n, ones = 0;
    for (int i = 0; i < n; i++) pt[i] = (Pt){s->X[(size_t)i * s->d + j], s->y[i]}, ones += s->y[i];
    qsort(pt, n, sizeof(Pt), by_value);
    // Everything above the threshold is 1: correct = zeros below + ones above.
    int below0 = 0, below1 = 0;
    SingleUnit b = {j, pt[0].v - 1, ones > n - ones ? 1 : -1, (double)(ones > n - ones ? ones : n - ones) / n};
    for (int i = 0; i < n; i++) {
        below0 += !pt[i].y, below1 += pt[i].y;
        if (i + 1 < n && pt[i + 1].v == pt[i].v) continue;
        int up = below0 + ones - below1, down = n - up;
        double thr = i + 1 < n ? 0.5 * ((double)pt[i].v + pt[i + 1].v) : pt[i].v;
        if (up > b.train_acc * n) b = (SingleUnit){j, thr, 1, (double)up / n};
        if (down > b.train_acc * n) b = (SingleUnit){j, thr, -1, (double)down / n};
    }
    return b;
}

SingleUnit probe_single_unit(const ProbeSet *train) {
    SingleUnit best = {-1, 0, 1, -1};
    #pragma omp parallel
    {
        Pt *pt = xmalloc((train->n + 1) * sizeof(Pt));
        SingleUnit mine = {-1, 0, 1, -1};
        #pragma omp for schedule(static)
        for (int j = 0; j < train->d; j++) {
            SingleUnit u = best_threshold(train, j, pt);
            if (u.train_acc > mine.train_acc) mine = u;  // ties: the lowest unit of the thread
        }
        #pragma omp critical(single_unit)
        if (mine.train_acc > best.train_acc || (mine.train_acc == best.train_acc && mine.unit < best.unit)) best = mine;
        free(pt);
    }
    return best;
}

double single_unit_accuracy(const SingleUnit *u, const ProbeSet *s) {
    int ok = 0;
    for (int i = 0; i < s->n; i++) ok += ((s->X[(size_t)i * s->d + u->unit] > u->thr) == (u->sign > 0)) == (s->y[i] == 1);
    return (double)ok / s->n;
}
