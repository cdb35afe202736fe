// unit_page.c: the HTML of a unit's values over a text (see unit_page.h).
#include "features/unit_page.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base/common.h"

typedef struct { char *p; size_t len, cap; } Buf;

__attribute__((format(printf, 2, 3)))
static void put(Buf *b, const char *fmt, ...) {
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (b->len + n + 1 > b->cap) b->p = xrealloc(b->p, b->cap = 2 * (b->len + n + 1));
    vsnprintf(b->p + b->len, n + 1, fmt, ap);
    va_end(ap);
    b->len += n;
}

// Length of the valid UTF-8 sequence at s (n bytes left), or 0 (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF).
static int utf8_len(const uint8_t *s, size_t n) {
    int k = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    if (!k || (size_t)k > n) return 0;
    for (int i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return k;
}

// One character: escaped for HTML text.
static void put_char(Buf *b, const uint8_t *s, int k) {
    static const char *esc[] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;"};
    if (!k) put(b, "&#xFFFD;");
    else if (k > 1) put(b, "%.*s", k, (const char *)s);
    else if (s[0] < sizeof esc / sizeof esc[0] && esc[s[0]]) put(b, "%s", esc[s[0]]);
    else if (s[0] == '\n' || s[0] == '\t' || (s[0] >= 0x20 && s[0] < 0x7f)) put(b, "%c", s[0]);
    else put(b, "&#x%X;", s[0] == 0x7f ? 0x2421 : 0x2400 + s[0]);
}

static void put_text(Buf *b, const char *s) {
    size_t n = strlen(s);
    for (size_t t = 0; t < n;) {
        int k = utf8_len((const uint8_t *)s + t, n - t);
        put_char(b, (const uint8_t *)s + t, k);
        t += k ? k : 1;
    }
}

char *unit_page_html(const uint8_t *text, size_t n, const float *val, const char *title, size_t *len) {
    double scale = 0;
    for (size_t t = 0; t < n; t++) scale = fmax(scale, fabs(val[t]));
    Buf b = {0};
    put(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    put_text(&b, title);
    put(&b, "</title></head>\n<body style=\"font-family:monospace\">\n<p>");
    put_text(&b, title);
    put(&b, "; colour scale: |value| %.4g = full green (positive) or red (negative)</p>\n"
            "<div style=\"white-space:pre-wrap\">", scale);
    for (size_t t = 0; t < n;) {
        int k = utf8_len(text + t, n - t), step = k ? k : 1;
        double v = val[t + step - 1], a = scale > 0 ? fabs(v) / scale : 0;
        int lo = (int)lround(255 * (1 - a));
        put(&b, "<span style=\"background:#%02x%02x%02x\" title=\"byte %zu: %.4g\">", v < 0 ? 255 : lo, v < 0 ? lo : 255, lo,
            t + step - 1, v);
        put_char(&b, text + t, k);
        put(&b, "</span>");
        t += step;
    }
    put(&b, "</div>\n</body></html>\n");
    *len = b.len;
    return b.p;
}
