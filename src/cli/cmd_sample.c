// cmd_sample.c: the `sample` verb: streams raw bytes from a checkpoint to stdout.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/byte_set.h"
#include "model/model_io.h"
#include "model/gen.h"
#include "model/sampler.h"
#include "cli/opts.h"
#include "cli/verbs.h"

// Bytes the device loop draws per launch: each launch's bytes reach stdout together.
#define SAMPLE_CHUNK 4096

typedef struct {
    const char *ckpt, *prime, *prime_file;
    int device, precision;  // CKPT_CHOICE: the checkpoint's
    long n, seed;
    int raw, verbose, any_byte;
    SamplerOpts so;
} SampleArgs;

static void sample_usage(void) {
    printf("usage: swlstm sample CKPT [-n LEN] [-t TEMP] [--top-k K] [--top-p P]\n"
           "                    [-i PRIME | --prime-file F] [-s SEED] [--device cpu|cuda] [--precision P]\n"
           "                    [--raw-weights] [--any-byte] [-v]\n"
           "Streams the prime and then LEN sampled bytes (default 500) to stdout, unfiltered (on a\n"
           "terminal a newline follows unless the text ends with one; a pipe gets the bytes exact). It draws\n"
           "only the byte values its training corpus holds (the checkpoint records them; all 256 in\n"
           "checkpoints older than that record) unless --any-byte. The model first reads a newline, then\n"
           "the prime: the text starts at the start of a line, whatever the prime's length.\n"
           "TEMP 0 is greedy. The same SEED on the same device and precision gives the same text; the\n"
           "CPU and the GPU round differently (bf16 weights on the GPU by far the most), so their texts\n"
           "agree only as long as their logits pick the same bytes. A checkpoint trained with ema > 0\n"
           "samples from the weights' moving average unless --raw-weights. The device and precision\n"
           "are the checkpoint's unless given (--device cpu computes in fp32).\n"
           "On the GPU, a one-layer lstm without layer norm or a one-layer mlstm samples in one launch\n"
           "per %d bytes (the device loop); other models step op by op. -v names the path taken and its times on stderr.\n", SAMPLE_CHUNK);
}

static int parse_sample_args(int argc, char **argv, SampleArgs *a) {
    *a = (SampleArgs){.n = 500, .seed = 1, .so = {.temperature = 1.0, .top_k = 0, .top_p = 1.0}, .device = CKPT_CHOICE, .precision = CKPT_CHOICE};
    Opts o;
    if (!opts_begin(&o, "sample", argc, argv, sample_usage)) return 0;
    while (opts_next(&o)) {
        if (opts_is(&o, "--raw-weights")) a->raw = 1;
        else if (opts_is(&o, "--any-byte")) a->any_byte = 1;
        else if (opts_is(&o, "-v") || opts_is(&o, "--verbose")) a->verbose = 1;
        else if (opts_is(&o, "-n")) a->n = opts_long(&o, 0, 1L << 40);
        else if (opts_is(&o, "-t") || opts_is(&o, "--temperature")) a->so.temperature = opts_double(&o, 0, 100);
        else if (opts_is(&o, "--top-k")) a->so.top_k = (int)opts_long(&o, 0, 256);
        else if (opts_is(&o, "--top-p")) a->so.top_p = opts_double(&o, 1e-9, 1);
        else if (opts_is(&o, "-i") || opts_is(&o, "--prime")) a->prime = opts_value(&o);
        else if (opts_is(&o, "--prime-file")) a->prime_file = opts_value(&o);
        else if (opts_is(&o, "-s") || opts_is(&o, "--seed")) a->seed = opts_long(&o, 0, LONG_MAX);
        else if (opts_is(&o, "--device")) a->device = opts_choice(&o, "device");
        else if (opts_is(&o, "--precision")) a->precision = opts_choice(&o, "precision");
        else if (!opts_positional(&o, &a->ckpt)) opts_unknown(&o);
    }
    if (!a->ckpt) die("sample: missing checkpoint path (usage: swlstm sample CKPT [options])");
    if (a->prime && a->prime_file) die("sample: give either -i PRIME or --prime-file, not both");
    return 1;
}

// Feeds a newline and then the prime (echoing the prime) and returns the logits after its
// last byte. The newline: a text starts at the start of a line, and a zero state fed one or
// two bytes alone is far from any state training saw (it drew binary bytes).
static void feed_prime(Model *m, Infer *s, const char *prime, size_t len, float *logits) {
    infer_step(m, s, &(int){'\n'}, 1, len ? NULL : logits);
    for (size_t i = 0; i < len; i++) {
        int b = (unsigned char)prime[i];
        infer_step(m, s, &b, 1, i + 1 == len ? logits : NULL);
    }
    if (len) fwrite(prime, 1, len, stdout);  // prime is NULL when there is none
}

// The per-step path: infer_step and sample_byte on the host, a byte at a time. Returns the
// last byte written (-1: none).
static int sample_steps(Model *m, const SampleArgs *a, const char *prime, size_t plen, Rng *rng) {
    Infer *s = infer_create(m, 1, 0);
    float logits[256];
    feed_prime(m, s, prime, plen, logits);
    int b = plen ? (unsigned char)prime[plen - 1] : -1;
    for (long i = 0; i < a->n; i++) {
        b = sample_byte(logits, &a->so, rng);
        putchar(b);
        if (b == '\n') fflush(stdout);
        if (i + 1 < a->n) infer_step(m, s, &b, 1, logits);
    }
    infer_free(m, s);
    return b;
}

// The device loop: a newline and the prime fed (as feed_prime), then SAMPLE_CHUNK bytes a
// launch, each launch feeding first the byte the one before drew last. Returns the last byte
// written (-1: none).
static int sample_device(Gen *g, const SampleArgs *a, const char *prime, size_t plen, Rng *rng) {
    if (plen >= INT_MAX) die("sample: a prime of %zu bytes; the device loop takes at most %d", plen, INT_MAX - 1);
    int nfeed = (int)plen + 1, *feed = xmalloc(sizeof(int) * (size_t)nfeed);
    feed[0] = '\n';
    for (int i = 1; i < nfeed; i++) feed[i] = (unsigned char)prime[i - 1];
    if (plen) fwrite(prime, 1, plen, stdout);
    unsigned char out[SAMPLE_CHUNK];
    for (long done = 0; done < a->n;) {
        int k = a->n - done < SAMPLE_CHUNK ? (int)(a->n - done) : SAMPLE_CHUNK;
        gen_draw(g, feed, nfeed, k, rng, out);
        fwrite(out, 1, (size_t)k, stdout);
        fflush(stdout);
        feed[0] = out[k - 1], nfeed = 1, done += k;
    }
    int last = a->n ? feed[0] : plen ? (unsigned char)prime[plen - 1] : -1;
    free(feed);
    return last;
}

int cmd_sample(int argc, char **argv) {
    SampleArgs a;
    if (!parse_sample_args(argc, argv, &a)) return 0;
    double t0 = now_sec();
    Model *m = model_load_infer(a.ckpt, a.device, a.precision, a.raw);
    uint8_t set[BYTE_SET_BYTES];
    if (!a.any_byte && ckpt_byte_set(a.ckpt, set)) model_only_bytes(m, set);
    size_t plen = 0;
    char *prime = a.prime_file ? read_text_file(a.prime_file, &plen, "prime file") : NULL;
    if (a.prime) plen = strlen(a.prime);
    Rng rng;
    rng_seed(&rng, (uint64_t)a.seed);
    const char *why = NULL;
    double t1 = now_sec();
    Gen *g = gen_open(m, &a.so, &why);
    double t2 = now_sec();
    if (a.verbose) {
        char route[256];
        Route r = gen_route(g);
        fprintf(stderr, "sample: %s\n", route_text(&r, route, sizeof route));
    }
    if (a.verbose && !g) fprintf(stderr, "sample: no device loop: %s\n", why);
    const char *text = prime ? prime : a.prime;
    int last = g ? sample_device(g, &a, text, plen, &rng) : sample_steps(m, &a, text, plen, &rng);
    if (last >= 0 && last != '\n' && isatty(STDOUT_FILENO)) putchar('\n');  // the prompt on a line of its own; pipes get the bytes exact
    fflush(stdout);
    if (a.verbose)
        fprintf(stderr, "sample: checkpoint loaded in %.3f s, path set up in %.3f s, prime and %ld bytes in %.3f s\n",
                t1 - t0, t2 - t1, a.n, now_sec() - t2);
    free(prime);
    gen_close(g);
    model_free(m);
    return 0;
}
