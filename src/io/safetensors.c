// safetensors.c: the safetensors writer. Tensors are sorted by name and their data laid out
// in that order without gaps, as readers check that data_offsets tile the data exactly.
#include "io/safetensors.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "io/atomic_file.h"
#include "base/common.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c writes host-order data as little-endian: a big-endian host needs byte swapping"
#endif

#define ST_MAX_DIM 4

typedef struct {
    char *name;
    const char *dtype;
    int ndim;
    int64_t shape[ST_MAX_DIM];
    const void *data;
    uint64_t bytes;
} StTensor;

struct SafeTensors {
    StTensor *t;
    int n, cap;
    char **meta;   // key, value, key, value, ...
    int nmeta, meta_cap;
};

SafeTensors *st_new(void) { return xcalloc(1, sizeof(SafeTensors)); }

void st_add(SafeTensors *st, const char *name, const char *dtype, int ndim, const int64_t *shape, const void *data) {
    if (strcmp(dtype, "F32") && strcmp(dtype, "I32")) die("internal: safetensors dtype '%s' (expected F32 or I32)", dtype);
    if (ndim < 1 || ndim > ST_MAX_DIM) die("internal: safetensors tensor '%s' has %d dimensions", name, ndim);
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->t[i].name, name)) die("internal: safetensors tensor '%s' added twice", name);
    if (st->n == st->cap) st->t = xrealloc(st->t, sizeof(StTensor) * (size_t)(st->cap = st->cap ? 2 * st->cap : 16));
    StTensor *t = &st->t[st->n++];
    *t = (StTensor){xstrdup(name), dtype, ndim, {0}, data, 4};
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->bytes *= (uint64_t)shape[i];
    }
}

void st_meta(SafeTensors *st, const char *key, const char *value) {
    if (st->nmeta + 2 > st->meta_cap) st->meta = xrealloc(st->meta, sizeof(char *) * (size_t)(st->meta_cap = 2 * st->meta_cap + 8));
    st->meta[st->nmeta++] = xstrdup(key);
    st->meta[st->nmeta++] = xstrdup(value);
}

// ---- the JSON header ----

typedef struct { char *p; size_t n, cap; } Text;

__attribute__((format(printf, 2, 3))) static void put(Text *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (s->n + (size_t)need + 1 > s->cap) s->p = xrealloc(s->p, s->cap = 2 * (s->n + (size_t)need + 1));
    va_start(ap, fmt);
    vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
    va_end(ap);
    s->n += (size_t)need;
}

static void put_string(Text *s, const char *v) {
    put(s, "\"");
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\') put(s, "\\%c", *c);
        else if (*c == '\n') put(s, "\\n");
        else if (*c < 0x20) put(s, "\\u%04x", *c);
        else put(s, "%c", *c);
    }
    put(s, "\"");
}

static int by_name(const void *a, const void *b) { return strcmp(((const StTensor *)a)->name, ((const StTensor *)b)->name); }

// The header, padded with spaces so that the data starts 8-byte aligned.
static Text header(SafeTensors *st) {
    Text s = {0};
    put(&s, "{\"__metadata__\":{");
    for (int i = 0; i < st->nmeta; i += 2) {
        put_string(&s, st->meta[i]);
        put(&s, ":");
        put_string(&s, st->meta[i + 1]);
        if (i + 2 < st->nmeta) put(&s, ",");
    }
    put(&s, "}");
    uint64_t off = 0;
    for (int i = 0; i < st->n; i++) {
        const StTensor *t = &st->t[i];
        put(&s, ",");
        put_string(&s, t->name);
        put(&s, ":{\"dtype\":\"%s\",\"shape\":[", t->dtype);
        for (int d = 0; d < t->ndim; d++) put(&s, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        put(&s, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->bytes));
        off += t->bytes;
    }
    put(&s, "}");
    while (s.n % 8) put(&s, " ");
    return s;
}

static void st_free(SafeTensors *st) {
    for (int i = 0; i < st->n; i++) free(st->t[i].name);
    for (int i = 0; i < st->nmeta; i++) free(st->meta[i]);
    free(st->t);
    free(st->meta);
    free(st);
}

uint64_t st_write(SafeTensors *st, const char *path) {
    qsort(st->t, (size_t)st->n, sizeof(StTensor), by_name);
    Text h = header(st);
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    AtomicFile *af = af_open(path, "safetensors file");
    uint64_t total = sizeof len + h.n;
    af_write(af, len, sizeof len);
    af_write(af, h.p, h.n);
    for (int i = 0; i < st->n; i++) {
        af_write(af, st->t[i].data, st->t[i].bytes);
        total += st->t[i].bytes;
    }
    af_commit(af);  // dies naming path and the cause on any failed step
    free(h.p);
    st_free(st);
    return total;
}
