// eval.h: bits per character of a model over a byte span, with carried state.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "base/progress.h"
#include "train/data.h"
#include "model/model.h"

// The warm protocol's default: bytes of context each stripe but the first runs over first.
#define EVAL_WARMUP 2048

// Batch rows for evaluating len bytes with windows of T: at most `batch`, fewer for short spans.
int eval_batch_for(size_t len, int batch, int T);
// Splits the span into a->B stripes, runs each from a zero state with windows of up to a->T
// steps and carried state, and returns the mean bits per character over every prediction
// (eval_count of them, into *count). warm = 0: each stripe predicts its own bytes after its
// first (B*(len/B - 1) predictions). warm > 0: every stripe but the first runs first over the
// warm bytes before its own, unscored, so that every byte after the span's first is predicted
// once (but the last < B), each with warm bytes of context or more; B = 1 is one stream.
// pr (NULL: none) shows the share done, in [0, 1].
double eval_bpc(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t warm, size_t *count, Progress *pr);
// eval_bpc's sum: the loss in nats over its *count predictions.
double eval_span_nats(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t warm, size_t *count, Progress *pr);
// The parts of eval_bpc, for ranks that each evaluate some of the stripes (stripes_share,
// warm = 0 only): B stripes of a span (dies if they are shorter than 2 bytes), and the summed
// loss in nats of the a->B = s->B stripes of s over their scored predictions.
Stripes eval_stripes(const uint8_t *bytes, size_t len, int B, int T);
// The warm-up eval_bpc runs for a span of len bytes in B stripes: warm, or less where the
// span is short (every stripe scores a byte at least).
size_t eval_warm_for(size_t len, int B, size_t warm);
Stripes eval_stripes_warm(const uint8_t *bytes, size_t len, int B, int T, size_t warm);
size_t eval_count(const Stripes *s);
double eval_nats(Model *m, Acts *a, const Stripes *s);
// eval_nats with after(ctx, m, a, T) called after each window's forward, before its state is
// carried (dynamic evaluation's update, dyneval.c), and progress shown on pr (both NULL: none).
typedef void (*EvalHook)(void *ctx, Model *m, Acts *a, int T);
double eval_nats_then(Model *m, Acts *a, const Stripes *s, EvalHook after, void *ctx, Progress *pr);
