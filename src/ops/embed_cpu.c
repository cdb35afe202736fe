// embed_cpu.c: token embedding lookup, table is [V, E]. CPU reference.
#include "ops/backend.h"
#include <stdlib.h>
#include <string.h>

// out[N,E] = table[tok[n], :]
void embed_fwd_cpu(real *out, const real *table, const int *tok, int N, int E) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (long)n * E, table + (long)tok[n] * E, sizeof(real) * (size_t)E);
}

#define EMBED_COLS 256  // columns a task: rows v x column blocks share the threads evenly

// dtable[tok[n], :] += dout[n, :] in the order both twins follow (cuda/ops/embed.cu), so both give
// the same bits: for each row v, the positions n with tok[n] == v, in increasing n, are cut
// into runs of SW_EMBED_RUN; each run is summed from zero in n order, and the runs' sums are
// added to dtable[v] in run order: dtable[v] = ((dtable[v] + run0) + run1) + ... Rows that do
// not occur are not touched (the table may have fewer than SW_VOCAB rows).
void embed_bwd_cpu(real *dtable, const real *dout, const int *tok, int N, int E) {
    if (N <= 0 || E <= 0) return;
    int start[SW_VOCAB + 1] = {0}, fill[SW_VOCAB];
    int *perm = xmalloc(sizeof(int) * (size_t)N);  // positions by token, n order within one
    for (int n = 0; n < N; n++) start[tok[n] + 1]++;
    for (int v = 0; v < SW_VOCAB; v++) {
        fill[v] = start[v];
        start[v + 1] += start[v];
    }
    for (int n = 0; n < N; n++) perm[fill[tok[n]]++] = n;
    const int blocks = (E + EMBED_COLS - 1) / EMBED_COLS;
    #pragma omp parallel for collapse(2) schedule(dynamic)
    for (int v = 0; v < SW_VOCAB; v++)
        for (int c = 0; c < blocks; c++) {
            const int e0 = c * EMBED_COLS, w = E - e0 < EMBED_COLS ? E - e0 : EMBED_COLS;
            for (int b = start[v]; b < start[v + 1]; b += SW_EMBED_RUN) {
                const int end = b + SW_EMBED_RUN < start[v + 1] ? b + SW_EMBED_RUN : start[v + 1];
                real run[EMBED_COLS] = {0};
                for (int i = b; i < end; i++) {
                    const real *restrict d = dout + (long)perm[i] * E + e0;
                    for (int e = 0; e < w; e++) run[e] += d[e];
                }
                real *restrict dst = dtable + (long)v * E + e0;
                for (int e = 0; e < w; e++) dst[e] += run[e];
            }
        }
    free(perm);
}
