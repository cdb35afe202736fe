// cmd_eval.c: the `eval` verb: bits per character of a checkpoint on a split of its data.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/opts.h"
#include "cli/verbs.h"
#include "model/model_io.h"
#include "train/data.h"
#include "train/dyn_streams.h"
#include "train/dyneval.h"
#include "train/eval.h"

#define WARMUP_DEFAULT 2048
// Dynamic evaluation's defaults (README "Dynamic evaluation" says how they were chosen).
#define DYN_SEGMENT 20
#define DYN_ETA_MLSTM 3e-5
#define DYN_ETA_LSTM 3e-6  // the plain cell loses bpc at the mlstm's eta
#define DYN_LAMBDA 1e-3
#define DYN_EPS 2e-5
#define DYN_STATS 1000000
#define DYN_TUNE_BYTES 50000

typedef struct {
    int on, tune, static_warm;        // static_warm: the static reference by --protocol warm
    long segment, stats, tune_bytes;  // stats, tune_bytes: 0 = the default, capped at the split
    long warmup;
    DynHyper h;
    DynStreams streams;  // --streams, --gpus (0 when not given), the checkpoint each GPU loads
} DynOpts;

static void eval_usage(void) {
    printf("usage: swlstm eval CKPT [--data PATH] [--split valid|test|train] [--max-bytes N]\n"
           "                  [--batch-size B] [--device cpu|cuda] [--precision fp32|bf16] [--json]\n"
           "                  [--protocol warm|stripes|stream] [--warmup N] [--raw-weights]\n"
           "                  [--quiet | --progress]\n"
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
           "stderr unless --quiet (--dynamic: a line a phase); --progress shows them off a terminal too.\n"
           "Dynamic evaluation (Krause et al. 2018), one stream with carried state (or --streams N):\n"
           "  --dynamic           score each segment, then adapt the weights to it before the next:\n"
           "                      theta -= eta g / (rms + eps), theta += min(lambda rms / mean(rms), 1)\n"
           "                      (theta_trained - theta); prints the static and the dynamic bpc.\n"
           "                      The weights change in memory only; the checkpoint is not written.\n"
           "  --segment N         bytes a segment (default %d)\n"
           "  --eta X --lambda X --eps X   (defaults %g, %g, %g; eta %g for the lstm cell)\n"
           "  --dyn-stats BYTES   training bytes whose gradients give rms (default %d, or the split)\n"
           "  --dyn-tune          first pick eta and lambda from a grid around them by the dynamic bpc\n"
           "                      of the valid split's first --tune-bytes N (default %d)\n"
           "  --static stream|warm  the static reference: the same stream(s) (default), or the warm\n"
           "                      protocol (stripes side by side: seconds where the stream takes\n"
           "                      minutes on a long split; docs/QUALITY.md measures the two alike)\n"
           "  --streams N         N independent streams instead of one (default 1): the span cut\n"
           "                      into N contiguous pieces (each span/N bytes, the last the rest),\n"
           "                      each from a zero state and the trained weights, adapting its own\n"
           "                      copy; bpc over all of their predictions, the static reference\n"
           "                      alike (unless --static warm). Not the published protocol: each\n"
           "                      piece starts cold, so it scores a little worse than one stream.\n"
           "  --gpus G            spread the streams over G GPUs (default 1), one thread each, each\n"
           "                      GPU taking its pieces in turn; on one GPU (or the CPU) they run\n"
           "                      one after another, never side by side: --streams pays with G > 1\n",
           WARMUP_DEFAULT, DYN_SEGMENT, DYN_ETA_MLSTM, DYN_LAMBDA, DYN_EPS, DYN_ETA_LSTM, DYN_STATS, DYN_TUNE_BYTES);
}

// The span of a split: its first `want` bytes (0: `dflt` or the whole split when shorter);
// an explicit want beyond the split dies naming the option.
static size_t split_span(const Dataset *ds, int which, long want, long dflt, const char *opt) {
    size_t n = ds->n[which];
    if (want && (size_t)want > n)
        die("eval: %s %ld: the %s split holds %zu bytes", opt, want, which == SPLIT_TRAIN ? "train" : "valid", n);
    size_t len = want ? (size_t)want : (size_t)dflt < n ? (size_t)dflt : n;
    if (len < 2) die("eval: %s: the %s split holds %zu bytes; too few", opt, which == SPLIT_TRAIN ? "train" : "valid", n);
    return len;
}

// A progress line for one phase of a long evaluation (done with progress_done).
// mode: as progress_init's (-1 on a terminal, 0 --quiet, 1 --progress).
static Progress *phase(Progress *p, const char *what, const char *unit, double total, int mode) {
    progress_init(p, what, unit, total, mode);
    return p;
}

// The static bpc that --dynamic compares against: the same streams with windows of a segment,
// or the warm protocol over stripes of the config's batch.
static double static_reference(Model *m, const uint8_t *bytes, size_t len, DynOpts o, Progress *pr) {
    size_t count;
    if (!o.static_warm) return dyn_streams_bpc(m, NULL, o.h, &o.streams, bytes, len, &count, pr);
    int B = eval_batch_for(len, m->cfg.batch_size, m->cfg.seq_length);
    Acts *a = acts_create(m, B, m->cfg.seq_length);
    double bpc = eval_bpc(m, a, bytes, len, B > 1 ? eval_warm_for(len, B, (size_t)o.warmup) : 0, &count, pr);
    acts_free(m, a);
    return bpc;
}

// The words that name --dynamic's protocol in the output: the static reference's, json's
// "protocol" and "streams" (and "devices" for several streams), the text's.
typedef struct {
    char json_static[16], text_static[32], json[96], text[96];
} DynNames;

static DynNames dyn_names(const DynOpts *o) {
    int N = o->streams.streams, G = o->streams.devices;
    DynNames n = {"stream", "stream", "\"protocol\": \"dynamic-stream\", \"streams\": 1", "one stream, state carried"};
    if (N > 1) {
        snprintf(n.json_static, sizeof n.json_static, "streams");
        snprintf(n.text_static, sizeof n.text_static, "%d streams", N);
        snprintf(n.json, sizeof n.json, "\"protocol\": \"dynamic-streams\", \"streams\": %d, \"devices\": %d", N, G);
        snprintf(n.text, sizeof n.text, "%d streams (contiguous pieces, each from a zero state) on %d device%s", N, G,
                 G > 1 ? "s" : "");
    }
    if (o->static_warm) snprintf(n.json_static, sizeof n.json_static, "warm"), snprintf(n.text_static, sizeof n.text_static, "warm");
    return n;
}

// Whether the corpus differs from the one the checkpoint was trained on (its size and
// fingerprint, as --resume checks); says so in one line. A checkpoint without the record
// (weights only, or older) counts as the same.
static int other_corpus(const char *ckpt, const Dataset *ds, const char *data) {
    static const char *const all_but_state[] = {"config", "masks", "params", "ema", "adam_m", "adam_v", "hidden", NULL};
    Ckpt c;
    TrainState ts;
    ckpt_read_except(&c, ckpt, all_but_state);
    int known = ckpt_train_state(&c, &ts) && ts.data_len;
    ckpt_close(&c);
    uint32_t now = dataset_fingerprint(ds);
    if (!known || (ts.data_len == ds->len && ts.data_crc == now)) return 0;
    warnf("eval: data '%s' (%zu bytes, fingerprint %08x) is not the corpus %s was trained on (%llu bytes, fingerprint %08x): "
          "its bpc says how the model does on text it never saw", data, ds->len, now, ckpt, (unsigned long long)ts.data_len, ts.data_crc);
    return 1;
}

// --dynamic: static and dynamic bpc of the span, one stream or --streams pieces in segments,
// after the gradient statistics (and --dyn-tune's search); each phase shows its progress.
static void eval_dynamic(Model *m, const Dataset *ds, int which, size_t len, const char *split, DynOpts o, int json, int other,
                         int mode) {
    const uint8_t *bytes = ds->bytes + ds->off[which];
    size_t count;
    Progress pr;
    double t0 = now_sec(), static_bpc = static_reference(m, bytes, len, o, phase(&pr, "eval static", NULL, 1, mode));
    progress_done(&pr);
    double static_secs = now_sec() - t0;
    size_t stats = split_span(ds, SPLIT_TRAIN, o.stats, DYN_STATS, "--dyn-stats");
    t0 = now_sec();
    DynEval *d = dyn_create(m, ds->bytes + ds->off[SPLIT_TRAIN], stats, m->cfg.batch_size, (int)o.segment,
                            phase(&pr, "eval rms statistics", NULL, 1, mode));
    progress_done(&pr);
    double stats_secs = now_sec() - t0, tune_bpc = NAN;
    size_t tune = 0;
    if (o.tune) {
        tune = split_span(ds, SPLIT_VALID, o.tune_bytes, DYN_TUNE_BYTES, "--tune-bytes");
        Acts *a = acts_create(m, 1, (int)o.segment);  // the streams make their own; the search reads one
        o.h = dyn_tune(d, a, o.h, ds->bytes + ds->off[SPLIT_VALID], tune, &tune_bpc, !json,
                       phase(&pr, "eval dyn-tune", "pairs", DYN_TUNE_PAIRS, mode));
        progress_done(&pr);
        acts_free(m, a);
    }
    double tune_secs = now_sec() - t0 - stats_secs;
    t0 = now_sec();
    double bpc = dyn_streams_bpc(m, d, o.h, &o.streams, bytes, len, &count, phase(&pr, "eval dynamic", NULL, 1, mode));
    progress_done(&pr);
    double secs = now_sec() - t0;
    DynNames nm = dyn_names(&o);
    if (json)
        printf("{\"bpc\": %.6f, \"static_bpc\": %.6f, \"static_protocol\": \"%s\", \"bytes\": %zu, \"split\": \"%s\", %s, "
               "\"segment\": %ld, \"eta\": %g, \"lambda\": %g, \"eps\": %g, \"stats_bytes\": %zu, "
               "\"mean_rms\": %.6g, \"tuned\": %s, \"tune_bytes\": %zu, \"tune_bpc\": %.6f, \"seconds\": %.3f, \"static_seconds\": %.3f, "
               "\"stats_seconds\": %.3f, \"tune_seconds\": %.3f, \"other_corpus\": %s}\n",
               bpc, static_bpc, nm.json_static, count, split, nm.json, o.segment, o.h.eta, o.h.lambda, o.h.eps, stats, d->mean_rms, o.tune ? "true" : "false",
               tune, o.tune ? tune_bpc : 0.0, secs, static_secs, stats_secs, tune_secs, other ? "true" : "false");
    else
        printf("%s bpc %.4f dynamic, %.4f static (%s), over %zu bytes (protocol dynamic: %s, "
               "weights adapted after each %ld-byte segment; eta %g lambda %g eps %g%s, rms over %zu training bytes; "
               "%.1f s dynamic, %.1f s static, %.1f s statistics%s)\n",
               split, bpc, static_bpc, nm.text_static, count, nm.text, o.segment, o.h.eta, o.h.lambda, o.h.eps, o.tune ? " (tuned)" : "", stats,
               secs, static_secs, stats_secs, o.tune ? ", tuning too" : "");
    dyn_free(d);
}

// --streams and --gpus against the span and the devices (1 each when not given).
static void dyn_streams_check(DynStreams *s, const Model *m, size_t len, const char *ckpt, int raw) {
    if (!s->streams) s->streams = 1;
    if (!s->devices) s->devices = 1;
    if ((size_t)s->streams > len / 2)
        die("eval: --streams %d: the span holds %zu bytes; a stream needs 2 at least (at most %zu streams)", s->streams,
            len, len / 2);
    if (s->devices > 1 && m->cfg.device != DEVICE_CUDA)
        die("eval: --gpus %d: the CPU runs the streams one after another on one model; drop --gpus or use --device cuda",
            s->devices);
    int ndev = s->devices > 1 ? backend_cuda_devices() : 1;
    if (s->devices > ndev)
        die("eval: --gpus %d: this machine shows %d GPUs (CUDA_VISIBLE_DEVICES may hide some)", s->devices, ndev);
    if (s->devices > s->streams)
        die("eval: --gpus %d: more GPUs than --streams %d; each GPU takes a stream at least", s->devices, s->streams);
    s->ckpt = ckpt;
    s->raw = raw;
}

static int static_protocol(const char *v) {
    if (strcmp(v, "stream") && strcmp(v, "warm")) die("eval: --static '%s': expected stream or warm", v);
    return !strcmp(v, "warm");
}

int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *split = "valid", *protocol = NULL;
    int device = CKPT_CHOICE, precision = CKPT_CHOICE;
    long max_bytes = 0, batch = 0, warmup = WARMUP_DEFAULT;
    int json = 0, raw = 0;
    DynOpts dyn = {0, 0, 0, DYN_SEGMENT, 0, 0, WARMUP_DEFAULT, {-1, DYN_LAMBDA, DYN_EPS}, {0}};  // eta -1: the cell's
    Opts o;
    if (!opts_begin(&o, "eval", argc, argv, eval_usage)) return 0;
    while (opts_next(&o)) {
        if (opts_progress(&o)) continue;
        if (opts_is(&o, "--json")) json = 1;
        else if (opts_is(&o, "--raw-weights")) raw = 1;
        else if (opts_is(&o, "--dynamic")) dyn.on = 1;
        else if (opts_is(&o, "--dyn-tune")) dyn.tune = 1;
        else if (opts_is(&o, "--data")) data = opts_value(&o);
        else if (opts_is(&o, "--split")) split = opts_value(&o);
        else if (opts_is(&o, "--device")) device = opts_choice(&o, "device");
        else if (opts_is(&o, "--precision")) precision = opts_choice(&o, "precision");
        else if (opts_is(&o, "--protocol")) protocol = opts_value(&o);
        else if (opts_is(&o, "--warmup")) warmup = opts_long(&o, 1, LONG_MAX);
        else if (opts_is(&o, "--max-bytes")) max_bytes = opts_long(&o, 2, LONG_MAX);
        else if (opts_is(&o, "--batch-size")) batch = opts_long(&o, 1, 1 << 20);
        else if (opts_is(&o, "--segment")) dyn.segment = opts_long(&o, 1, 1 << 20);
        else if (opts_is(&o, "--eta")) dyn.h.eta = opts_double(&o, 0, 1e3);
        else if (opts_is(&o, "--lambda")) dyn.h.lambda = opts_double(&o, 0, 1e3);
        else if (opts_is(&o, "--eps")) dyn.h.eps = opts_double(&o, 1e-30, 1e3);
        else if (opts_is(&o, "--dyn-stats")) dyn.stats = opts_long(&o, 2, LONG_MAX);
        else if (opts_is(&o, "--static")) dyn.static_warm = static_protocol(opts_value(&o));
        else if (opts_is(&o, "--streams")) dyn.streams.streams = (int)opts_long(&o, 1, INT_MAX);
        else if (opts_is(&o, "--gpus")) dyn.streams.devices = (int)opts_long(&o, 1, 4096);
        else if (opts_is(&o, "--tune-bytes")) dyn.tune_bytes = opts_long(&o, 2, LONG_MAX);
        else if (!opts_positional(&o, &ckpt)) opts_unknown(&o);
    }
    if (!ckpt) die("eval: missing checkpoint path (usage: swlstm eval CKPT [options])");
    if (dyn.tune && !dyn.on) die("eval: --dyn-tune tunes --dynamic; add --dynamic");
    if (dyn.static_warm && !dyn.on) die("eval: --static names --dynamic's reference; add --dynamic");
    if ((dyn.streams.streams || dyn.streams.devices) && !dyn.on) die("eval: --streams and --gpus split --dynamic; add --dynamic");
    dyn.warmup = warmup;
    dyn.streams.T = (int)dyn.segment;
    if (dyn.on && (batch > 1 || (protocol && strcmp(protocol, "stream"))))
        die("eval: --dynamic reads one stream (the published protocol) or --streams N of its own; drop --batch-size and --protocol");
    if (!protocol) protocol = "warm";
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
    int other = other_corpus(ckpt, &ds, data ? data : m->cfg.data);
    size_t len = ds.n[which];
    if (max_bytes && (size_t)max_bytes < len) len = (size_t)max_bytes;
    if (len < 2) die("eval: split '%s' of '%s' holds %zu bytes; nothing to evaluate", split, data ? data : m->cfg.data, len);
    if (dyn.on) {
        if (dyn.h.eta < 0) dyn.h.eta = m->cfg.cell == CELL_MLSTM ? DYN_ETA_MLSTM : DYN_ETA_LSTM;
        dyn_streams_check(&dyn.streams, m, len, ckpt, raw);
        eval_dynamic(m, &ds, which, len, split, dyn, json, other, o.progress);
        model_free(m);
        dataset_close(&ds);
        return 0;
    }
    int B = stream ? 1 : eval_batch_for(len, batch ? (int)batch : m->cfg.batch_size, m->cfg.seq_length);
    Acts *a = acts_create(m, B, m->cfg.seq_length);
    size_t count, w = warm && B > 1 ? eval_warm_for(len, B, (size_t)warmup) : 0;
    Progress pr;
    double t0 = now_sec(), bpc = eval_bpc(m, a, ds.bytes + ds.off[which], len, w, &count, phase(&pr, "eval", NULL, 1, o.progress));
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
               "\"warmup\": %zu, \"seconds\": %.3f, \"other_corpus\": %s}\n", bpc, count, split, name, B, w, secs, other ? "true" : "false");
    else printf("%s bpc %.4f over %zu bytes (%s; %.1f s, %.0f chars/s)\n", split, bpc, count, how, secs, count / secs);
    acts_free(m, a);
    model_free(m);
    dataset_close(&ds);
    return 0;
}
