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
#include "train/dyn_protocol.h"
#include "train/eval.h"

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
           "  --eta X             the step (default: chosen, below); --lambda X (default %g), --eps X (%g)\n"
           "                      Without --eta, eta and lambda are chosen on the valid split's first\n"
           "                      span/%d bytes, at most %d (or --tune-bytes N): the dynamic bpc of etas\n"
           "                      by half-decades from %g (%g for the lstm cell), down while it falls,\n"
           "                      else up, %d at most, then lambda x 10 at the best (unless --lambda):\n"
           "                      at most half the cost of the dynamic pass over the span. If none\n"
           "                      beats the static bpc there, eta is 0 (the static score) and the\n"
           "                      output says so.\n"
           "  --dyn-stats BYTES   training bytes whose gradients give rms (default %d, or the split)\n"
           "  --dyn-tune          instead pick eta and lambda from a grid of %d pairs around them by the\n"
           "                      dynamic bpc of the valid split's first --tune-bytes N (default %d)\n"
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
           EVAL_WARMUP, DYN_SEGMENT, DYN_LAMBDA, DYN_EPS, DYN_CHOOSE_SHARE, DYN_CHOOSE_MAX, DYN_ETA_MLSTM, DYN_ETA_LSTM, DYN_CHOOSE_ETAS,
           DYN_STATS, DYN_TUNE_PAIRS, DYN_TUNE_BYTES);
}

// A progress line for one phase of a long evaluation (done with progress_done).
// mode: as progress_init's (-1 on a terminal, 0 --quiet, 1 --progress).
static Progress *phase(Progress *p, const char *what, const char *unit, double total, int mode) {
    progress_init(p, what, unit, total, mode);
    return p;
}

// The words that name --dynamic's protocol in the output: the static reference's, json's
// "protocol" and "streams" (and "devices" for several streams), the text's.
typedef struct {
    char json_static[16], text_static[32], json[96], text[96];
} DynNames;

static DynNames dyn_names(const DynProtocol *o) {
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

// How eta and lambda came: json's "choice" and "why".
static const struct {
    const char *name, *why;
} CHOICE[] = {[DYN_GIVEN] = {"given", "--eta given"},
              [DYN_TUNED] = {"dyn-tune", "the best pair of the --dyn-tune grid on the valid bytes"},
              [DYN_CHOSEN] = {"chosen", "the best pair of the walk on the valid bytes, below their static bpc"},
              [DYN_STATIC] = {"static", "no pair of the walk beat the static bpc on the valid bytes: eta 0"}};

// The main line's word on eta.
static const char *HOW[] = {[DYN_GIVEN] = "", [DYN_TUNED] = " (tuned)", [DYN_CHOSEN] = " (chosen)",
                            [DYN_STATIC] = " (no pair beat static on the valid bytes)"};

// The default's choice in one line (nothing when eta was given or tuned, whose lines precede).
static void print_choice(const DynResult *r, long segment) {
    const DynChosen *c = &r->chosen;
    if (c->how == DYN_CHOSEN)
        printf("dyn-choose: eta %g lambda %g: valid bpc %.4f dynamic, %.4f static, over the valid split's first %zu "
               "bytes (%d passes, one stream in %ld-byte segments)\n", r->h.eta, r->h.lambda, c->bpc, c->static_bpc,
               c->bytes, c->passes, segment);
    else if (c->how == DYN_STATIC)
        printf("dyn-choose: no eta beat static over the valid split's first %zu bytes (best eta %g lambda %g: %.4f "
               "dynamic, %.4f static; %d passes): eta 0, the dynamic bpc is the static one\n", c->bytes, c->best.eta,
               c->best.lambda, c->bpc, c->static_bpc, c->passes);
}

// --dynamic's answer: static and dynamic bpc of the span, what ran, how eta was chosen.
static void print_dynamic(const DynResult *r, const DynProtocol *p, const char *split, int json, int other) {
    DynNames nm = dyn_names(p);
    const DynChosen *c = &r->chosen;
    if (json) {
        printf("{\"bpc\": %.6f, \"static_bpc\": %.6f, \"static_protocol\": \"%s\", \"bytes\": %zu, \"split\": \"%s\", %s, "
               "\"segment\": %ld, \"eta\": %g, \"lambda\": %g, \"eps\": %g, \"stats_bytes\": %zu, "
               "\"mean_rms\": %.6g, \"static_bytes\": %zu, \"choice\": \"%s\", \"why\": \"%s\", \"choice_split\": \"valid\", "
               "\"choice_bytes\": %zu, \"choice_passes\": %d, ",
               r->bpc, r->static_bpc, nm.json_static, r->count, split, nm.json, p->segment, r->h.eta, r->h.lambda,
               r->h.eps, r->stats_bytes, r->mean_rms, r->static_count, CHOICE[c->how].name, CHOICE[c->how].why, c->bytes,
               c->passes);
        if (c->how != DYN_GIVEN) printf("\"choice_bpc\": %.6f, ", c->bpc);
        if (c->how >= DYN_CHOSEN) printf("\"choice_static_bpc\": %.6f, \"best_eta\": %g, \"best_lambda\": %g, ",
                                         c->static_bpc, c->best.eta, c->best.lambda);
        printf("\"seconds\": %.3f, \"static_seconds\": %.3f, \"stats_seconds\": %.3f, \"choice_seconds\": %.3f, "
               "\"other_corpus\": %s}\n", r->seconds, r->static_seconds, r->stats_seconds, r->choose_seconds,
               other ? "true" : "false");
        return;
    }
    print_choice(r, p->segment);
    char static_bytes[48] = "", choosing[32] = "";
    if (r->static_count != r->count) snprintf(static_bytes, sizeof static_bytes, ", over %zu bytes", r->static_count);
    if (c->how != DYN_GIVEN)
        snprintf(choosing, sizeof choosing, ", %.1f s %s", r->choose_seconds, c->how == DYN_TUNED ? "tuning" : "choosing");
    printf("%s bpc %.4f dynamic, %.4f static (%s%s), over %zu bytes (protocol dynamic: %s, "
           "weights adapted after each %ld-byte segment; eta %g lambda %g eps %g%s, rms over %zu training bytes; "
           "%.1f s dynamic, %.1f s static, %.1f s statistics%s)\n",
           split, r->bpc, r->static_bpc, nm.text_static, static_bytes, r->count, nm.text, p->segment, r->h.eta,
           r->h.lambda, r->h.eps, HOW[c->how],
           r->stats_bytes, r->seconds, r->static_seconds, r->stats_seconds, choosing);
    if (r->bpc > r->static_bpc)
        printf("note: the dynamic bpc is %.4f worse than the static over the span\n", r->bpc - r->static_bpc);
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

static int static_protocol(const char *v) {
    if (strcmp(v, "stream") && strcmp(v, "warm")) die("eval: --static '%s': expected stream or warm", v);
    return !strcmp(v, "warm");
}

int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *split = "valid", *protocol = NULL;
    int device = CKPT_CHOICE, precision = CKPT_CHOICE;
    long max_bytes = 0, batch = 0, warmup = EVAL_WARMUP;
    int json = 0, raw = 0, dynamic = 0;
    DynProtocol dyn = dyn_protocol_defaults();
    Opts o;
    if (!opts_begin(&o, "eval", argc, argv, eval_usage)) return 0;
    while (opts_next(&o)) {
        if (opts_progress(&o)) continue;
        if (opts_is(&o, "--json")) json = 1;
        else if (opts_is(&o, "--raw-weights")) raw = 1;
        else if (opts_is(&o, "--dynamic")) dynamic = 1;
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
        else if (opts_is(&o, "--eta")) dyn.h.eta = opts_double(&o, 0, 1e3), dyn.eta_given = 1;
        else if (opts_is(&o, "--lambda")) dyn.h.lambda = opts_double(&o, 0, 1e3), dyn.lambda_given = 1;
        else if (opts_is(&o, "--eps")) dyn.h.eps = opts_double(&o, 1e-30, 1e3);
        else if (opts_is(&o, "--dyn-stats")) dyn.stats = opts_long(&o, 2, LONG_MAX);
        else if (opts_is(&o, "--static")) dyn.static_warm = static_protocol(opts_value(&o));
        else if (opts_is(&o, "--streams")) dyn.streams.streams = (int)opts_long(&o, 1, INT_MAX);
        else if (opts_is(&o, "--gpus")) dyn.streams.devices = (int)opts_long(&o, 1, 4096);
        else if (opts_is(&o, "--tune-bytes")) dyn.tune_bytes = opts_long(&o, 2, LONG_MAX);
        else if (!opts_positional(&o, &ckpt)) opts_unknown(&o);
    }
    if (!ckpt) die("eval: missing checkpoint path (usage: swlstm eval CKPT [options])");
    if (dyn.tune && !dynamic) die("eval: --dyn-tune tunes --dynamic; add --dynamic");
    if (dyn.static_warm && !dynamic) die("eval: --static names --dynamic's reference; add --dynamic");
    if ((dyn.streams.streams || dyn.streams.devices) && !dynamic) die("eval: --streams and --gpus split --dynamic; add --dynamic");
    dyn.warmup = warmup;
    if (dynamic && (batch > 1 || (protocol && strcmp(protocol, "stream"))))
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
    size_t len = ds.n[which];
    if (max_bytes && (size_t)max_bytes < len) len = (size_t)max_bytes;
    if (len < 2) die("eval: split '%s' of '%s' holds %zu bytes; nothing to evaluate", split, data ? data : m->cfg.data, len);
    int other = other_corpus(ckpt, &ds, data ? data : m->cfg.data);
    if (dynamic) {
        dyn_protocol_check(&dyn, m, len, ckpt, raw);
        DynResult r = dyn_protocol_run(m, &ds, which, len, &dyn, !json, o.progress);
        print_dynamic(&r, &dyn, split, json, other);
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
