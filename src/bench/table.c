// table.c: the tables `swlstm bench` prints, as markdown or as JSON lines keyed by the head's
// columns (one formatting of a row serves both).
#include "bench/table.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"

#define MAX_COLS 24
static struct {
    int json, ncols;
    const char *name;
    char keys[MAX_COLS][48];
} T;

void table_json(int on) { T.json = on; }

// The next cell of a "| a | b |" row, trimmed, into buf; NULL past the last.
static const char *next_cell(const char *p, char *buf, size_t n) {
    if (!p || *p != '|' || !p[1] || p[1] == '\n') return NULL;
    const char *end = strchr(p + 1, '|');
    if (!end) return NULL;
    const char *a = p + 1, *b = end;
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    snprintf(buf, n, "%.*s", (int)(b - a), a);
    return end;
}

// "fwd, x bf16 us" -> "fwd_x_bf16_us", "%copy" -> "pct_copy".
static void column_key(const char *col, char *key, size_t n) {
    size_t k = 0;
    for (const char *c = col; *c && k + 5 < n; c++) {
        if (*c == '%') k += (size_t)snprintf(key + k, n - k, "%spct_", k && key[k - 1] != '_' ? "_" : "");
        else if (isalnum((unsigned char)*c)) key[k++] = (char)tolower((unsigned char)*c);
        else if (k && key[k - 1] != '_') key[k++] = '_';
    }
    while (k && key[k - 1] == '_') k--;
    key[k] = 0;
}

void table_head(const char *name, const char *head) {
    T.name = name, T.ncols = 0;
    char cell[128];
    for (const char *p = head; (p = next_cell(p, cell, sizeof cell));) {
        if (T.ncols == MAX_COLS) die("bench table %s: more than %d columns", name, MAX_COLS);
        column_key(cell, T.keys[T.ncols], sizeof T.keys[0]);
        for (int i = 0; i < T.ncols; i++)
            if (!strcmp(T.keys[i], T.keys[T.ncols])) die("bench table %s: two columns named '%s'", name, T.keys[i]);
        T.ncols++;
    }
    if (T.json) return;
    printf("%s\n", head);
    for (int i = 0; i < T.ncols; i++) printf("|---");
    printf("|\n");
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++)
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    putchar('"');
}

static void json_cell(const char *c) {
    char *end;
    double v = strtod(c, &end);
    if (!*c || !strcmp(c, "-") || !strncmp(c, "n/a", 3)) printf("null");
    else if (end != c && (!*end || !strcmp(end, "%"))) printf("%.10g", v);
    else json_string(c);
}

void table_row(const char *fmt, ...) {
    char line[2048], cell[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!T.json) {
        printf("%s", line);
        return;
    }
    int n = 0;
    for (const char *p = line; (p = next_cell(p, cell, sizeof cell));) n++;
    if (n != T.ncols) die("bench table %s: a row of %d cells under %d columns", T.name, n, T.ncols);
    printf("{\"table\":\"%s\"", T.name);
    const char *p = line;
    for (int i = 0; (p = next_cell(p, cell, sizeof cell)); i++) {
        printf(",\"%s\":", T.keys[i]);
        json_cell(cell);
    }
    printf("}\n");
}

void table_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(T.json ? stderr : stdout, fmt, ap);
    va_end(ap);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, int n) {
    qsort(v, n, sizeof(double), cmp_double);
    return v[n / 2];
}
