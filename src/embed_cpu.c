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
// the same order, so both give the same values. Only rows that occur are touched (the table
// may have fewer than SW_VOCAB rows).
void embed_bwd_cpu(real *dtable, const real *dout, const int *tok, int N, int E) {
    real *part = xmalloc(sizeof(real) * (size_t)SW_VOCAB * E);
    int rows[SW_EMBED_SLICE], nrows;
    unsigned char seen[SW_VOCAB] = {0};
    for (int s = 0; s < N; s += SW_EMBED_SLICE) {
        nrows = 0;
        for (int k = s; k < N && k < s + SW_EMBED_SLICE; k++) {
            real *restrict row = part + (long)tok[k] * E;
            if (!seen[tok[k]]) {
                seen[tok[k]] = 1;
                rows[nrows++] = tok[k];
                memset(row, 0, sizeof(real) * (size_t)E);
            }
            const real *restrict d = dout + (long)k * E;
            for (int e = 0; e < E; e++) row[e] += d[e];
        }
        for (int i = 0; i < nrows; i++) {
            real *restrict dst = dtable + (long)rows[i] * E, *restrict src = part + (long)rows[i] * E;
            for (int e = 0; e < E; e++) dst[e] += src[e];
            seen[rows[i]] = 0;
        }
    }
    free(part);
}
