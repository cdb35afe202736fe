// data.c: byte corpora (raw files mmapped, .gz and .zip inflated with zlib), consecutive
// train/valid/test splits, and B stripes read as (input, target) windows for truncated BPTT.
#include "train/data.h"
#include "base/common.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

// ---------------------------------------------------------------------------------------------
// opening

// Maps the whole file read-only: a 100 MB corpus costs page cache, not a private copy.
static void map_file(Dataset *d, const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die("data file '%s': cannot open: %s (bash data/get_corpus.sh puts the quick start's corpus at data/corpus.txt; "
            "or give another corpus with --data=PATH)", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) die("data file '%s': cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) die("data file '%s': not a regular file", path);
    if (st.st_size == 0) die("data file '%s': empty", path);
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) die("data file '%s': cannot mmap: %s", path, strerror(errno));
    close(fd);
    d->map = p;
    d->map_len = (size_t)st.st_size;
}

static void unmap(Dataset *d) {
    if (d->map) munmap(d->map, d->map_len);
    d->map = NULL;
    d->map_len = 0;
}

typedef struct {
    const uint8_t *in;  // next input byte not yet handed to zlib
    size_t left;        // input bytes not yet handed to zlib
    uint8_t *out;
    size_t len, cap;
} Inflater;

// zlib counts in 32-bit uInt, so input and output are handed over in chunks of at most 1 GiB.
static uInt chunk(size_t n) { return n < (1u << 30) ? (uInt)n : (1u << 30); }

// Inflates one stream (a gzip member or a raw deflate stream) to its end, growing the output.
static void inflate_stream(z_stream *z, Inflater *f, const char *path, const char *what) {
    for (;;) {
        if (z->avail_in == 0 && f->left) {
            z->next_in = (Bytef *)f->in;
            z->avail_in = chunk(f->left);
            f->in += z->avail_in;
            f->left -= z->avail_in;
        }
        if (f->len == f->cap) f->out = xrealloc(f->out, f->cap *= 2);
        z->next_out = f->out + f->len;
        z->avail_out = chunk(f->cap - f->len);
        int rc = inflate(z, Z_NO_FLUSH);
        f->len = (size_t)(z->next_out - f->out);
        if (rc == Z_STREAM_END) return;
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR && z->avail_in == 0 && f->left == 0)
            die("data file '%s': truncated %s data", path, what);
        if (rc != Z_BUF_ERROR)
            die("data file '%s': corrupt %s data (%s)", path, what, z->msg ? z->msg : zError(rc));
    }
}

static Inflater inflater_over(const Dataset *d, size_t offset, size_t len, size_t out_guess) {
    Inflater f = {d->map + offset, len, NULL, 0, out_guess < 65536 ? 65536 : out_guess};
    f.out = xmalloc(f.cap);
    return f;
}

// Takes the inflated bytes as the corpus; the compressed file is no longer needed.
static void own_output(Dataset *d, Inflater *f, const char *path) {
    unmap(d);
    if (f->len == 0) die("data file '%s': empty", path);
    d->owned = xrealloc(f->out, f->len);
    d->bytes = d->owned;
    d->len = f->len;
}

// gzip, including multi-member files (cat a.gz b.gz) and dictzip (.dict.dz).
static void open_gzip(Dataset *d, const char *path) {
    Inflater f = inflater_over(d, 0, d->map_len, 4 * d->map_len);
    z_stream z = {0};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) die("data file '%s': zlib init failed", path);
    for (;;) {
        inflate_stream(&z, &f, path, "gzip");
        size_t rest = f.left + z.avail_in;
        const uint8_t *p = f.in - z.avail_in;
        if (rest == 0) break;
        if (rest < 2 || p[0] != 0x1f || p[1] != 0x8b)
            die("data file '%s': corrupt gzip data (%zu bytes of trailing garbage)", path, rest);
        inflateReset(&z);
    }
    inflateEnd(&z);
    own_output(d, &f, path);
}

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }

// The end-of-central-directory record: 22 bytes plus a comment of up to 65535 bytes at the end.
static size_t find_eocd(const uint8_t *m, size_t n, const char *path) {
    size_t lowest = n > 22 + 65535 ? n - 22 - 65535 : 0;
    for (size_t i = n >= 22 ? n - 22 + 1 : 0; i-- > lowest;)
        if (rd32(m + i) == 0x06054b50) return i;
    die("data file '%s': not a zip archive (no end of central directory record)", path);
}

// A single-entry zip (enwik8.zip). The central directory gives the sizes and CRC even when
// the local header defers them to a data descriptor (flag bit 3).
static void open_zip(Dataset *d, const char *path) {
    const uint8_t *m = d->map;
    size_t n = d->map_len;
    const uint8_t *e = m + find_eocd(m, n, path);
    uint32_t entries = rd16(e + 10), cd = rd32(e + 16);
    if (entries != 1) die("data file '%s': zip archive has %u entries, expected exactly one", path, entries);
    if ((size_t)cd + 46 > n || rd32(m + cd) != 0x02014b50)
        die("data file '%s': corrupt zip (bad central directory)", path);
    const uint8_t *c = m + cd;
    uint32_t flags = rd16(c + 8), method = rd16(c + 10), crc = rd32(c + 16);
    uint32_t csize = rd32(c + 20), usize = rd32(c + 24), lho = rd32(c + 42);
    if (csize == 0xffffffffu || usize == 0xffffffffu || lho == 0xffffffffu)
        die("data file '%s': zip64 archives are not supported", path);
    if (flags & 1) die("data file '%s': encrypted zip entries are not supported", path);
    if ((size_t)lho + 30 > n || rd32(m + lho) != 0x04034b50)
        die("data file '%s': corrupt zip (bad local file header)", path);
    size_t data = (size_t)lho + 30 + rd16(m + lho + 26) + rd16(m + lho + 28);
    if (data + csize > n) die("data file '%s': truncated zip entry", path);
    if (method == 0) {
        if (csize != usize) die("data file '%s': corrupt zip (stored entry sizes differ)", path);
        if (usize == 0) die("data file '%s': empty", path);
        d->bytes = m + data;  // stored: the corpus is the mapped entry itself
        d->len = usize;
    } else if (method == 8) {
        // Deflate expands at most 1032:1: a hostile header cannot claim a larger buffer.
        size_t most = 1032 * (size_t)csize + 1;
        Inflater f = inflater_over(d, data, csize, usize < most ? (size_t)usize + 1 : most);
        z_stream z = {0};
        if (inflateInit2(&z, -MAX_WBITS) != Z_OK) die("data file '%s': zlib init failed", path);
        inflate_stream(&z, &f, path, "zip deflate");
        inflateEnd(&z);
        own_output(d, &f, path);
    } else {
        die("data file '%s': unsupported zip compression method %u (expected 0 stored or 8 deflate)",
            path, method);
    }
    if (d->len != usize)
        die("data file '%s': zip entry inflated to %zu bytes, expected %u", path, d->len, usize);
    uint32_t got = (uint32_t)crc32_z(0, d->bytes, d->len);
    if (got != crc) die("data file '%s': zip CRC mismatch (computed %08x, expected %08x)", path, got, crc);
}

void dataset_open(Dataset *d, const char *path) {
    memset(d, 0, sizeof *d);
    map_file(d, path);
    if (ends_with(path, ".gz") || ends_with(path, ".dz")) {
        open_gzip(d, path);
    } else if (ends_with(path, ".zip")) {
        open_zip(d, path);
    } else {
        d->bytes = d->map;
        d->len = d->map_len;
    }
}

void dataset_close(Dataset *d) {
    unmap(d);
    free(d->owned);
    memset(d, 0, sizeof *d);
}

uint32_t dataset_fingerprint(const Dataset *d) {
    enum { CHUNKS = 16, CHUNK = 4096 };
    uint64_t len = d->len;
    uint32_t crc = (uint32_t)crc32_z(0, (const Bytef *)&len, sizeof len);
    if (d->len <= (size_t)CHUNKS * CHUNK) return (uint32_t)crc32_z(crc, d->bytes, d->len);
    for (size_t i = 0; i < CHUNKS; i++)
        crc = (uint32_t)crc32_z(crc, d->bytes + i * ((d->len - CHUNK) / (CHUNKS - 1)), CHUNK);
    return crc;
}

// ---------------------------------------------------------------------------------------------
// splits

// floor(frac * len), except that a product within 1e-6 of an integer is that integer:
// 0.9 * 1e8 is 89999999.99999999 in binary floating point and must give 90000000.
static size_t fraction_bytes(double frac, size_t len) {
    double x = frac * (double)len, r = nearbyint(x);
    return (size_t)(fabs(x - r) <= 1e-6 ? r : floor(x));
}

// Parses one of the three comma-separated parts; *end is where parsing stopped.
static int parse_part(const char *s, int fractions, double *frac, unsigned long long *count,
                      const char **end) {
    while (*s == ' ') s++;
    char *e = (char *)s;
    errno = 0;
    if (*s == '.' || (*s >= '0' && *s <= '9')) {  // no signs: strtoull would wrap "-5"
        if (fractions) *frac = strtod(s, &e);
        else *count = strtoull(s, &e, 10);
    }
    int ok = e != s && errno == 0 && (!fractions || isfinite(*frac));
    while (*e == ' ') e++;
    *end = e;
    return ok && (*e == ',' || *e == 0);
}

void split_sizes(const char *split, size_t len, size_t n[3], const char *path_for_errors) {
    const char *path = path_for_errors ? path_for_errors : "data";
    int fractions = strpbrk(split, ".eE") != NULL;
    double frac[3] = {0};
    unsigned long long count[3] = {0};
    const char *s = split;
    for (int i = 0; i < 3; i++) {
        const char *end;
        if (!parse_part(s, fractions, &frac[i], &count[i], &end) || (*end == ',') != (i < 2))
            die("split '%s' for '%s': expected three fractions like 0.9,0.05,0.05 or three byte "
                "counts like 90000000,5000000,5000000", split, path);
        s = end + 1;
    }
    if (fractions && frac[0] + frac[1] + frac[2] > 1 + 1e-9)
        die("split '%s' for '%s': fractions sum to %.10g, expected at most 1", split, path,
            frac[0] + frac[1] + frac[2]);
    if (!fractions && count[0] + count[1] + count[2] > len)
        die("split '%s' for '%s': byte counts sum to %llu but the data has only %zu bytes", split, path,
            count[0] + count[1] + count[2], len);
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        size_t want = fractions ? fraction_bytes(frac[i], len) : (size_t)count[i];
        n[i] = want < len - used ? want : len - used;  // rounding never overruns the file
        used += n[i];
    }
}

void dataset_split(Dataset *d, const char *split, const char *path_for_errors) {
    split_sizes(split, d->len, d->n, path_for_errors);
    d->off[SPLIT_TRAIN] = 0;
    d->off[SPLIT_VALID] = d->n[SPLIT_TRAIN];
    d->off[SPLIT_TEST] = d->n[SPLIT_TRAIN] + d->n[SPLIT_VALID];
}

int split_from_name(const char *name) {
    static const char *names[3] = {"train", "valid", "test"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

// ---------------------------------------------------------------------------------------------
// stripes

void stripes_init(Stripes *s, const uint8_t *base, size_t len, int B, int T) {
    if (B <= 0 || T <= 0) die("stripes: batch size B = %d and steps T = %d must be positive", B, T);
    size_t L = len / (size_t)B;
    if (L < (size_t)T + 1)
        die("a span of %zu bytes cannot hold B = %d stripes of T+1 = %d bytes (T = %d); "
            "use a smaller batch_size/seq_length or a larger split", len, B, T + 1, T);
    *s = (Stripes){base, len, B, T, L, 0, L, 0};
}

void stripes_fill(const Stripes *s, size_t pos, int T, int *in, int *tgt) {
    if (pos + (size_t)T + 1 > s->span)
        die("stripes: window at %zu of %d steps overruns a stripe of %zu bytes", pos, T, s->span);
    for (int b = 0; b < s->B; b++) {
        const uint8_t *p = s->base + (size_t)b * s->stripe_len + pos;
        for (int t = 0; t < T; t++) {
            in[t * s->B + b] = p[t];
            tgt[t * s->B + b] = p[t + 1];
        }
    }
}

int stripes_next(Stripes *s, int *in, int *tgt) {
    int reset = s->pos == 0;
    stripes_fill(s, s->pos, s->T, in, tgt);
    s->pos += (size_t)s->T;
    if (s->pos + (size_t)s->T + 1 > s->stripe_len) s->pos = 0;
    return reset;
}

// A rank's stripes are adjacent in the span, so its layout is the global one moved to its
// first stripe with B/world stripes of the same length: positions and wraps stay in step.
void stripes_share(Stripes *local, const Stripes *g, int rank, int world) {
    if (world < 1 || rank < 0 || rank >= world) die("stripes_share: rank %d of world size %d", rank, world);
    if (g->B % world)
        die("batch_size = %d is not divisible by the world size %d: each rank reads batch_size/%d stripes (use a multiple of %d)",
            g->B, world, world, world);
    if (g->warm) die("internal: stripes_share of stripes with a warm-up");
    int Bl = g->B / world;
    *local = *g;
    local->base = g->base + (size_t)rank * Bl * g->stripe_len;
    local->len = (size_t)Bl * g->stripe_len;
    local->B = Bl;
}
