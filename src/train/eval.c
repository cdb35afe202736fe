// eval.c: bits per character over a span, with carried state (the `eval` verb: cli/cmd_eval.c).
#include "train/eval.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/data.h"
#include "model/model_io.h"

int eval_batch_for(size_t len, int batch, int T) {
    size_t fit = len / (size_t)(T + 1);
    if (fit < 1) fit = 1;
    return fit < (size_t)batch ? (int)fit : batch;
}

Stripes eval_stripes(const uint8_t *bytes, size_t len, int B, int T) {
    Stripes s = {bytes, len, B, T, len / (size_t)B, 0};
    if (s.stripe_len < 2) die("evaluation span of %zu bytes is too short for %d stripes", len, B);
    return s;
}

double eval_nats(Model *m, Acts *a, const Stripes *s) {
    if (s->B != a->B) die("internal: %d evaluation stripes, buffers for %d", s->B, a->B);
    int *in = xmalloc(sizeof(int) * (size_t)a->B * a->T), *tgt = xmalloc(sizeof(int) * (size_t)a->B * a->T);
    double nats = 0;
    acts_reset_state(m, a);
    for (size_t pos = 0; pos + 1 < s->stripe_len;) {
        int T = (int)(s->stripe_len - 1 - pos < (size_t)a->T ? s->stripe_len - 1 - pos : (size_t)a->T);
        stripes_fill(s, pos, T, in, tgt);
        nats += model_forward(m, a, in, tgt, T) * T * a->B;
        acts_carry_state(m, a);
        pos += (size_t)T;
    }
    free(in);
    free(tgt);
    return nats;
}

double eval_bpc(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t *count) {
    Stripes s = eval_stripes(bytes, len, a->B, a->T);
    *count = (size_t)a->B * (s.stripe_len - 1);
    return eval_nats(m, a, &s) / (double)*count / log(2.0);
}
