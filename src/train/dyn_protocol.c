// dyn_protocol.c: `eval --dynamic`'s protocol (dyn_protocol.h): the static reference, the
// statistics' span, the choice of eta and lambda (given, --dyn-tune's grid, or the default's
// walk), then the dynamic pass over the span.
#include "train/dyn_protocol.h"
#include <math.h>
#include <stdio.h>
#include "train/eval.h"

DynProtocol dyn_protocol_defaults(void) {
    return (DynProtocol){.segment = DYN_SEGMENT, .warmup = EVAL_WARMUP, .h = {.eta = 0, .lambda = DYN_LAMBDA, .eps = DYN_EPS}};
}

void dyn_protocol_check(DynProtocol *p, const Model *m, size_t len, const char *ckpt, int raw) {
    DynStreams *s = &p->streams;
    if (!p->eta_given) p->h.eta = m->cfg.cell == CELL_MLSTM ? DYN_ETA_MLSTM : DYN_ETA_LSTM;
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
    s->T = (int)p->segment;
    s->ckpt = ckpt;
    s->raw = raw;
}

// The span of a split: its first `want` bytes (0: `dflt` or the whole split when shorter);
// an explicit want beyond the split dies naming the option.
static size_t split_span(const Dataset *ds, int which, long want, size_t dflt, const char *opt) {
    size_t n = ds->n[which];
    const char *name = which == SPLIT_TRAIN ? "train" : "valid";
    if (want && (size_t)want > n) die("eval: %s %ld: the %s split holds %zu bytes", opt, want, name, n);
    size_t len = want ? (size_t)want : dflt < n ? dflt : n;
    if (len < 2) die("eval: %s: the %s split holds %zu bytes; too few", opt, name, n);
    return len;
}

// A progress line for one phase (done with progress_done).
static Progress *phase(Progress *p, const char *what, const char *unit, double total, int mode) {
    progress_init(p, what, unit, total, mode);
    return p;
}

// The static bpc that the dynamic one is compared against: the same streams with windows of
// a segment, or the warm protocol over stripes of the config's batch.
static double static_reference(Model *m, const uint8_t *bytes, size_t len, const DynProtocol *p, size_t *count,
                               Progress *pr) {
    if (!p->static_warm) return dyn_streams_bpc(m, NULL, p->h, &p->streams, bytes, len, count, pr);
    int B = eval_batch_for(len, m->cfg.batch_size, m->cfg.seq_length);
    Acts *a = acts_create(m, B, m->cfg.seq_length);
    double bpc = eval_bpc(m, a, bytes, len, B > 1 ? eval_warm_for(len, B, (size_t)p->warmup) : 0, count, pr);
    acts_free(m, a);
    return bpc;
}

// A search over the valid bytes: one stream in segments, each candidate a dynamic pass.
typedef struct {
    DynEval *d;
    Acts *a;
    const uint8_t *bytes;
    size_t len, count;
    int verbose, passes;  // verbose: a line a pair
    Progress *pr;
    DynHyper best;
    double best_bpc;
} Search;

// The dynamic bpc of pair t over the search's bytes, kept when the best so far.
static double try_pair(Search *s, DynHyper t) {
    double bpc = dyn_bpc(s->d, s->a, t, s->bytes, s->len, &s->count, NULL);
    if (s->pr) progress_show(s->pr, (double)++s->passes);
    if (s->verbose)
        printf("dyn-tune: eta %.3g lambda %.3g: valid bpc %.4f over %zu bytes (protocol dynamic: one stream, state "
               "carried, weights adapted after each %d-byte segment)\n", t.eta, t.lambda, bpc, s->count, s->a->T);
    if (bpc < s->best_bpc) s->best_bpc = bpc, s->best = t;
    return bpc;
}

// --dyn-tune: every pair of the grid around h (eps kept).
static void tune_grid(Search *s, DynHyper h) {
    static const double eta_x[] = {0.1, 0.3, 1, 3, 10}, lambda_x[] = {0, 1, 10};
    _Static_assert(sizeof eta_x / sizeof *eta_x * (sizeof lambda_x / sizeof *lambda_x) == DYN_TUNE_PAIRS, "grid size");
    for (size_t i = 0; i < sizeof eta_x / sizeof *eta_x; i++)
        for (size_t j = 0; j < sizeof lambda_x / sizeof *lambda_x; j++)
            try_pair(s, (DynHyper){h.eta * eta_x[i], h.lambda * lambda_x[j], h.eps});
}

// The next eta of the half-decades 1, 3, 10, 30, ... up or down from eta.
static double half_decade(double eta, int up) {
    double mant = eta / pow(10, floor(log10(eta) + 1e-9));
    return mant < 2 ? eta * (up ? 3 : 0.3) : eta * (up ? 10.0 / 3 : 1.0 / 3);
}

// The default's walk: from h.eta down by half-decades while the bpc falls, else up while it
// falls, DYN_CHOOSE_ETAS etas at most; then lambda x 10 at the best unless lambda is kept.
static void choose_walk(Search *s, DynHyper h, int keep_lambda) {
    double last = try_pair(s, h);
    int up = 0, etas = 1;
    for (DynHyper t = h; etas < DYN_CHOOSE_ETAS; etas++) {
        t.eta = half_decade(t.eta, up);
        double bpc = try_pair(s, t);
        if (bpc < last) last = bpc;
        else if (!up && etas == 1) up = 1, t.eta = h.eta;  // down lost at once: up instead
        else break;
    }
    if (!keep_lambda) try_pair(s, (DynHyper){s->best.eta, s->best.lambda * 10, s->best.eps});
}

size_t dyn_choice_bytes(size_t span, long segment) {
    size_t want = span / DYN_CHOOSE_SHARE, floor_len = 2 * (size_t)segment + 1;
    if (want > DYN_CHOOSE_MAX) want = DYN_CHOOSE_MAX;
    return want > floor_len ? want : floor_len;
}

// Eta and lambda for the span: p's as given, or from the grid or the walk over the valid
// split's first dyn_choice_bytes.
static DynHyper choose(DynEval *d, const Dataset *ds, size_t len, const DynProtocol *p, int verbose, int mode,
                       DynChosen *c) {
    *c = (DynChosen){.how = DYN_GIVEN};
    if (p->eta_given && !p->tune) return p->h;
    size_t n = split_span(ds, SPLIT_VALID, p->tune_bytes, p->tune ? DYN_TUNE_BYTES : dyn_choice_bytes(len, p->segment),
                          "--tune-bytes");
    Acts *a = acts_create(d->m, 1, (int)p->segment);  // the streams make their own; the search reads one
    Progress pr;
    Search s = {.d = d, .a = a, .bytes = ds->bytes + ds->off[SPLIT_VALID], .len = n, .verbose = verbose && p->tune,
                .best = p->h, .best_bpc = INFINITY};
    if (p->tune) {
        s.pr = phase(&pr, "eval dyn-tune", "pairs", DYN_TUNE_PAIRS, mode);
        tune_grid(&s, p->h);
        *c = (DynChosen){.how = DYN_TUNED, .bytes = s.count, .passes = s.passes, .best = s.best, .bpc = s.best_bpc, .static_bpc = NAN};
    } else {
        s.pr = phase(&pr, "eval dyn-choose", "passes", DYN_CHOOSE_ETAS + !p->lambda_given, mode);
        double stat = eval_bpc(d->m, a, s.bytes, n, 0, &s.count, NULL);
        choose_walk(&s, p->h, p->lambda_given);
        *c = (DynChosen){.how = s.best_bpc < stat ? DYN_CHOSEN : DYN_STATIC, .bytes = s.count, .passes = s.passes,
                         .best = s.best, .bpc = s.best_bpc, .static_bpc = stat};
        if (c->how == DYN_STATIC) s.best.eta = 0;
    }
    progress_done(&pr);
    acts_free(d->m, a);
    dyn_restore(d);
    return s.best;
}

DynResult dyn_protocol_run(Model *m, const Dataset *ds, int which, size_t len, const DynProtocol *p, int verbose,
                           int mode) {
    const uint8_t *bytes = ds->bytes + ds->off[which];
    DynResult r = {0};
    Progress pr;
    double t0 = now_sec();
    r.static_bpc = static_reference(m, bytes, len, p, &r.static_count, phase(&pr, "eval static", NULL, 1, mode));
    progress_done(&pr);
    r.static_seconds = now_sec() - t0;
    r.stats_bytes = split_span(ds, SPLIT_TRAIN, p->stats, DYN_STATS, "--dyn-stats");
    t0 = now_sec();
    DynEval *d = dyn_create(m, ds->bytes + ds->off[SPLIT_TRAIN], r.stats_bytes, m->cfg.batch_size, (int)p->segment,
                            phase(&pr, "eval rms statistics", NULL, 1, mode));
    progress_done(&pr);
    r.mean_rms = d->mean_rms;
    r.stats_seconds = now_sec() - t0;
    t0 = now_sec();
    r.h = choose(d, ds, len, p, verbose, mode, &r.chosen);
    r.choose_seconds = now_sec() - t0;
    t0 = now_sec();
    if (r.chosen.how == DYN_STATIC && !p->static_warm) {  // eta 0 reads the static reference's stream(s) again
        r.bpc = r.static_bpc, r.count = r.static_count;
    } else {
        r.bpc = dyn_streams_bpc(m, d, r.h, &p->streams, bytes, len, &r.count, phase(&pr, "eval dynamic", NULL, 1, mode));
        progress_done(&pr);
    }
    r.seconds = now_sec() - t0;
    dyn_free(d);
    return r;
}
