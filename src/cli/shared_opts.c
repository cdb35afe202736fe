// shared_opts.c: the feature options, and the probe's penalty and device.
#include "cli/shared_opts.h"
#include <string.h>
#include "model/model_io.h"

const char feat_opts_usage[] =
    "  --state c|h|both   final cell state c (default), hidden state h, or [c, h]\n"
    "  --layer N          0-based layer (default: the last)\n"
    "  --tanh             tanh of c\n"
    "  --mean             mean of h over the document's steps instead of a final state\n"
    "  --batch-size B     documents per batch (default 256)\n"
    "  --no-preprocess    feed lines as they are (default: \"\\n \" + stripped line + \" \")\n"
    "  --max-docs N       only the first N documents of each file\n"
    "  --device cpu|cuda  (default cpu)   --precision fp32|bf16\n"
    "  --progress         progress on stderr even when it is not a terminal (--quiet: none)\n"
    "  --raw-weights      the trained weights, not their moving average (checkpoints with ema > 0)\n";

static char parse_state(Opts *o) {
    const char *v = opts_value(o);
    if (!strcmp(v, "c") || !strcmp(v, "h")) return v[0];
    if (!strcmp(v, "both")) return 'b';
    die("%s --state = '%s': expected c, h or both", o->verb, v);
}

int feat_opts_read(Opts *o, FeatOpts *fo) {
    if (opts_progress(o)) fo->progress = o->progress;
    else if (opts_is(o, "--tanh")) fo->tanh_c = 1;
    else if (opts_is(o, "--mean")) fo->mean = 1;
    else if (opts_is(o, "--no-preprocess")) fo->preprocess = 0;
    else if (opts_is(o, "--raw-weights")) fo->raw_weights = 1;
    else if (opts_is(o, "--state")) fo->state = parse_state(o);
    else if (opts_is(o, "--layer")) fo->layer = (int)opts_long(o, 0, SW_MAX_LAYERS - 1);
    else if (opts_is(o, "--batch-size")) fo->batch = (int)opts_long(o, 1, 1 << 20);
    else if (opts_is(o, "--max-docs")) fo->max_docs = opts_long(o, 1, 1L << 40);
    else if (opts_is(o, "--device")) fo->device = opts_choice(o, "device");
    else if (opts_is(o, "--precision")) fo->precision = opts_choice(o, "precision");
    else return 0;
    return 1;
}

int probe_penalties(Opts *o) {
    const char *v = opts_value(o);
    if (!strcmp(v, "l2")) return 1 << PEN_L2;
    if (!strcmp(v, "l1")) return 1 << PEN_L1;
    if (!strcmp(v, "both")) return 1 << PEN_L2 | 1 << PEN_L1;
    die("%s --penalty = '%s': expected l2, l1 or both", o->verb, v);
}

ProbeDevice probe_device(const char *v, const char *what) {
    if (!strcmp(v, "cpu")) return PROBE_CPU;
    if (strcmp(v, "cuda")) die("%s = '%s': expected cpu or cuda", what, v);
#ifndef SW_CUDA
    die("%s cuda: this swlstm was built without CUDA (nvcc was not found by make); use --device cpu", what);
#endif
    return PROBE_CUDA;
}
