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
    Stripes s = {bytes, len, B, T, len / (size_t)B, 0, len / (size_t)B, 0};
    if (s.stripe_len < 2) die("evaluation span of %zu bytes is too short for %d stripes", len, B);
    return s;
}

// Stripe b reads from b*L (L = stripe_len) for warm + L steps; stripe 0 scores all of them,
// the others the last L: the targets (warm + b*L, warm + (b+1)*L], after stripe 0's (0, warm + L].
size_t eval_warm_for(size_t len, int B, size_t warm) {
    if (len < 2 + (size_t)B) die("evaluation span of %zu bytes is too short for %d stripes", len, B);
    return warm < len - 1 - (size_t)B ? warm : len - 1 - (size_t)B;  // every stripe scores a byte at least
}

Stripes eval_stripes_warm(const uint8_t *bytes, size_t len, int B, int T, size_t warm) {
    warm = eval_warm_for(len, B, warm);
    size_t L = (len - 1 - warm) / (size_t)B;
    return (Stripes){bytes, len, B, T, L, 0, warm + L + 1, warm};
}

size_t eval_count(const Stripes *s) {
    return s->warm ? s->warm + (size_t)s->B * s->stripe_len : (size_t)s->B * (s->stripe_len - 1);
}

// The window's loss in nats over its scored predictions (row t*B + b of a->loss_host).
static double window_nats(const Acts *a, const Stripes *s, size_t pos, int T, double mean) {
    if (pos >= s->warm) return mean * T * a->B;
    double sum = 0;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < a->B; b++)
            if (b == 0 || pos + (size_t)t >= s->warm) sum += a->loss_host[(size_t)t * a->B + b];
    return sum;
}

double eval_nats_then(Model *m, Acts *a, const Stripes *s, EvalHook after, void *ctx, Progress *pr) {
    if (s->B != a->B) die("internal: %d evaluation stripes, buffers for %d", s->B, a->B);
    int *in = xmalloc(sizeof(int) * (size_t)a->B * a->T), *tgt = xmalloc(sizeof(int) * (size_t)a->B * a->T);
    double nats = 0;
    acts_reset_state(m, a);
    for (size_t pos = 0; pos + 1 < s->span;) {
        int T = (int)(s->span - 1 - pos < (size_t)a->T ? s->span - 1 - pos : (size_t)a->T);
        stripes_fill(s, pos, T, in, tgt);
        nats += window_nats(a, s, pos, T, model_forward(m, a, in, tgt, T));
        if (after) after(ctx, m, a, T);
        acts_carry_state(m, a);
        pos += (size_t)T;
        if (pr) progress_show(pr, (double)pos / (double)(s->span - 1));
    }
    free(in);
    free(tgt);
    return nats;
}

double eval_nats(Model *m, Acts *a, const Stripes *s) { return eval_nats_then(m, a, s, NULL, NULL, NULL); }

double eval_span_nats(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t warm, size_t *count, Progress *pr) {
    Stripes s = warm ? eval_stripes_warm(bytes, len, a->B, a->T, warm) : eval_stripes(bytes, len, a->B, a->T);
    *count = eval_count(&s);
    return eval_nats_then(m, a, &s, NULL, NULL, pr);
}

double eval_bpc(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t warm, size_t *count, Progress *pr) {
    return eval_span_nats(m, a, bytes, len, warm, count, pr) / (double)*count / log(2.0);
}
