// embed_cpu.c: token embedding lookup, table is [V, E]. CPU reference.
#include "backend.h"
#include <stdlib.h>
#include <string.h>

// out[N,E] = table[tok[n], :]
void embed_fwd_cpu(real *out, const real *table, const int *tok, int N, int E) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (long)n * E, table + (long)tok[n] * E, sizeof(real) * (size_t)E);
}

// dtable[tok[n], :] += dout[n, :]: each slice of SW_EMBED_SLICE tokens is summed from zero in
// n order, then the slices are added in order; the CUDA twin sums the slices side by side in
// the same order, so both give the same bits.
void embed_bwd_cpu(real *dtable, const real *dout, const int *tok, int N, int E) {
    const size_t n = (size_t)SW_VOCAB * E;
    real *part = xmalloc(sizeof(real) * n);
    for (int s = 0; s < N; s += SW_EMBED_SLICE) {
        memset(part, 0, sizeof(real) * n);
        for (int k = s; k < N && k < s + SW_EMBED_SLICE; k++) {
            real *restrict row = part + (long)tok[k] * E;
            const real *restrict d = dout + (long)k * E;
            for (int e = 0; e < E; e++) row[e] += d[e];
        }
        for (size_t i = 0; i < n; i++) dtable[i] += part[i];
    }
    free(part);
}
