// eltwise_cpu.c: the backward of the mlstm's elementwise steps, h * m_t and relu(. + a_t)
// (their forward is norm_act_fwd's, src/ops/layernorm_cpu.c). CPU reference; CUDA twin:
// cuda/ops/eltwise.cu.
#include "ops/backend.h"

#define PAR_MIN 32768

// da = dy * b, db = dy * a; dy is read before either is written (both may alias it).
void mul_bwd_cpu(real *da, real *db, const real *dy, const real *a, const real *b, size_t n) {
    #pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        real d = dy[i], ai = a[i];
        da[i] = d * b[i];
        db[i] = d * ai;
    }
}

// dx = dy where the output y was positive, else 0; dx may alias dy.
void relu_bwd_cpu(real *dx, const real *dy, const real *y, size_t n) {
    #pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : 0;
}
