// eval.h: bits per character of a model over a byte span, with carried state.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "train/data.h"
#include "model/model.h"

// Batch rows for evaluating len bytes with windows of T: at most `batch`, fewer for short spans.
int eval_batch_for(size_t len, int batch, int T);
// Splits the span into a->B stripes, runs each from a zero state with windows of up to a->T
// steps and carried state, and returns the mean bits per character over every prediction
// (B*(len/B - 1) of them); *count gets that number.
double eval_bpc(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t *count);
// The parts of eval_bpc, for ranks that each evaluate some of the stripes (dist_stripes):
// B stripes of a span (dies if they are shorter than 2 bytes), and the summed loss in nats
// of the a->B = s->B stripes of s, each from a zero state: (stripe_len - 1) predictions each.
Stripes eval_stripes(const uint8_t *bytes, size_t len, int B, int T);
double eval_nats(Model *m, Acts *a, const Stripes *s);
