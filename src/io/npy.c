// npy.c: NumPy .npy reading and writing, and label files (.npy or text).
#include "io/npy.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/atomic_file.h"
#include "base/common.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c writes host-order data as little-endian: a big-endian host needs byte swapping"
#endif
_Static_assert(sizeof(int) == 4 && sizeof(float) == 4, "npy.c assumes 32-bit int and float");

// ---- writing ----

// Magic, version 1.0, 2-byte header length, then the dict padded with spaces and a final
// newline so that the data starts at a multiple of 64 bytes (numpy's own alignment).
static size_t npy_header(char *buf, size_t cap, const char *descr, int ndim, const size_t *shape) {
    char dict[200];
    if (ndim == 1) snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }", descr, shape[0]);
    else snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr, shape[0], shape[1]);
    size_t dlen = strlen(dict), total = (10 + dlen + 1 + 63) / 64 * 64, hlen = total - 10;
    if (total > cap) die("internal: npy header too long");
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, dlen);
    memset(buf + 10 + dlen, ' ', hlen - dlen - 1);
    buf[total - 1] = '\n';
    return total;
}

void npy_write(const char *path, const char *descr, const void *data, int ndim, const size_t *shape) {
    char head[256];
    size_t hn = npy_header(head, sizeof head, descr, ndim, shape);
    size_t count = shape[0] * (ndim == 2 ? shape[1] : 1);
    AtomicFile *f = af_open(path, "output file");
    af_write(f, head, hn);
    af_write(f, data, count * 4);
    af_commit(f);
}

// ---- header parsing ----

// Points just past "'key':" (and spaces) in the header dict, or dies.
static const char *dict_value(const char *dict, const char *key, const char *path) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s':", key);
    const char *p = strstr(dict, pat);
    if (!p) die("npy file '%s': header has no '%s' entry", path, key);
    p += strlen(pat);
    while (*p == ' ') p++;
    return p;
}

static void parse_shape(NpyHeader *h, const char *p, const char *path) {
    if (*p++ != '(') die("npy file '%s': malformed shape", path);
    h->ndim = 0;
    h->shape[1] = 1;
    while (*p != ')') {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p) die("npy file '%s': malformed shape", path);
        if (h->ndim == 2) die("npy file '%s': arrays of more than 2 dimensions are not supported", path);
        h->shape[h->ndim++] = (size_t)v;
        for (p = end; *p == ',' || *p == ' '; p++) {}
    }
    if (h->ndim == 0) die("npy file '%s': a scalar array; expected 1-D or 2-D", path);
}

void npy_parse_header(NpyHeader *h, const uint8_t *buf, size_t len, const char *path) {
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6)) die("npy file '%s': not a .npy file (bad magic)", path);
    int major = buf[6];
    size_t hlen, off;
    if (major == 1) { hlen = buf[8] | (size_t)buf[9] << 8; off = 10; }
    else if ((major == 2 || major == 3) && len >= 12) {
        hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        off = 12;
    } else die("npy file '%s': unsupported format version %d", path, major);
    if (off + hlen > len) die("npy file '%s': truncated header", path);
    char *dict = xmalloc(hlen + 1);
    memcpy(dict, buf + off, hlen);
    dict[hlen] = 0;
    const char *d = dict_value(dict, "descr", path);
    size_t dn = *d == '\'' ? strcspn(d + 1, "'") : 0;
    if (dn == 0 || dn >= sizeof h->descr) die("npy file '%s': malformed descr", path);
    memcpy(h->descr, d + 1, dn);
    h->descr[dn] = 0;
    if (strncmp(dict_value(dict, "fortran_order", path), "False", 5))
        die("npy file '%s': Fortran-order arrays are not supported (save with C order)", path);
    parse_shape(h, dict_value(dict, "shape", path), path);
    h->data_off = off + hlen;
    free(dict);
}

// ---- reading ----

typedef struct { const char *descr; int size; } Dtype;
static const Dtype dtypes[] = {{"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"|i1", 1}, {"|u1", 1}, {"|b1", 1}};

static double elem(int k, const uint8_t *p) {
    float f; double d; int32_t i4; int64_t i8;
    switch (k) {
    case 0: memcpy(&f, p, 4); return f;
    case 1: memcpy(&d, p, 8); return d;
    case 2: memcpy(&i4, p, 4); return i4;
    case 3: memcpy(&i8, p, 8); return (double)i8;
    case 4: return (int8_t)*p;
    default: return *p;
    }
}

// Reads path whole; returns the buffer, the header and the dtype index.
static uint8_t *npy_load(const char *path, NpyHeader *h, int *k) {
    size_t len;
    uint8_t *buf = (uint8_t *)read_text_file(path, &len, "npy file");
    npy_parse_header(h, buf, len, path);
    *k = -1;
    for (int i = 0; i < (int)(sizeof dtypes / sizeof dtypes[0]); i++)
        if (!strcmp(h->descr, dtypes[i].descr)) *k = i;
    if (*k < 0) die("npy file '%s': dtype '%s' not supported (expected <f4, <f8, <i4, <i8, |i1, |u1 or |b1)", path, h->descr);
    // Shape checked by division: a hostile shape must not wrap the byte count.
    size_t fits = (len - h->data_off) / (size_t)dtypes[*k].size;
    if (h->shape[1] && h->shape[0] > fits / h->shape[1])
        die("npy file '%s': truncated data (%zu bytes of data, shape (%zu, %zu) of %s needs more)", path,
            len - h->data_off, h->shape[0], h->shape[1], h->descr);
    return buf;
}

float *npy_read_matrix(const char *path, size_t *rows, size_t *cols) {
    NpyHeader h;
    int k;
    uint8_t *buf = npy_load(path, &h, &k);
    size_t n = h.shape[0] * h.shape[1];
    float *out = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) out[i] = (float)elem(k, buf + h.data_off + i * dtypes[k].size);
    free(buf);
    *rows = h.shape[0];
    *cols = h.shape[1];
    return out;
}

static int *labels_read_npy(const char *path, size_t *n) {
    NpyHeader h;
    int k;
    uint8_t *buf = npy_load(path, &h, &k);
    if (h.shape[1] != 1) die("labels file '%s': shape (%zu, %zu); expected a 1-D array", path, h.shape[0], h.shape[1]);
    int *out = xmalloc(h.shape[0] * sizeof(int));
    for (size_t i = 0; i < h.shape[0]; i++) {
        double v = elem(k, buf + h.data_off + i * dtypes[k].size);
        if (!(v >= INT_MIN && v <= INT_MAX) || v != floor(v)) die("labels file '%s': element %zu is %g; expected an integer label", path, i, v);
        out[i] = (int)v;
    }
    free(buf);
    *n = h.shape[0];
    return out;
}

static int *labels_read_txt(const char *path, size_t *n) {
    char *text = read_text_file(path, NULL, "labels file");
    size_t cap = 1024, cnt = 0;
    int *out = xmalloc(cap * sizeof(int));
    long line = 1;
    for (char *p = text; *p; line++) {
        char *eol = strchr(p, '\n'), *end;
        if (eol) *eol = 0;
        long v = strtol(p, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r') end++;
        if (end == p || *end || v != (int)v) die("labels file '%s':%ld: expected one integer label, got '%.40s'", path, line, p);
        if (cnt == cap) out = xrealloc(out, (cap *= 2) * sizeof(int));
        out[cnt++] = (int)v;
        if (!eol) break;
        p = eol + 1;
    }
    free(text);
    *n = cnt;
    return out;
}

int *labels_read(const char *path, size_t *n) {
    return ends_with(path, ".txt") ? labels_read_txt(path, n) : labels_read_npy(path, n);
}

void labels_write(const char *path, const int *labels, size_t n) {
    if (!ends_with(path, ".txt")) {
        npy_write(path, "<i4", labels, 1, &n);
        return;
    }
    AtomicFile *f = af_open(path, "output file");
    for (size_t i = 0; i < n; i++) {
        char line[16];
        af_write(f, line, (size_t)snprintf(line, sizeof line, "%d\n", labels[i]));
    }
    af_commit(f);
}
