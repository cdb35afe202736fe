// test_data.c: corpus readers (raw, gzip, zip), split arithmetic and batch stripes.
#ifndef SW_DOUBLE
#include "base/common.h"
#include "train/data.h"
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define N_BYTES 20000

// Text-like bytes (compressible, but not trivially) with every byte value present.
static const uint8_t *corpus(void) {
    static uint8_t b[N_BYTES];
    unsigned long long s = 7;
    for (int i = 0; i < N_BYTES; i++) b[i] = i < 256 ? (uint8_t)i : (uint8_t)("etaoin shrdlu\n"[(int)(test_rand(&s) * 14)]);
    return b;
}

static int same_bytes(const char *path, const uint8_t *want, size_t n) {
    Dataset d;
    dataset_open(&d, path);
    int ok = d.len == n && memcmp(d.bytes, want, n) == 0;
    if (!ok) fprintf(stderr, "  %s: got %zu bytes, expected %zu\n", path, d.len, n);
    dataset_close(&d);
    return ok;
}

static void write_gz(const char *path, const char *mode, const uint8_t *b, size_t n) {
    gzFile g = gzopen(path, mode);
    if (!g || gzwrite(g, b, (unsigned)n) != (int)n || gzclose(g) != Z_OK) { perror(path); exit(2); }
}

// ---- a single-entry zip writer, with knobs to break it

typedef struct {
    int deflated;
    uint32_t crc_xor;  // corrupts the stored CRC
    int entries;       // entry count written in the end record
    int method;        // method field; -1 = the honest one
} ZipOpt;

static uint8_t *put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); return p + 2; }
static uint8_t *put32(uint8_t *p, uint32_t v) { return put16(put16(p, v & 0xffff), v >> 16); }

static size_t deflate_raw(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
    z_stream z = {0};
    deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) { fprintf(stderr, "deflate failed\n"); exit(2); }
    deflateEnd(&z);
    return z.total_out;
}

// Local header (sizes deferred, flag bit 3), data, data descriptor, central directory, end.
static const char *write_zip(const char *path, const uint8_t *b, size_t n, ZipOpt o) {
    size_t cap = 2 * n + 1024;
    uint8_t *z = malloc(cap), *p = z;
    uint32_t crc = (uint32_t)crc32(0, b, (uInt)n) ^ o.crc_xor, method = o.method >= 0 ? (uint32_t)o.method : o.deflated ? 8 : 0;
    static const char name[] = "enwik8";
    p = put32(p, 0x04034b50); p = put16(p, 20); p = put16(p, 8); p = put16(p, method);
    p = put32(p, 0); p = put32(p, 0); p = put32(p, 0); p = put32(p, 0);
    p = put16(p, 6); p = put16(p, 4);
    memcpy(p, name, 6); p += 6;
    p = put32(p, 0xcafe0000);  // an extra field the reader must skip
    size_t csize = o.deflated ? deflate_raw(b, n, p, cap - 200) : (memcpy(p, b, n), n);
    p += csize;
    p = put32(p, 0x08074b50); p = put32(p, crc); p = put32(p, (uint32_t)csize); p = put32(p, (uint32_t)n);
    uint8_t *cd = p;
    p = put32(p, 0x02014b50); p = put16(p, 20); p = put16(p, 20); p = put16(p, 8); p = put16(p, method);
    p = put32(p, 0); p = put32(p, crc); p = put32(p, (uint32_t)csize); p = put32(p, (uint32_t)n);
    p = put16(p, 6); p = put16(p, 0); p = put16(p, 0); p = put16(p, 0); p = put16(p, 0);
    p = put32(p, 0); p = put32(p, 0);
    memcpy(p, name, 6); p += 6;
    uint32_t cd_len = (uint32_t)(p - cd);
    p = put32(p, 0x06054b50); p = put16(p, 0); p = put16(p, 0);
    p = put16(p, (uint32_t)o.entries); p = put16(p, (uint32_t)o.entries);
    p = put32(p, cd_len); p = put32(p, (uint32_t)(cd - z)); p = put16(p, 0);
    write_file(path, z, (size_t)(p - z));
    free(z);
    return path;
}

TEST(data_raw_gz_zip_read_back) {
    const uint8_t *b = corpus();
    CHECK(same_bytes(write_file(tmp_path("c.txt"), b, N_BYTES), b, N_BYTES));
    write_gz(tmp_path("c.txt.gz"), "wb", b, N_BYTES);
    CHECK(same_bytes(tmp_path("c.txt.gz"), b, N_BYTES));
    CHECK(same_bytes(write_zip(tmp_path("stored.zip"), b, N_BYTES, (ZipOpt){0, 0, 1, -1}), b, N_BYTES));
    CHECK(same_bytes(write_zip(tmp_path("deflated.zip"), b, N_BYTES, (ZipOpt){1, 0, 1, -1}), b, N_BYTES));
}

TEST(data_gzip_multi_member) {
    const uint8_t *b = corpus();
    write_gz(tmp_path("multi.gz"), "wb", b, 1000);
    write_gz(tmp_path("multi.gz"), "ab", b + 1000, N_BYTES - 1000);  // "ab" appends a second member
    CHECK(same_bytes(tmp_path("multi.gz"), b, N_BYTES));
}

TEST(data_split_from_name) {
    CHECK_EQ(split_from_name("train"), SPLIT_TRAIN);
    CHECK_EQ(split_from_name("valid"), SPLIT_VALID);
    CHECK_EQ(split_from_name("test"), SPLIT_TEST);
    CHECK_EQ(split_from_name("val"), -1);
}

TEST(data_split_sizes) {
    size_t n[3];
    split_sizes("0.9,0.05,0.05", 100000000, n, "enwik8");
    CHECK_EQ(n[0], 90000000); CHECK_EQ(n[1], 5000000); CHECK_EQ(n[2], 5000000);
    split_sizes("0.8, 0.1, 0.1", 100000000, n, "x");
    CHECK_EQ(n[0], 80000000); CHECK_EQ(n[1], 10000000); CHECK_EQ(n[2], 10000000);
    split_sizes("0.9,0.05,0.05", 1115394, n, "x");  // floors 1003854.6 and 55769.7
    CHECK_EQ(n[0], 1003854); CHECK_EQ(n[1], 55769); CHECK_EQ(n[2], 55769);
    split_sizes("0.29,0.57,0.14", 100, n, "x");  // 0.29 * 100 = 28.999999999999996 in doubles
    CHECK_EQ(n[0], 29); CHECK_EQ(n[1], 57); CHECK_EQ(n[2], 14);
    split_sizes("90000000,5000000,5000000", 100000000, n, "x");
    CHECK_EQ(n[0], 90000000); CHECK_EQ(n[1], 5000000); CHECK_EQ(n[2], 5000000);
    split_sizes("1,0,0", 10, n, "x");  // integers are byte counts
    CHECK_EQ(n[0], 1); CHECK_EQ(n[1], 0); CHECK_EQ(n[2], 0);
    split_sizes("1.0,0,0", 10, n, "x");
    CHECK_EQ(n[0], 10);
    split_sizes("0.5,0.5,1e-10", 3, n, "x");  // rounding never overruns the corpus
    CHECK_EQ(n[0] + n[1] + n[2], 2);
}

TEST(data_split_offsets) {
    const uint8_t *b = corpus();
    Dataset d;
    dataset_open(&d, write_file(tmp_path("s.txt"), b, 1000));
    dataset_split(&d, "0.9,0.05,0.05", "s.txt");
    CHECK_EQ(d.off[0], 0); CHECK_EQ(d.n[0], 900);
    CHECK_EQ(d.off[1], 900); CHECK_EQ(d.n[1], 50);
    CHECK_EQ(d.off[2], 950); CHECK_EQ(d.n[2], 50);
    dataset_split(&d, "100,20,30", "s.txt");
    CHECK_EQ(d.off[1], 100); CHECK_EQ(d.n[1], 20);
    CHECK_EQ(d.off[2], 120); CHECK_EQ(d.n[2], 30);
    dataset_close(&d);
}

// Stripe b of the span holds bytes b*11 .. b*11+10 (len 35: L = 11, two bytes unused).
TEST(data_stripes_windows) {
    uint8_t span[35];
    for (int i = 0; i < 35; i++) span[i] = (uint8_t)(100 + i);
    Stripes s;
    stripes_init(&s, span, sizeof span, 3, 4);
    CHECK_EQ(s.stripe_len, 11);
    int in[12], tgt[12];
    // windows at 0 and 4 fit (reading 5 bytes each); 8 would need bytes 8..12 > 10: wrap.
    size_t want_pos[5] = {0, 4, 0, 4, 0};
    for (int w = 0; w < 5; w++) {
        int reset = stripes_next(&s, in, tgt);
        CHECK_EQ(reset, want_pos[w] == 0);
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 3; b++) {
                CHECK_EQ(in[t * 3 + b], 100 + b * 11 + (int)want_pos[w] + t);
                CHECK_EQ(tgt[t * 3 + b], 100 + b * 11 + (int)want_pos[w] + t + 1);
            }
    }
    // An explicit window (as evaluation uses): offset 6, 4 steps reads the last 5 bytes.
    stripes_fill(&s, 6, 4, in, tgt);
    CHECK_EQ(in[0], 106); CHECK_EQ(in[2], 128); CHECK_EQ(tgt[11], 100 + 22 + 10);
}

static void open_path(void *path) {
    Dataset d;
    dataset_open(&d, path);
}

static void split_1000(void *split) {
    size_t n[3];
    split_sizes(split, 1000, n, "c.txt");
}

static void stripes_14(void *unused) {
    uint8_t span[14] = {0};
    Stripes s;
    stripes_init(&s, span, sizeof span, 3, 4);
}

TEST(data_open_errors) {
    const uint8_t *b = corpus();
    CHECK_DIES(open_path, (void *)tmp_path("missing.txt"), "missing.txt': cannot open: No such file or directory (bash data/get_corpus.sh puts the quick start's corpus at data/corpus.txt");
    CHECK_DIES(open_path, (void *)write_file(tmp_path("empty.txt"), "", 0), "empty.txt': empty");
    CHECK_DIES(open_path, (void *)write_file(tmp_path("empty.gz"), "", 0), "empty.gz': empty");
    // a gzip stream with a flipped byte, then one cut short
    write_gz(tmp_path("c.gz"), "wb", b, N_BYTES);
    FILE *f = fopen(tmp_path("c.gz"), "rb");
    uint8_t gz[2 * N_BYTES];
    size_t n = fread(gz, 1, sizeof gz, f);
    fclose(f);
    write_file(tmp_path("short.gz"), gz, n - 20);
    CHECK_DIES(open_path, (void *)tmp_path("short.gz"), "short.gz': truncated gzip data");
    gz[n / 2] ^= 0x55;
    CHECK_DIES(open_path, (void *)write_file(tmp_path("bad.gz"), gz, n), "bad.gz': corrupt gzip data");
    CHECK_DIES(open_path, (void *)write_file(tmp_path("text.gz"), "hello", 5), "text.gz': corrupt gzip data");
}

// Every cut of a .gz or .zip (sampled lengths plus the last 40 bytes, where the trailers
// are) is a one-line error naming the file, never a shorter corpus read silently.
static int truncations_die(const char *whole, const char *cut_path) {
    size_t n;
    char *b = read_text_file(whole, &n, "test file");
    int ok = 1;
    for (size_t len = 0; ok && len < n; len += len + 40 < n ? 1 + n / 37 : 1) {
        write_file(cut_path, b, len);
        ok = expect_die(open_path, (void *)cut_path, "data file '");
        if (!ok) fprintf(stderr, "  %s cut to %zu of %zu bytes\n", whole, len, n);
    }
    free(b);
    return ok;
}

TEST(data_truncated_gz_zip_are_errors) {
    const uint8_t *b = corpus();
    write_gz(tmp_path("whole.gz"), "wb", b, N_BYTES);
    CHECK(truncations_die(tmp_path("whole.gz"), tmp_path("cut.gz")));
    write_zip(tmp_path("whole-d.zip"), b, N_BYTES, (ZipOpt){1, 0, 1, -1});
    CHECK(truncations_die(tmp_path("whole-d.zip"), tmp_path("cut-d.zip")));
    write_zip(tmp_path("whole-s.zip"), b, N_BYTES, (ZipOpt){0, 0, 1, -1});
    CHECK(truncations_die(tmp_path("whole-s.zip"), tmp_path("cut-s.zip")));
}

// The fingerprint sees a change of length and an edit anywhere in a small corpus.
TEST(data_fingerprint_changes_with_the_corpus) {
    uint8_t b[N_BYTES];
    memcpy(b, corpus(), N_BYTES);
    Dataset d = {.bytes = b, .len = N_BYTES};
    uint32_t f0 = dataset_fingerprint(&d);
    d.len--;
    CHECK(dataset_fingerprint(&d) != f0);
    d.len++;
    b[N_BYTES / 2] ^= 1;
    CHECK(dataset_fingerprint(&d) != f0);
    b[N_BYTES / 2] ^= 1;
    CHECK_EQ(dataset_fingerprint(&d), f0);
}

TEST(data_zip_errors) {
    const uint8_t *b = corpus();
    CHECK_DIES(open_path, (void *)write_zip(tmp_path("crc.zip"), b, N_BYTES, (ZipOpt){0, 1, 1, -1}),
               "crc.zip': zip CRC mismatch");
    CHECK_DIES(open_path, (void *)write_zip(tmp_path("crc8.zip"), b, N_BYTES, (ZipOpt){1, 0x100, 1, -1}),
               "crc8.zip': zip CRC mismatch");
    CHECK_DIES(open_path, (void *)write_zip(tmp_path("two.zip"), b, N_BYTES, (ZipOpt){0, 0, 2, -1}),
               "two.zip': zip archive has 2 entries, expected exactly one");
    CHECK_DIES(open_path, (void *)write_zip(tmp_path("lzma.zip"), b, N_BYTES, (ZipOpt){1, 0, 1, 14}),
               "unsupported zip compression method 14");
    CHECK_DIES(open_path, (void *)write_file(tmp_path("not.zip"), b, 100), "not.zip': not a zip archive");
}

TEST(data_split_and_stripe_errors) {
    static const char *cases[][2] = {  // split of 1000 bytes, the error it must give
        {"0.9,0.1", "split '0.9,0.1' for 'c.txt': expected three fractions like 0.9,0.05,0.05"},
        {"a,b,c", "split 'a,b,c' for 'c.txt': expected three"},
        {"0.9,-0.05,0.05", "expected three fractions"},
        {"900,100,1x", "expected three fractions"},
        {"0.9,0.2,0.1", "fractions sum to 1.2, expected at most 1"},
        {"900,100,1", "byte counts sum to 1001 but the data has only 1000 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_DIES(split_1000, (void *)cases[i][0], cases[i][1]);
    CHECK_DIES(stripes_14, NULL, "a span of 14 bytes cannot hold B = 3 stripes of T+1 = 5 bytes (T = 4)");
}

// ---- data/get_enwik8.sh without the internet (its happy path needs the real 36 MB download)

// Runs the script into dir with ENWIK8_URL = url; err gets its stderr. Returns the exit status.
static int get_enwik8(const char *url, const char *dir, char *err, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ENWIK8_URL='%s' bash data/get_enwik8.sh '%s' 2>&1 >/dev/null", url, dir);
    return run_shell(cmd, err, n);
}

static int one_line(const char *s) {
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == 0;
}

TEST(data_get_enwik8_unreachable_is_one_line) {
    char err[2048];
    // port 1 of this machine refuses at once: the offline case without waiting on a resolver
    CHECK_EQ(get_enwik8("http://127.0.0.1:1/enwik8.zip", tmp_path("e8net"), err, sizeof err), 1);
    CHECK_MSG(one_line(err) && strstr(err, "get_enwik8.sh: error: ") == err && strstr(err, "127.0.0.1:1"), "%s", err);
    CHECK_EQ(get_enwik8("file:///nonexistent/enwik8.zip", tmp_path("e8file"), err, sizeof err), 1);
    CHECK_MSG(one_line(err) && strstr(err, "get_enwik8.sh: error: download of file:///nonexistent/enwik8.zip failed: "),
              "%s", err);
}

TEST(data_get_enwik8_refuses_other_bytes) {
    if (run_shell("command -v unzip || command -v python3", NULL, 0)) {
        test_skip("neither unzip nor python3 to extract a zip");
        return;
    }
    char url[1100], dir[1024], err[2048], want[256];
    snprintf(url, sizeof url, "file://%s", write_zip(tmp_path("not_enwik8.zip"), corpus(), N_BYTES, (ZipOpt){0, 0, 1, -1}));
    snprintf(dir, sizeof dir, "%s", tmp_path("e8zip"));
    CHECK_EQ(get_enwik8(url, dir, err, sizeof err), 1);
    snprintf(want, sizeof want, "expected 100000000 bytes with SHA-1 57b8363b814821dc9d47aa4d41f58733519076b2, got %d bytes", N_BYTES);
    CHECK_MSG(one_line(err) && strstr(err, "get_enwik8.sh: error: ") == err && strstr(err, "does not hold enwik8: ") &&
              strstr(err, want), "%s", err);
    char path[1100];
    snprintf(path, sizeof path, "%s/enwik8", dir);
    CHECK(access(path, F_OK) != 0);  // no config may train on the wrong bytes
}
// ---- data/make_standin.sh on a tree of its own (STANDIN_ROOT): a 5.9 MB dictionary of lines
// "D<n> ..." (over the 4 MB cap; cut in pieces) and 40 manual pages of 400 lines "M<n> ...",
// 20,000 bytes each: 4,800,000 bytes in all once the dictionary is capped.

static int standin(const char *order, long size, const char *out, char *err, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "STANDIN_ROOT='%s' STANDIN_SIZE=%ld bash data/make_standin.sh --order %s '%s' 2>&1 >/dev/null",
             tmp_path("standin"), size, order, out);
    return run_shell(cmd, err, n);
}

// The file's bytes (caller frees) and length.
static char *slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)*len + 1);
    *len = (long)fread(b, 1, (size_t)*len, f);
    fclose(f);
    return b;
}

static long count_char(const char *b, long n, char c) {
    long k = 0;
    for (long i = 0; i < n; i++) k += b[i] == c;
    return k;
}

TEST(data_standin_mixed_is_fixed_capped_and_spread) {
    char cmd[4096], err[2048];
    snprintf(cmd, sizeof cmd, "set -e; cd '%s' && mkdir standin && cd standin && mkdir -p dictd man/man1 && "
             "awk 'BEGIN { for (i = 0; i < 100000; i++) printf \"D%%06d %%050d\\n\", i, i * 7919 }' | gzip -1 > dictd/big.dict.dz && "
             "awk 'BEGIN { for (f = 0; f < 40; f++) { p = sprintf(\"man/man1/p%%02d.1\", f); "
             "for (l = 0; l < 400; l++) printf \"M%%02d %%045d\\n\", f, l > p; close(p) } }'", test_tmpdir());
    CHECK_EQ(run_shell(cmd, err, sizeof err), 0);
    const char *a = tmp_path("standin_a.txt"), *b = tmp_path("standin_b.txt");
    CHECK_EQ(standin("mixed", 4800000, a, err, sizeof err), 0);
    long na, nb;
    char *x = slurp(a, &na);
    CHECK(x && na == 4800000);
    CHECK_EQ(count_char(x, na, 'M'), 16000);  // every page whole, so the dictionary gave exactly 4,000,000
    for (int t = 0; t < 10; t++) {  // every tenth holds both sources, about in their shares (1/6 pages)
        long m = count_char(x + t * 480000, 480000, 'M') * 50;
        CHECK_MSG(m >= 480000 / 20 && m <= 480000 * 3 / 10, "tenth %d: %ld bytes of pages", t, m);
    }
    CHECK_EQ(standin("mixed", 4800000, b, err, sizeof err), 0);  // the same bytes again
    char *y = slurp(b, &nb);
    CHECK(y && nb == na && !memcmp(x, y, (size_t)na));
    free(y);
    CHECK_EQ(standin("sorted", 2000000, b, err, sizeof err), 0);  // the old order: the dictionary first
    y = slurp(b, &nb);
    CHECK(y && nb == 2000000 && count_char(y, nb, 'M') == 0);
    free(x);
    free(y);
    CHECK_EQ(standin("mixed", 4800001, b, err, sizeof err), 1);
    CHECK_MSG(strstr(err, "make_standin.sh: error: only 4800000 bytes of text found in ") == err, "%s", err);
    CHECK(access(b, F_OK) == 0);  // the failed run left the last good file alone
}
// ---- data/get_corpus.sh without the internet (the download fails): data/corpus.txt, the
// configs' default, holds 1,000,000 bytes of the machine's text (here a tree of its own), so
// that the README's later commands run unchanged; a second call takes that file as it is.
TEST(data_get_corpus_offline_fills_the_default_path) {
    char cmd[4096], out[2048], want[1100];
    const char *t = test_tmpdir();
    snprintf(cmd, sizeof cmd, "set -e; mkdir -p '%s/gc/data' '%s/gcroot/man/man1' && cp data/get_corpus.sh data/make_standin.sh '%s/gc/data/' && "
             "awk 'BEGIN { for (l = 0; l < 40000; l++) printf \"line %%05d of a manual page\\n\", l }' > '%s/gcroot/man/man1/page.1'",
             t, t, t, t);
    CHECK_EQ(run_shell(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "env -u SWLSTM_DATA STANDIN_ROOT='%s/gcroot' TINYSHAKESPEARE_URL=file:///nonexistent/input.txt "
             "bash '%s/gc/data/get_corpus.sh' 2>'%s/gc.err'", test_tmpdir(), test_tmpdir(), test_tmpdir());
    CHECK_EQ(run_shell(cmd, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/gc/data/corpus.txt\n", test_tmpdir());
    CHECK_MSG(!strcmp(out, want), "%s", out);
    long n;
    char *text = slurp(tmp_path("gc/data/corpus.txt"), &n);
    CHECK(text && n == 1000000 && !memcmp(text, "line 00000 of a manual page\n", 28));
    free(text);
    size_t elen;
    char *err = read_text_file(tmp_path("gc.err"), &elen, "stderr");
    CHECK_MSG(strstr(err, "get_corpus: Tiny Shakespeare unavailable (no internet?); building data/corpus.txt from 1 MB of text on this machine\n"), "%s", err);
    free(err);
    CHECK_EQ(run_shell(cmd, out, sizeof out), 0);
    CHECK_MSG(!strcmp(out, want), "%s", out);
    err = read_text_file(tmp_path("gc.err"), &elen, "stderr");
    CHECK_MSG(elen == 0, "%s", err);
    free(err);
}
#endif
