// grow_scores.c: RigL's grow scores from the operands of each matrix's weight gradient (grow_scores.h).
#include <stdlib.h>
#include "model/grow_scores.h"
#include "model/mlstm.h"

// Values of a matrix's dense gradient made at once: 256 MiB of fp32 (H = 8192's gates take 4).
#define SCORE_CHUNK ((size_t)1 << 26)

// The operands of the gradient of layer l's mask k: the LSTM's W_h from dz and h_{t-1}, its
// W_x (above layer 0) from dz and the input; the mLSTM's (mlstm_grad_operands).
static void operands(const Model *m, const Acts *a, int l, int k, const real **dy, const real **x) {
    if (m->mlstm) {
        mlstm_grad_operands(m, a, l, k, dy, x);
        return;
    }
    *dy = a->dz[l];
    *x = k ? a->h[l - 1] + (size_t)a->B * m->H : a->h[l];
}

// Matrix w's squared block norms, block row br adding into mask row br % nr (its gate copies).
static double *matrix_scores(const Model *m, const Mask *mk, const BsMat *w, const real *dy, const real *x, int N,
                             void (*sum)(real *, size_t)) {
    const Backend *be = m->be;
    const int bs = w->bs, C = w->cols, nbc = C / bs;
    int rows = (int)(SCORE_CHUNK / (size_t)C) / bs * bs;
    rows = rows < bs ? bs : rows > w->rows ? w->rows : rows;
    size_t nsq = (size_t)(rows / bs) * nbc;
    real *g = be->alloc(sizeof(real) * (size_t)rows * C), *sq = be->alloc(sizeof(real) * nsq), *host = xmalloc(sizeof(real) * nsq);
    double *score = xcalloc((size_t)mk->nr * mk->nc, sizeof(double));
    for (int r0 = 0; r0 < w->rows; r0 += rows) {
        int R = w->rows - r0 < rows ? w->rows - r0 : rows;
        be->dense_grad(g, dy, w->rows, r0, x, N, C, R);
        if (sum) sum(g, (size_t)R * C);
        be->block_sumsq(sq, g, R, C, bs);
        be->to_host(host, sq, sizeof(real) * (size_t)(R / bs) * nbc);
        for (int b = 0; b < R / bs; b++)
            for (int c = 0; c < nbc; c++) score[(size_t)((r0 / bs + b) % mk->nr) * nbc + c] += host[(size_t)b * nbc + c];
    }
    be->free(g);
    be->free(sq);
    free(host);
    return score;
}

void model_grow_scores(const Model *m, const Acts *a, void (*sum)(real *buf, size_t n), double **scores) {
    const int per = 2 + m->D;
    for (int i = 0; i < per * m->L; i++) {
        const BsMat *w;
        const Mask *mk = model_layer_mask(m, i / per, i % per, &w, NULL);
        const real *dy, *x;
        scores[i] = NULL;
        if (!mk) continue;
        operands(m, a, i / per, i % per, &dy, &x);
        scores[i] = matrix_scores(m, mk, w, dy, x, a->T_run * a->B, sum);
    }
}
