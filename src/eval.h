// eval.h: bits per character of a model over a byte span, with carried state.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "model.h"

// Batch rows for evaluating len bytes with windows of T: at most `batch`, fewer for short spans.
int eval_batch_for(size_t len, int batch, int T);
// Splits the span into a->B stripes, runs each from a zero state with windows of up to a->T
// steps and carried state, and returns the mean bits per character over every prediction
// (B*(len/B - 1) of them); *count gets that number.
double eval_bpc(Model *m, Acts *a, const uint8_t *bytes, size_t len, size_t *count);
