// common.c: fatal errors, checked allocation and small file helpers.
#include "base/common.h"
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char context[64], last_error[2048 + 64];
void (*die_hook)(void);

const char *die_message(void) { return last_error; }

void die_context(const char *ctx) { snprintf(context, sizeof context, "%s%s", ctx, *ctx ? ": " : ""); }

static void report(const char *kind, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fflush(stdout);
    fprintf(stderr, "swlstm: %s: %s%s\n", kind, context, msg);  // one write: ranks do not interleave
    fflush(stderr);
    if (!strcmp(kind, "error")) snprintf(last_error, sizeof last_error, "%s%s", context, msg);
}

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report("error", fmt, ap);
    va_end(ap);
    if (die_hook) die_hook();
    fflush(NULL);
    _exit(1);
}

void warnf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report("warning", fmt, ap);
    va_end(ap);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of host memory allocating %zu bytes (hint: lower batch_size or hidden_size)", n);
    return p;
}

void *xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die("out of host memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) die("out of host memory reallocating %zu bytes", n);
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

FILE *xfopen(const char *path, const char *mode, const char *what) {
    FILE *f = fopen(path, mode);
    if (!f) die("%s '%s': cannot open: %s", what, path, strerror(errno));
    return f;
}

char *read_text_file(const char *path, size_t *len, const char *what) {
    FILE *f = xfopen(path, "rb", what);
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) buf = xrealloc(buf, cap *= 2);
    }
    if (ferror(f)) die("%s '%s': read failed", what, path);
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

double file_size(const char *path) {
    struct stat st;
    return stat(path, &st) ? 0 : (double)st.st_size;
}

int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void refuse_same_file(const char *verb, const char *in, const char *out) {
    if (in && out && same_file(in, out))
        die("%s: output '%s' is its input file; write it to another path (no verb writes over its own input)", verb, out);
}

int mkdir_p(const char *path) {
    char *tmp = xstrdup(path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) { free(tmp); return -1; }
        *p = '/';
    }
    int rc = (mkdir(tmp, 0755) && errno != EEXIST) ? -1 : 0;
    free(tmp);
    return rc;
}

long parse_long(const char *what, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi)
        die("%s = '%s': expected an integer from %ld to %ld", what, s ? s : "", lo, hi);
    return v;
}

double parse_double(const char *what, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !(v >= lo && v <= hi))
        die("%s = '%s': expected a number from %g to %g", what, s ? s : "", lo, hi);
    return v;
}
