// logreg_l1.c: the L1 Newton step: the quadratic model plus |w|_1 minimised by cyclic
// coordinate descent over the coordinates that may move (GLMNET / newGLMNET).
#include <math.h>
#include <string.h>
#include "probe/logreg_impl.h"

#define MAX_CD 500        // coordinate-descent sweeps per Newton step

// argmin over t of G t + h t^2 / 2 + |u + t|
static double l1_step(double G, double h, double u) {
    if (G + 1 <= h * u) return -(G + 1) / h;
    if (G - 1 >= h * u) return -(G - 1) / h;
    return -u;
}

// Stops when the model's own KKT violation is below tol.
void newton_cd(const LrSolver *s, const double *w, Work *k, double tol) {
    int d = s->d;
    memset(k->dw, 0, (d + 1) * sizeof(double));
    memset(k->dz, 0, s->n * sizeof(double));
    memset(k->u, 0, s->n * sizeof(double));  // u = D * dz
    for (int sweep = 0; sweep < MAX_CD; sweep++) {
        double qv = 0;
        for (int j = 0; j < d; j++) {
            if (!k->act[j]) continue;
            double G = k->g[j] + (sweep ? col_dot(s, j, k->u) : 0), v = w[j] + k->dw[j];
            qv = fmax(qv, fabs(pseudo_grad(PEN_L1, G, v)));
            double t = l1_step(G, k->h[j], v);
            if (t == 0) continue;
            k->dw[j] += t;
            col_axpy_wt(s, j, t, k->dz, k->u, k->D);
        }
        double Gb = k->g[d] + dot(k->D, k->dz, s->n), t = -Gb / k->h[d];
        k->dw[d] += t;
        for (int i = 0; i < s->n; i++) k->u[i] = k->D[i] * (k->dz[i] += t);
        if (fmax(qv, fabs(Gb)) <= tol) break;
    }
}

