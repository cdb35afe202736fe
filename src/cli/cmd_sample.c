// cmd_sample.c: the `sample` verb: streams raw bytes from a checkpoint to stdout.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "model/model_io.h"
#include "model/sampler.h"
#include "cli/verbs.h"

typedef struct {
    const char *ckpt, *prime, *prime_file, *device, *precision;
    long n, seed;
    int raw;
    SamplerOpts so;
} SampleArgs;

static void sample_usage(void) {
    printf("usage: swlstm sample CKPT [-n LEN] [-t TEMP] [--top-k K] [--top-p P]\n"
           "                    [-i PRIME | --prime-file F] [-s SEED] [--device cpu|cuda] [--raw-weights]\n"
           "Streams the prime and then LEN sampled bytes (default 500) to stdout, unfiltered.\n"
           "TEMP 0 is greedy; the same SEED gives the same text. A checkpoint trained with ema > 0\n"
           "samples from the weights' moving average unless --raw-weights.\n");
}

static int parse_sample_args(int argc, char **argv, SampleArgs *a) {
    *a = (SampleArgs){.n = 500, .seed = 1, .so = {1.0, 0, 1.0}};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { sample_usage(); return 0; }
        if (!strcmp(o, "--raw-weights")) { a->raw = 1; continue; }
        if (o[0] != '-' && !a->ckpt) { a->ckpt = o; continue; }
        if (!v) die("sample: option '%s' needs a value (see swlstm sample --help)", o);
        i++;
        if (!strcmp(o, "-n")) a->n = parse_long("sample -n", v, 0, 1L << 40);
        else if (!strcmp(o, "-t") || !strcmp(o, "--temperature")) a->so.temperature = parse_double("sample -t", v, 0, 100);
        else if (!strcmp(o, "--top-k")) a->so.top_k = (int)parse_long("sample --top-k", v, 0, 256);
        else if (!strcmp(o, "--top-p")) a->so.top_p = parse_double("sample --top-p", v, 1e-9, 1);
        else if (!strcmp(o, "-i") || !strcmp(o, "--prime")) a->prime = v;
        else if (!strcmp(o, "--prime-file")) a->prime_file = v;
        else if (!strcmp(o, "-s") || !strcmp(o, "--seed")) a->seed = parse_long("sample -s", v, 0, LONG_MAX);
        else if (!strcmp(o, "--device")) a->device = v;
        else if (!strcmp(o, "--precision")) a->precision = v;
        else die("sample: unknown option '%s' (see swlstm sample --help)", o);
    }
    if (!a->ckpt) die("sample: missing checkpoint path (usage: swlstm sample CKPT [options])");
    if (a->prime && a->prime_file) die("sample: give either -i PRIME or --prime-file, not both");
    return 1;
}

// Feeds the prime (echoing it) and returns the logits after its last byte.
static void feed_prime(Model *m, Infer *s, const char *prime, size_t len, float *logits) {
    for (size_t i = 0; i < len; i++) {
        int b = (unsigned char)prime[i];
        infer_step(m, s, &b, 1, i + 1 == len ? logits : NULL);
    }
    fwrite(prime, 1, len, stdout);
}

int cmd_sample(int argc, char **argv) {
    SampleArgs a;
    if (!parse_sample_args(argc, argv, &a)) return 0;
    Model *m = model_load(a.ckpt, a.device ? a.device : "cpu", a.precision);
    if (!a.raw) model_use_ema(m);
    size_t plen = 0;
    char *prime = a.prime_file ? read_text_file(a.prime_file, &plen, "prime file") : NULL;
    if (a.prime) plen = strlen(a.prime);
    Infer *s = infer_create(m, 1, 0);
    float logits[256];
    if (plen) feed_prime(m, s, prime ? prime : a.prime, plen, logits);
    else infer_step(m, s, &(int){'\n'}, 1, logits);  // no prime: start as after a newline
    Rng rng;
    rng_seed(&rng, (uint64_t)a.seed);
    for (long i = 0; i < a.n; i++) {
        int b = sample_byte(logits, &a.so, &rng);
        putchar(b);
        if (b == '\n') fflush(stdout);
        if (i + 1 < a.n) infer_step(m, s, &b, 1, logits);
    }
    fflush(stdout);
    free(prime);
    infer_free(m, s);
    model_free(m);
    return 0;
}
