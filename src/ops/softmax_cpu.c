// softmax_cpu.c: softmax cross-entropy over V classes per row. CPU reference.
#include "ops/backend.h"
#include <tgmath.h>

// loss[n] = log sum_j exp(l_j - max) - (l_target - max), in nats. dlogits (if non-NULL,
// may alias logits) = (softmax - onehot) * dscale, written after the loss was read out.
void softmax_xent_cpu(real *loss, real *dlogits, const real *logits, const int *target, int N, int V, real dscale) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *l = logits + (long)n * V;
        real mx = l[0], sum = 0;
        for (int j = 1; j < V; j++) mx = l[j] > mx ? l[j] : mx;
        for (int j = 0; j < V; j++) sum += exp(l[j] - mx);
        int t = target[n];
        loss[n] = log(sum) - (l[t] - mx);
        if (!dlogits) continue;
        real *d = dlogits + (long)n * V, inv = 1 / sum;
        for (int j = 0; j < V; j++) d[j] = (exp(l[j] - mx) * inv - (j == t)) * dscale;
    }
}
