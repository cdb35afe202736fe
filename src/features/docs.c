// docs.c: reading documents (one per line, optionally "LABEL TEXT") and preprocessing them.
#include "features/docs.h"
#include <stdlib.h>
#include <string.h>
#include "base/common.h"

static int is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

size_t doc_preprocess(uint8_t *out, const uint8_t *s, size_t n) {
    size_t a = 0, b = n, k = 0;
    while (a < b && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    out[k++] = '\n';
    out[k++] = ' ';
    for (size_t i = a; i < b; i++) out[k++] = s[i] == '\n' ? ' ' : s[i];
    out[k++] = ' ';
    return k;
}

// Parses the "LABEL " prefix of a line; returns the number of bytes it takes.
static size_t parse_label(const uint8_t *s, size_t n, int *label, const char *path, long line) {
    size_t i = (n > 0 && s[0] == '-') ? 1 : 0, start = i;
    long long v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 10) v = v * 10 + (s[i++] - '0');
    int ok = i > start && (i == n || s[i] == ' ' || s[i] == '\t') && v <= 2147483647LL;
    if (!ok) {
        int show = n < 30 ? (int)n : 30;
        die("%s:%ld: expected 'LABEL TEXT' with an integer label first, got '%.*s'", path, line, show, (const char *)s);
    }
    *label = (int)(s[0] == '-' ? -v : v);
    return i < n ? i + 1 : i;
}

// Appends one line (without its '\n') as document d->n.
static void add_doc(Docs *d, const uint8_t *s, size_t n, int preprocess, const char *path, long line) {
    if (d->label) {
        size_t k = parse_label(s, n, &d->label[d->n], path, line);
        s += k;
        n -= k;
    }
    uint8_t *out = d->bytes + d->off[d->n];
    size_t len = preprocess ? doc_preprocess(out, s, n) : (memcpy(out, s, n), n);
    d->off[d->n + 1] = d->off[d->n] + len;
    d->n++;
}

void docs_read(Docs *d, const char *path, int labelled, int preprocess, long max_docs) {
    size_t len;
    uint8_t *text = (uint8_t *)read_text_file(path, &len, "documents file");
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    lines += len > 0 && text[len - 1] != '\n';
    if (max_docs > 0 && (size_t)max_docs < lines) lines = (size_t)max_docs;
    memset(d, 0, sizeof *d);
    d->bytes = xmalloc(len + 3 * lines + 1);  // preprocessing adds 3 bytes per document
    d->off = xcalloc(lines + 1, sizeof(size_t));
    d->label = labelled ? xcalloc(lines + 1, sizeof(int)) : NULL;
    size_t start = 0;
    while ((size_t)d->n < lines) {
        const uint8_t *eol = memchr(text + start, '\n', len - start);
        size_t end = eol ? (size_t)(eol - text) : len;
        add_doc(d, text + start, end - start, preprocess, path, d->n + 1);
        start = end + 1;
    }
    free(text);
}

void docs_free(Docs *d) {
    free(d->bytes);
    free(d->off);
    free(d->label);
    memset(d, 0, sizeof *d);
}
