// dyn_streams.h: `eval --dynamic --streams N`: the span cut into N contiguous pieces, each read
// as its own stream from a zero state (and, dynamic, from the trained weights, adapting its
// own copy by dyneval.h's rule with the shared rms statistics). Not the published protocol:
// every piece starts cold, so it scores a little worse than one stream, but the pieces are
// independent and spread over several GPUs, one thread each, each GPU taking its pieces in
// turn. On one device the pieces run one after another on one model.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "base/progress.h"
#include "train/dyneval.h"

// Piece k of n of a span of len bytes: it starts at k * (len / n) and holds len / n bytes,
// the last piece the rest too. Dies when a piece would hold fewer than 2 bytes.
size_t dyn_piece(size_t len, int n, int k, size_t *piece_len);

typedef struct {
    int streams;       // N pieces
    int devices;       // 1: every piece on m; G > 1: piece k on device k mod G (m is device 0)
    const char *ckpt;  // what each further device loads (model_load_infer, like m: its device,
    int raw;           //   precision and raw-weights choice)
    int T;             // steps a window: the segment
} DynStreams;

// The bits per character of the span read as s->streams pieces, over all of their predictions
// (into *count): static when d is NULL (m's weights as they are, forward only: after a dynamic
// run, dyn_restore first; further devices load the checkpoint's), else dynamic with h from
// d's statistics (d->m = m). The pieces' sums add in piece order, whichever device ran them.
// Progress (a share) on pr unless NULL: within the one piece, or a step per piece done on m.
double dyn_streams_bpc(Model *m, DynEval *d, DynHyper h, const DynStreams *s, const uint8_t *bytes, size_t len,
                       size_t *count, Progress *pr);
