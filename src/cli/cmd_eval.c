// cmd_eval.c: the `eval` verb: bits per character of a checkpoint on a split of its data.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/verbs.h"
#include "model/model_io.h"
#include "train/data.h"
#include "train/eval.h"

#define WARMUP_DEFAULT 2048

static void eval_usage(void) {
    printf("usage: swlstm eval CKPT [--data PATH] [--split valid|test|train] [--max-bytes N]\n"
           "                  [--batch-size B] [--device cpu|cuda] [--precision fp32|bf16] [--json]\n"
           "                  [--protocol warm|stripes|stream] [--warmup N] [--raw-weights] [--quiet]\n"
           "Bits per character of CKPT over a split of its data file (or --data), the state carried\n"
           "across windows of seq_length. The split is cut into B stripes (--batch-size, else the\n"
           "config's batch_size) that run side by side:\n"
           "  warm (the default)  every stripe but the first runs first over the N bytes before it\n"
           "                      (--warmup, default %d), unscored: every byte after the first is\n"
           "                      predicted once (but the last < B), each with N bytes of context or\n"
           "                      more. The published enwik8 protocol to within a stream's first N\n"
           "                      bytes of context (docs/QUALITY.md measures the gap), B times faster.\n"
           "  stripes             each stripe from a zero state, its first byte unscored: a little\n"
           "                      pessimistic at each stripe's start; what training's evaluations and\n"
           "                      tools/cudnn_lm.py report.\n"
           "  stream              one stream, every byte after the first predicted once with the\n"
           "                      state carried across the whole split: the published protocol\n"
           "                      (slow: one byte a step).\n"
           "The output names the protocol. A checkpoint trained with ema > 0 is evaluated with the\n"
           "weights' moving average unless --raw-weights. On a terminal, progress and an ETA go to\n"
           "stderr unless --quiet.\n", WARMUP_DEFAULT);
}

int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *split = "valid", *device = NULL, *precision = NULL, *protocol = "warm";
    long max_bytes = 0, batch = 0, warmup = WARMUP_DEFAULT;
    int json = 0, raw = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { eval_usage(); return 0; }
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--raw-weights")) raw = 1;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (a[0] != '-' && !ckpt) ckpt = a;
        else if (!v) die("eval: option '%s' needs a value (see swlstm eval --help)", a);
        else if (!strcmp(a, "--data")) data = argv[++i];
        else if (!strcmp(a, "--split")) split = argv[++i];
        else if (!strcmp(a, "--device")) device = argv[++i];
        else if (!strcmp(a, "--precision")) precision = argv[++i];
        else if (!strcmp(a, "--protocol")) protocol = argv[++i];
        else if (!strcmp(a, "--warmup")) warmup = parse_long("eval --warmup", argv[++i], 1, LONG_MAX);
        else if (!strcmp(a, "--max-bytes")) max_bytes = parse_long("eval --max-bytes", argv[++i], 2, LONG_MAX);
        else if (!strcmp(a, "--batch-size")) batch = parse_long("eval --batch-size", argv[++i], 1, 1 << 20);
        else die("eval: unknown option '%s' (see swlstm eval --help)", a);
    }
    if (!ckpt) die("eval: missing checkpoint path (usage: swlstm eval CKPT [options])");
    int which = split_from_name(split);
    if (which < 0) die("eval: --split '%s': expected valid, test or train", split);
    int stream = !strcmp(protocol, "stream"), warm = !strcmp(protocol, "warm");
    if (!stream && !warm && strcmp(protocol, "stripes"))
        die("eval: --protocol '%s': expected warm, stripes or stream", protocol);
    if (stream && batch > 1) die("eval: --protocol stream is one stream; drop --batch-size %ld", batch);
    Model *m = model_load_infer(ckpt, device, precision, raw);
    Dataset ds;
    dataset_open(&ds, data ? data : m->cfg.data);
    dataset_split(&ds, m->cfg.split, data ? data : m->cfg.data);
    size_t len = ds.n[which];
    if (max_bytes && (size_t)max_bytes < len) len = (size_t)max_bytes;
    if (len < 2) die("eval: split '%s' of '%s' holds %zu bytes; nothing to evaluate", split, data ? data : m->cfg.data, len);
    int B = stream ? 1 : eval_batch_for(len, batch ? (int)batch : m->cfg.batch_size, m->cfg.seq_length);
    Acts *a = acts_create(m, B, m->cfg.seq_length);
    size_t count, w = warm && B > 1 ? eval_warm_for(len, B, (size_t)warmup) : 0;
    Progress pr;
    progress_init(&pr, "eval", NULL, 1, quiet ? 0 : -1);
    double t0 = now_sec(), bpc = eval_bpc(m, a, ds.bytes + ds.off[which], len, w, &count, &pr);
    progress_done(&pr);
    double secs = now_sec() - t0;
    // One stripe is the stream protocol, whichever option asked for it.
    const char *name = B == 1 ? "stream" : w ? "warm" : "stripes";
    char how[128];
    if (B == 1) snprintf(how, sizeof how, "protocol stream: one stream, state carried across the whole split");
    else if (w) snprintf(how, sizeof how, "protocol warm: %d stripes, each after the first run over the %zu bytes before it", B, w);
    else snprintf(how, sizeof how, "protocol stripes: %d stripes, each from a zero state", B);
    if (json)
        printf("{\"bpc\": %.6f, \"bytes\": %zu, \"split\": \"%s\", \"protocol\": \"%s\", \"stripes\": %d, "
               "\"warmup\": %zu, \"seconds\": %.3f}\n", bpc, count, split, name, B, w, secs);
    else printf("%s bpc %.4f over %zu bytes (%s; %.1f s, %.0f chars/s)\n", split, bpc, count, how, secs, count / secs);
    acts_free(m, a);
    model_free(m);
    dataset_close(&ds);
    return 0;
}
