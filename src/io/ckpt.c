// ckpt.c: the checkpoint container. Layout (little-endian):
//   "SWLSTMCK" u32 version u32 nsections
//   nsections x { tag[8] (NUL-padded) u64 len u32 crc32(payload) payload[len] }
//   "SWLSTMEN" u32 crc32(every byte before "SWLSTMEN")
// The trailing CRC covers headers and tags too, so any flipped byte or truncation is caught.
// Payloads are not aligned inside the file: readers memcpy them out.
#include "io/ckpt.h"
#include "io/atomic_file.h"
#include "base/common.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char MAGIC[8] = {'S', 'W', 'L', 'S', 'T', 'M', 'C', 'K'};
static const char ENDMAGIC[8] = {'S', 'W', 'L', 'S', 'T', 'M', 'E', 'N'};
enum { HEADER_BYTES = 16, SECHDR_BYTES = 20, TRAILER_BYTES = 12 };

static uint32_t crc_of(uint32_t crc, const void *p, size_t n) {
    return (uint32_t)crc32_z(crc, (const Bytef *)p, n);
}

static void put_le(uint8_t *dst, uint64_t x, int nbytes) {
    for (int i = 0; i < nbytes; i++) dst[i] = (uint8_t)(x >> (8 * i));
}

static uint64_t get_le(const uint8_t *src, int nbytes) {
    uint64_t x = 0;
    for (int i = nbytes - 1; i >= 0; i--) x = (x << 8) | src[i];
    return x;
}

// ---- writing ----

typedef struct {
    char tag[9];
    uint8_t *data;
    size_t len;
} WSection;

struct CkptWriter {
    WSection *sec;
    int n, cap;
};

CkptWriter *ckpt_writer_new(void) { return xcalloc(1, sizeof(CkptWriter)); }

void ckpt_add(CkptWriter *w, const char *tag, const void *data, size_t len) {
    size_t tl = strlen(tag);
    if (tl == 0 || tl > 8) die("checkpoint section tag '%s' must be 1 to 8 characters", tag);
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->sec[i].tag, tag) == 0) die("checkpoint section '%s' added twice", tag);
    if (w->n == w->cap) w->sec = xrealloc(w->sec, (size_t)(w->cap = w->cap ? 2 * w->cap : 8) * sizeof(WSection));
    WSection *s = &w->sec[w->n++];
    memset(s->tag, 0, sizeof s->tag);
    memcpy(s->tag, tag, tl);
    s->data = xmalloc(len);
    if (len) memcpy(s->data, data, len);
    s->len = len;
}

// The file being written: `crc` runs over every byte so far.
typedef struct {
    AtomicFile *f;
    uint32_t crc;
} Out;

static void out_put(Out *o, const void *p, size_t n) {
    af_write(o->f, p, n);
    o->crc = crc_of(o->crc, p, n);
}

static void write_body(Out *o, const CkptWriter *w) {
    uint8_t hdr[HEADER_BYTES];
    memcpy(hdr, MAGIC, 8);
    put_le(hdr + 8, CKPT_VERSION, 4);
    put_le(hdr + 12, (uint64_t)w->n, 4);
    out_put(o, hdr, sizeof hdr);
    for (int i = 0; i < w->n; i++) {
        const WSection *s = &w->sec[i];
        uint8_t sh[SECHDR_BYTES];
        memcpy(sh, s->tag, 8);
        put_le(sh + 8, s->len, 8);
        put_le(sh + 16, crc_of(0, s->data, s->len), 4);
        out_put(o, sh, sizeof sh);
        out_put(o, s->data, s->len);
    }
    uint8_t tr[TRAILER_BYTES];
    memcpy(tr, ENDMAGIC, 8);
    put_le(tr + 8, o->crc, 4);
    out_put(o, tr, sizeof tr);
}

static void writer_free(CkptWriter *w) {
    for (int i = 0; i < w->n; i++) free(w->sec[i].data);
    free(w->sec);
    free(w);
}

void ckpt_commit(CkptWriter *w, const char *path) {
    Out o = {af_open(path, "checkpoint"), 0};
    write_body(&o, w);
    af_commit(o.f);
    writer_free(w);
}

// ---- reading ----

// The file's bytes land in c->buf at their offsets as they are needed: the header, the
// section headers and trailer, and the payloads read (the pages of skipped ones are never
// touched). Each read opens and closes the file, so no descriptor is open at any die().
// Returns 0 if the file is shorter than off + n or unreadable.
static int read_span(const Ckpt *c, size_t off, size_t n) {
    int fd = open(c->path, O_RDONLY);
    ssize_t got = fd < 0 ? -1 : pread(fd, c->buf + off, n, (off_t)off);
    if (fd >= 0) close(fd);
    return got == (ssize_t)n;
}

static void read_at(const Ckpt *c, size_t off, size_t n) {
    if (n && !read_span(c, off, n)) die("checkpoint '%s': read failed (file changed while reading?)", c->path);
}

static void size_up(Ckpt *c, const char *path) {
    FILE *f = xfopen(path, "rb", "checkpoint");
    struct stat st;
    int ok = fstat(fileno(f), &st) == 0, err = errno;
    fclose(f);
    if (!ok) die("checkpoint '%s': cannot stat: %s", path, strerror(err));
    if (!S_ISREG(st.st_mode)) die("checkpoint '%s': not a regular file", path);
    c->len = (size_t)st.st_size;
    c->buf = xmalloc(c->len ? c->len : 1);
}

static int listed(const char *tag, const char *const *skip) {
    for (; skip && *skip; skip++)
        if (!strcmp(tag, *skip)) return 1;
    return 0;
}

// A valid tag is 1-8 printable characters followed only by NUL padding.
static int tag_ok(const uint8_t *t) {
    int i = 0;
    while (i < 8 && t[i] > 0x20 && t[i] < 0x7f) i++;
    if (i == 0) return 0;
    for (; i < 8; i++)
        if (t[i]) return 0;
    return 1;
}

// A big payload is read and checked in pieces by several threads: its page faults, copies out
// of the page cache and CRC are each a core's work. More readers than 8 add little once the
// memory bus is busy.
enum { MAX_READERS = 8 };

typedef struct {
    const Ckpt *c;
    const CkptSection *s;
    uint32_t *crc;    // of each piece
    int first, step;  // this reader's pieces: first, first + step, ...
    int failed;
} PieceReader;

static void *read_pieces(void *arg) {
    PieceReader *r = arg;
    size_t len = (size_t)r->s->len;
    for (size_t i = (size_t)r->first; i * CKPT_PIECE_BYTES < len; i += (size_t)r->step) {
        size_t at = (size_t)r->s->offset + i * CKPT_PIECE_BYTES, n = len - i * CKPT_PIECE_BYTES;
        if (n > CKPT_PIECE_BYTES) n = CKPT_PIECE_BYTES;
        r->failed |= !read_span(r->c, at, n);
        r->crc[i] = crc_of(0, r->c->buf + at, n);
    }
    return NULL;
}

// Readers for n pieces: one a core this process may run on, at most MAX_READERS.
static int reader_count(size_t n) {
    cpu_set_t cpus;
    int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    int k = cores < MAX_READERS ? cores : MAX_READERS;
    return (size_t)k < n ? k : (int)n;
}

// Reads a section's payload into place and checks it against its header's CRC.
static void read_payload(Ckpt *c, CkptSection *s) {
    size_t len = (size_t)s->len, np = (len + CKPT_PIECE_BYTES - 1) / CKPT_PIECE_BYTES;
    int nr = reader_count(np), failed = 0;
    uint32_t *crc = xmalloc((np ? np : 1) * sizeof *crc);
    PieceReader r[MAX_READERS];
    pthread_t tid[MAX_READERS];
    int started[MAX_READERS] = {0};
    for (int t = 0; t < nr; t++) {
        r[t] = (PieceReader){c, s, crc, t, nr, 0};
        started[t] = t && pthread_create(&tid[t], NULL, read_pieces, &r[t]) == 0;
    }
    for (int t = 0; t < nr; t++) {  // a reader that could not start is run here
        if (started[t]) pthread_join(tid[t], NULL);
        else read_pieces(&r[t]);
        failed |= r[t].failed;
    }
    if (failed) die("checkpoint '%s': read failed (file changed while reading?)", c->path);
    uint32_t all = 0;
    for (size_t i = 0; i < np; i++)
        all = (uint32_t)crc32_combine(all, crc[i], (z_off_t)(i + 1 < np ? CKPT_PIECE_BYTES : len - i * CKPT_PIECE_BYTES));
    free(crc);
    s->data = c->buf + s->offset;
    if (all != s->crc) die("checkpoint '%s': section '%s' is corrupt (CRC mismatch)", c->path, s->tag);
    s->skipped = 0;
}

// Parses section headers between HEADER_BYTES and `end`, checking bounds and the CRCs of the
// payloads it reads (all but those in skip); returns the CRC of every byte before `end`,
// combined from the headers' and the payloads' CRCs (a skipped payload's as its header states).
static uint32_t read_sections(Ckpt *c, size_t end, const char *const *skip) {
    const char *path = c->path;
    uint64_t nsec = get_le(c->buf + 12, 4);
    if (nsec > (end - HEADER_BYTES) / SECHDR_BYTES || nsec > INT_MAX)
        die("checkpoint '%s': truncated or corrupt (header claims %llu sections)", path, (unsigned long long)nsec);
    c->nsec = (int)nsec;
    c->sec = xcalloc(nsec, sizeof(CkptSection));
    size_t off = HEADER_BYTES;
    uint32_t file_crc = crc_of(0, c->buf, HEADER_BYTES);
    for (int i = 0; i < c->nsec; i++) {
        if (end - off < SECHDR_BYTES) die("checkpoint '%s': truncated (section %d of %d is missing)", path, i + 1, c->nsec);
        read_at(c, off, SECHDR_BYTES);
        const uint8_t *h = c->buf + off;
        CkptSection *s = &c->sec[i];
        if (!tag_ok(h)) die("checkpoint '%s': section %d has a malformed tag (corrupt file)", path, i + 1);
        memcpy(s->tag, h, 8);
        s->len = get_le(h + 8, 8);
        s->crc = (uint32_t)get_le(h + 16, 4);
        file_crc = (uint32_t)crc32_combine(file_crc, crc_of(0, h, SECHDR_BYTES), SECHDR_BYTES);
        off += SECHDR_BYTES;
        if (s->len > (uint64_t)(end - off))
            die("checkpoint '%s': truncated (section '%s' needs %llu bytes, %zu remain)", path, s->tag,
                (unsigned long long)s->len, end - off);
        s->offset = off;
        s->skipped = 1;
        if (!listed(s->tag, skip)) read_payload(c, s);
        file_crc = (uint32_t)crc32_combine(file_crc, s->crc, (z_off_t)s->len);
        off += (size_t)s->len;
    }
    if (off != end) die("checkpoint '%s': corrupt (%zu unexpected bytes after the last section)", path, end - off);
    return file_crc;
}

void ckpt_read(Ckpt *c, const char *path) { ckpt_read_except(c, path, NULL); }

void ckpt_read_except(Ckpt *c, const char *path, const char *const *skip) {
    memset(c, 0, sizeof *c);
    c->path = xstrdup(path);
    size_up(c, path);
    read_at(c, 0, c->len < HEADER_BYTES ? c->len : HEADER_BYTES);
    if (c->len < 8) die("checkpoint '%s': not a swlstm checkpoint (only %zu bytes)", path, c->len);
    if (memcmp(c->buf, MAGIC, 8) != 0) die("checkpoint '%s': not a swlstm checkpoint", path);
    if (c->len < HEADER_BYTES + TRAILER_BYTES) die("checkpoint '%s': truncated (%zu bytes)", path, c->len);
    c->version = (uint32_t)get_le(c->buf + 8, 4);
    if (c->version != CKPT_VERSION)
        die("checkpoint '%s': checkpoint format version %u, this swlstm reads version %d", path, c->version, CKPT_VERSION);
    size_t end = c->len - TRAILER_BYTES;
    uint32_t crc = read_sections(c, end, skip);
    read_at(c, end, TRAILER_BYTES);
    if (memcmp(c->buf + end, ENDMAGIC, 8) != 0) die("checkpoint '%s': truncated or corrupt (end marker missing)", path);
    if (crc != (uint32_t)get_le(c->buf + end + 8, 4)) die("checkpoint '%s': corrupt (file CRC mismatch)", path);
}

// Section by tag, read or not; NULL if the file has none.
static CkptSection *section(const Ckpt *c, const char *tag) {
    for (int i = 0; i < c->nsec; i++)
        if (!strcmp(c->sec[i].tag, tag)) return &c->sec[i];
    return NULL;
}

void ckpt_read_section(Ckpt *c, const char *tag) {
    CkptSection *s = section(c, tag);
    if (!s) die("checkpoint '%s': has no '%s' section", c->path, tag);
    if (s->skipped) read_payload(c, s);
}

int ckpt_has(const Ckpt *c, const char *tag) { return section(c, tag) != NULL; }

const CkptSection *ckpt_find(const Ckpt *c, const char *tag, int required) {
    const CkptSection *s = section(c, tag);
    if (s && s->skipped) die("internal: checkpoint '%s': section '%s' was not read", c->path, tag);
    if (!s && required) die("checkpoint '%s': has no '%s' section", c->path, tag);
    return s;
}

// CRC of a skipped payload, read a piece at a time into a scratch buffer (c->buf stays
// untouched: the verb never asked for these bytes).
static uint32_t skipped_crc(const Ckpt *c, const CkptSection *s) {
    uint8_t *piece = xmalloc(CKPT_PIECE_BYTES);
    uint32_t crc = crc_of(0, NULL, 0);
    int fd = open(c->path, O_RDONLY), ok = fd >= 0;
    for (uint64_t at = 0; ok && at < s->len; at += CKPT_PIECE_BYTES) {
        size_t n = s->len - at < CKPT_PIECE_BYTES ? (size_t)(s->len - at) : CKPT_PIECE_BYTES;
        ok = pread(fd, piece, n, (off_t)(s->offset + at)) == (ssize_t)n;
        crc = crc_of(crc, piece, n);
    }
    if (fd >= 0) close(fd);
    free(piece);
    if (!ok) die("checkpoint '%s': read failed (file changed while reading?)", c->path);
    return crc;
}

void ckpt_warn_damaged(const Ckpt *c) {
    char bad[256] = "";
    for (int i = 0; i < c->nsec; i++) {
        const CkptSection *s = &c->sec[i];
        if (s->skipped && skipped_crc(c, s) != s->crc && strlen(bad) + 12 < sizeof bad)
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "%s'%s'", bad[0] ? ", " : "", s->tag);
    }
    if (bad[0])
        warnf("checkpoint '%s': section %s is damaged (CRC mismatch); this command does not read it, "
              "but what does (--resume, prune) will fail", c->path, bad);
}

void ckpt_close(Ckpt *c) {
    free(c->buf);
    free(c->sec);
    free(c->path);
    memset(c, 0, sizeof *c);
}
