// dyn_protocol.h: `eval --dynamic`'s protocol around dyneval.h's rule: the spans it reads (the
// gradient statistics' training bytes, the valid bytes that choose eta and lambda), its
// defaults, the static reference it reports beside the dynamic bpc, and how eta and lambda
// are chosen: given (--eta), the grid of --dyn-tune, or by default the walk of dyn_choose.
#pragma once
#include <stddef.h>
#include "train/data.h"
#include "train/dyn_streams.h"
#include "train/dyneval.h"

// Defaults (README "Dynamic evaluation" and docs/QUALITY.md say how they were chosen).
#define DYN_SEGMENT 20
#define DYN_ETA_MLSTM 3e-5  // where the walk starts for each cell, and --dyn-tune's grid centre
#define DYN_ETA_LSTM 3e-6   // the plain cell loses bpc at the mlstm's eta
#define DYN_LAMBDA 1e-3
#define DYN_EPS 2e-5
#define DYN_STATS 1000000
#define DYN_TUNE_BYTES 50000
// The default's choice: at most DYN_CHOOSE_ETAS etas at lambda, then lambda x 10 at the best
// (unless --lambda), each a dynamic pass over the valid split's first dyn_choice_bytes, and
// one static pass there: 5 dynamic passes and a static one (0.4 of a dynamic pass a byte)
// over an 11th of the span cost 0.49 of the dynamic pass over the span, less past 11 x
// DYN_CHOOSE_MAX bytes, where a bpc over that many bytes already tells the pairs apart
// (GCIDE's 399,522 test bytes in 2 minutes, enwik8's 5 MB without 7 minutes of choosing).
#define DYN_CHOOSE_ETAS 4
#define DYN_CHOOSE_SHARE 11
#define DYN_CHOOSE_MAX 25000
// The valid bytes the default's choice reads for a span of `span` bytes in segments of
// `segment`: span / DYN_CHOOSE_SHARE, at most DYN_CHOOSE_MAX, at least two segments and one.
size_t dyn_choice_bytes(size_t span, long segment);
// --dyn-tune's grid: eta x {0.1, 0.3, 1, 3, 10}, lambda x {0, 1, 10}.
#define DYN_TUNE_PAIRS 15

typedef struct {
    int tune;            // --dyn-tune: eta and lambda from the grid around h
    int eta_given;       // --eta: h.eta as given, no choice (with lambda and eps as given or default)
    int lambda_given;    // --lambda: the choice keeps h.lambda
    int static_warm;     // the static reference by the warm protocol (else the same stream(s))
    long segment;        // bytes a segment (the windows' T)
    long stats;          // training bytes of the statistics; 0: DYN_STATS or the split
    long tune_bytes;     // --dyn-tune's valid bytes; 0: DYN_TUNE_BYTES or the split
    long warmup;         // the warm reference's warm-up (EVAL_WARMUP)
    DynHyper h;          // h.eta: the cell's start (dyn_protocol_check) unless eta_given
    DynStreams streams;  // --streams, --gpus (0: not given), the checkpoint each GPU loads
} DynProtocol;

// The defaults, nothing given.
DynProtocol dyn_protocol_defaults(void);
// The protocol against the model and the span of len bytes: the cell's starting eta unless
// given, the segment as the streams' T, --streams and --gpus (1 each when not given) against
// the span and the devices; ckpt and raw: what further devices load. Dies on a bad choice.
void dyn_protocol_check(DynProtocol *p, const Model *m, size_t len, const char *ckpt, int raw);

// How eta and lambda were chosen, on what bytes, and what the choice measured there.
typedef enum { DYN_GIVEN, DYN_TUNED, DYN_CHOSEN, DYN_STATIC } DynChoice;
typedef struct {
    DynChoice how;        // DYN_STATIC: no eta beat static on the valid bytes; eta 0
    size_t bytes;         // valid bytes (predictions) it scored; 0 when given
    int passes;           // dynamic passes over them
    DynHyper best;        // the best pair tried
    double bpc, static_bpc;  // there: the best pair's dynamic bpc, the static stream's (DYN_CHOSEN/STATIC)
} DynChosen;

typedef struct {
    double bpc, static_bpc;        // over the span: dynamic, and the static reference
    size_t count, static_count;    // their predictions (they differ under --static warm)
    size_t stats_bytes;
    double mean_rms;
    DynHyper h;                    // the pair that ran
    DynChosen chosen;
    double seconds, static_seconds, stats_seconds, choose_seconds;
} DynResult;

// The static reference, the gradient statistics, the choice of eta and lambda, then the
// dynamic bpc of split `which` of ds (its first len bytes); candidate lines printed when
// verbose; each phase's progress as progress_init's mode (-1 on a terminal, 0, 1).
DynResult dyn_protocol_run(Model *m, const Dataset *ds, int which, size_t len, const DynProtocol *p, int verbose,
                           int mode);
