// embed_cpu.c: token embedding lookup, table is [V, E]. CPU reference.
#include "backend.h"
#include <string.h>

// out[N,E] = table[tok[n], :]
void embed_fwd_cpu(real *out, const real *table, const int *tok, int N, int E) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (long)n * E, table + (long)tok[n] * E, sizeof(real) * (size_t)E);
}

// dtable[tok[n], :] += dout[n, :]. Sequential over n: rows repeat, and the adds must land
// in the same order every time (it is N*E adds, cheap next to the matmuls).
void embed_bwd_cpu(real *dtable, const real *dout, const int *tok, int N, int E) {
    for (int n = 0; n < N; n++) {
        real *restrict row = dtable + (long)tok[n] * E;
        const real *restrict d = dout + (long)n * E;
        for (int e = 0; e < E; e++) row[e] += d[e];
    }
}
