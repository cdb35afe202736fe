// test_ckpt.c: checkpoint container round trip, corruption and truncation detection,
// atomic commit.
#ifndef SW_DOUBLE
#include "test.h"
#include "io/ckpt.h"
#include "base/common.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char META[] = "hello ckpt";  // 10 bytes of payload
enum { NPARAM = 16 };
// Byte offsets in the sample file (16-byte header, 20-byte section headers).
enum { META_HDR = 16, PARAMS_HDR = META_HDR + 20 + 10, PARAMS_DATA = PARAMS_HDR + 20 };

// Writes the sample checkpoint (sections meta, params, empty) to path.
static void write_sample(const char *path) {
    float params[NPARAM];
    for (int i = 0; i < NPARAM; i++) params[i] = 0.25f * (float)i - 1.0f;
    CkptWriter *w = ckpt_writer_new();
    ckpt_add(w, "meta", META, strlen(META));
    ckpt_add(w, "params", params, sizeof params);
    ckpt_add(w, "empty", NULL, 0);
    ckpt_commit(w, path);
}

static uint8_t *sample_bytes(size_t *len) {
    const char *path = tmp_path("sample.ckpt");
    write_sample(path);
    return (uint8_t *)read_text_file(path, len, "test file");
}

static void read_ckpt(void *path) {
    Ckpt c;
    ckpt_read(&c, path);
    ckpt_close(&c);
}

TEST(ckpt_roundtrip) {
    const char *path = tmp_path("rt.ckpt");
    write_sample(path);
    Ckpt c;
    ckpt_read(&c, path);
    CHECK_EQ(c.version, CKPT_VERSION);
    CHECK_EQ(c.nsec, 3);
    CHECK(strcmp(c.sec[0].tag, "meta") == 0 && strcmp(c.sec[1].tag, "params") == 0 &&
          strcmp(c.sec[2].tag, "empty") == 0);
    const CkptSection *m = ckpt_find(&c, "meta", 1), *p = ckpt_find(&c, "params", 1);
    CHECK_EQ(m->len, strlen(META));
    CHECK(memcmp(m->data, META, m->len) == 0);
    CHECK_EQ(p->len, NPARAM * sizeof(float));
    float got[NPARAM];
    memcpy(got, p->data, sizeof got);
    for (int i = 0; i < NPARAM; i++) CHECK_NEAR(got[i], 0.25 * i - 1.0, 0);
    CHECK_EQ(ckpt_find(&c, "empty", 1)->len, 0);
    CHECK(ckpt_find(&c, "absent", 0) == NULL);
    CHECK_EQ(c.len, PARAMS_DATA + sizeof got + 20 + 12);
    ckpt_close(&c);
}

static void find_required(void *path) {
    Ckpt c;
    ckpt_read(&c, path);
    ckpt_find(&c, "optstate", 1);
}

static const char *const SKIP[] = {"params", NULL};

static void find_skipped(void *path) {
    Ckpt c;
    ckpt_read_except(&c, path, SKIP);
    ckpt_find(&c, "params", 0);
}

static void read_params_later(void *path) {
    Ckpt c;
    ckpt_read_except(&c, path, SKIP);
    ckpt_read_section(&c, "params");
}

static void read_skipping(void *path) {
    Ckpt c;
    ckpt_read_except(&c, path, SKIP);
    ckpt_close(&c);
}

// Skipped sections are not read: a flipped byte inside one goes unseen (the file's CRC is
// taken with its stored CRC); one inside a section read, or in any header, still dies.
TEST(ckpt_read_except_skips_payloads) {
    size_t len;
    uint8_t *b = sample_bytes(&len);
    const char *path = tmp_path("skip.ckpt");
    b[PARAMS_DATA + 5] ^= 0x40;
    write_file(path, b, len);
    Ckpt c;
    ckpt_read_except(&c, path, SKIP);
    CHECK_EQ(c.nsec, 3);
    CHECK(memcmp(ckpt_find(&c, "meta", 1)->data, META, strlen(META)) == 0);
    CHECK(ckpt_find(&c, "empty", 1)->len == 0);
    ckpt_close(&c);
    CHECK_DIES(read_ckpt, (void *)path, "section 'params' is corrupt (CRC mismatch)");
    CHECK_DIES(find_skipped, (void *)path, "section 'params' was not read");
    CHECK_DIES(read_params_later, (void *)path, "section 'params' is corrupt (CRC mismatch");
    b[PARAMS_DATA + 5] ^= 0x40;
    write_file(path, b, len);
    ckpt_read_except(&c, path, SKIP);
    CHECK(ckpt_has(&c, "params") && !ckpt_has(&c, "absent"));
    ckpt_read_section(&c, "params");
    const CkptSection *p = ckpt_find(&c, "params", 1);
    CHECK(p->len == NPARAM * sizeof(float) && memcmp(p->data, b + PARAMS_DATA, p->len) == 0);
    ckpt_close(&c);
    b[PARAMS_HDR + 16] ^= 1;  // the skipped section's stored CRC: the file's CRC catches it
    write_file(path, b, len);
    CHECK_DIES(read_skipping, (void *)path, "corrupt (file CRC mismatch)");
    free(b);
}

TEST(ckpt_missing_file_and_section) {
    CHECK_DIES(read_ckpt, (void *)tmp_path("no-such.ckpt"), "no-such.ckpt': cannot open: No such file");
    const char *path = tmp_path("find.ckpt");
    write_sample(path);
    CHECK_DIES(find_required, (void *)path, "find.ckpt': has no 'optstate' section");
}

// Every single-bit and whole-byte flip anywhere in the file is a clean error.
TEST(ckpt_every_byte_flip_detected) {
    size_t len;
    uint8_t *good = sample_bytes(&len);
    uint8_t *bad = xmalloc(len);
    const char *path = tmp_path("flip.ckpt");
    for (size_t pos = 0; pos < len; pos++) {
        for (int k = 0; k < 2; k++) {
            memcpy(bad, good, len);
            bad[pos] ^= k ? 0xFF : (uint8_t)(1u << (pos % 8));
            write_file(path, bad, len);
            CHECK_DIES(read_ckpt, (void *)path, "flip.ckpt': ");
        }
    }
    free(bad);
    free(good);
}

TEST(ckpt_specific_corruptions) {
    size_t len;
    uint8_t *good = sample_bytes(&len);
    uint8_t *bad = xmalloc(len);
    const char *path = tmp_path("bad.ckpt");
    struct { size_t pos, nbytes; uint8_t value; const char *needle; } cases[] = {
        {0, 1, 'X', "not a swlstm checkpoint"},
        {8, 1, 7, "checkpoint format version 7, this swlstm reads version 1"},
        {12, 4, 0xFF, "truncated or corrupt (header claims 4294967295 sections)"},
        {PARAMS_HDR + 8, 8, 0xFF, "truncated (section 'params' needs 18446744073709551615 bytes"},
        {PARAMS_DATA + 5, 1, 0x40, "section 'params' is corrupt (CRC mismatch)"},
        {PARAMS_HDR + 16, 1, 0x00, "section 'params' is corrupt (CRC mismatch)"},
        {PARAMS_HDR + 7, 1, 'z', "section 2 has a malformed tag"},
        {PARAMS_HDR + 1, 1, 'A', "corrupt (file CRC mismatch)"},  // "pArams": a valid tag
        {len - 12, 1, 'x', "end marker missing"},
        {len - 2, 1, 0x5A, "corrupt (file CRC mismatch)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, good, len);
        memset(bad + cases[i].pos, cases[i].value, cases[i].nbytes);
        CHECK_MSG(memcmp(bad, good, len) != 0, "case %zu changed nothing", i);
        write_file(path, bad, len);
        CHECK_DIES(read_ckpt, (void *)path, cases[i].needle);
    }
    free(bad);
    free(good);
}

TEST(ckpt_truncation_detected) {
    size_t len;
    uint8_t *good = sample_bytes(&len);
    const char *path = tmp_path("trunc.ckpt");
    for (size_t n = 0; n < len; n++) {
        write_file(path, good, n);
        CHECK_DIES(read_ckpt, (void *)path, n < 8 ? "not a swlstm checkpoint" : "truncated");
    }
    free(good);
}

// A payload of several read pieces (ckpt.c reads them on several threads) comes back whole,
// and a flipped byte in any piece, the last one short, is a CRC mismatch.
TEST(ckpt_payload_of_many_pieces) {
    size_t n = 2 * CKPT_PIECE_BYTES + 12, at = 16 + 20 + 4 + 20;  // after "meta" of 4 bytes
    uint8_t *big = xmalloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (uint8_t)(i * 2654435761u >> 13);
    CkptWriter *w = ckpt_writer_new();
    ckpt_add(w, "meta", "four", 4);
    ckpt_add(w, "big", big, n);
    const char *path = tmp_path("big.ckpt");
    ckpt_commit(w, path);
    Ckpt c;
    ckpt_read_except(&c, path, (const char *const[]){"big", NULL});
    ckpt_read_section(&c, "big");
    const CkptSection *s = ckpt_find(&c, "big", 1);
    CHECK(s->len == n && memcmp(s->data, big, n) == 0);
    ckpt_close(&c);
    size_t len;
    uint8_t *file = (uint8_t *)read_text_file(path, &len, "test file");
    CHECK(memcmp(file + at, big, n) == 0);
    size_t flips[] = {0, CKPT_PIECE_BYTES - 1, CKPT_PIECE_BYTES + 77, n - 1};
    for (int k = 0; k < 4; k++) {
        file[at + flips[k]] ^= 0x10;
        write_file(path, file, len);
        CHECK_DIES(read_ckpt, (void *)path, "section 'big' is corrupt (CRC mismatch)");
        file[at + flips[k]] ^= 0x10;
    }
    free(file);
    free(big);
}

// Lists dir; returns the number of entries other than . and .., first name in `first`.
static int list_dir(const char *dir, char *first, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n++ == 0) snprintf(first, cap, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

TEST(ckpt_commit_replaces_atomically) {
    const char *dir = tmp_path("commitdir");
    CHECK(mkdir_p(dir) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/a.ckpt", dir);
    write_sample(path);
    CkptWriter *w = ckpt_writer_new();
    ckpt_add(w, "second", "xyz", 3);
    ckpt_commit(w, path);
    char name[256] = "";
    CHECK_EQ(list_dir(dir, name, sizeof name), 1);
    CHECK(strcmp(name, "a.ckpt") == 0);
    Ckpt c;
    ckpt_read(&c, path);
    CHECK_EQ(c.nsec, 1);
    CHECK(memcmp(ckpt_find(&c, "second", 1)->data, "xyz", 3) == 0);
    ckpt_close(&c);
}

static void commit_to(void *path) {
    CkptWriter *w = ckpt_writer_new();
    ckpt_add(w, "meta", META, strlen(META));
    ckpt_commit(w, path);
}

// The temporary file is a link to /dev/full, so the writes fail with ENOSPC.
static void commit_disk_full(void *path) {
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", (const char *)path, (long)getpid());
    if (symlink("/dev/full", tmp) != 0) return;
    commit_to(path);
}

TEST(ckpt_commit_failures) {
    CHECK_DIES(commit_to, (void *)tmp_path("nodir/x.ckpt"), "nodir/x.ckpt': cannot create");
    const char *dir = tmp_path("fulldir");
    CHECK(mkdir_p(dir) == 0);
    char path[600], name[256];
    snprintf(path, sizeof path, "%s/full.ckpt", dir);
    CHECK_DIES(commit_disk_full, (void *)path, "full.ckpt': write failed: No space left on device");
    CHECK_EQ(list_dir(dir, name, sizeof name), 0);
}

static void add_bad_tag(void *tag) { ckpt_add(ckpt_writer_new(), tag, "", 0); }
static void add_twice(void *tag) {
    CkptWriter *w = ckpt_writer_new();
    ckpt_add(w, tag, "", 0);
    ckpt_add(w, tag, "", 0);
}

TEST(ckpt_writer_rejects_bad_tags) {
    CHECK_DIES(add_bad_tag, (void *)"", "must be 1 to 8 characters");
    CHECK_DIES(add_bad_tag, (void *)"ninechars", "'ninechars' must be 1 to 8 characters");
    CHECK_DIES(add_twice, (void *)"params", "'params' added twice");
}
#endif
