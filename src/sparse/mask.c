// mask.c: block-sparsity layouts (dense, random, Barabasi-Albert, Watts-Strogatz) and their
// graph statistics. A square layout is read as a graph: block (i, j) links node i and node j.
#include "sparse/mask.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "io/png.h"
#include "base/rng.h"

typedef enum { MASK_DENSE, MASK_RANDOM, MASK_BA, MASK_WS } MaskKind;
typedef struct {
    MaskKind kind;
    double density;  // random
    int m;           // ba
    int k;           // ws
    double p;        // ws
} MaskDesc;

#define MASK_FORMS "dense, random_<density>, ba_<m> or ws_<k>_<p>"

// Writes "sparsity '<desc>': <why> (expected ...)" into err; returns 1 (the error status).
__attribute__((format(printf, 4, 5)))
static int desc_error(char *err, int errlen, const char *desc, const char *fmt, ...) {
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(err, (size_t)errlen, "sparsity '%s': %s (expected " MASK_FORMS ")", desc, why);
    return 1;
}

// Strict number parsing: the whole text up to `stop` (a char or NUL) must be the number.
static const char *scan_long(const char *s, char stop, long *out) {
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return (end == s || *end != stop || errno) ? NULL : end;
}

static int scan_double(const char *s, double *out) {
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == 0;
}

static int parse_desc(const char *desc, int nr, int nc, MaskDesc *d, char *err, int errlen) {
    int n = nr;
    long v;
    if (!strcmp(desc, "dense")) {
        d->kind = MASK_DENSE;
        return 0;
    }
    if (!strncmp(desc, "random_", 7)) {
        d->kind = MASK_RANDOM;
        if (!scan_double(desc + 7, &d->density)) return desc_error(err, errlen, desc, "density '%s' is not a number", desc + 7);
        if (!(d->density > 0 && d->density <= 1)) return desc_error(err, errlen, desc, "density must be in (0,1]");
        return 0;
    }
    int is_ba = !strncmp(desc, "ba_", 3), is_ws = !strncmp(desc, "ws_", 3);
    if (!is_ba && !is_ws) return desc_error(err, errlen, desc, "unknown kind");
    if (nr != nc) return desc_error(err, errlen, desc, "needs a square layout, got %d x %d blocks", nr, nc);
    if (is_ba) {
        d->kind = MASK_BA;
        if (!scan_long(desc + 3, 0, &v)) return desc_error(err, errlen, desc, "m '%s' is not an integer", desc + 3);
        if (v < 1 || v >= n) return desc_error(err, errlen, desc, "m must be in 1..(n-1) = 1..%d", n - 1);
        d->m = (int)v;
        return 0;
    }
    d->kind = MASK_WS;
    const char *ps = scan_long(desc + 3, '_', &v);
    if (!ps) return desc_error(err, errlen, desc, "k is not an integer followed by _<p>");
    if (v < 2 || v >= n || v % 2) return desc_error(err, errlen, desc, "k must be even and in 2..(n-1) = 2..%d", n - 1);
    d->k = (int)v;
    if (!scan_double(ps + 1, &d->p)) return desc_error(err, errlen, desc, "p '%s' is not a number", ps + 1);
    if (!(d->p >= 0 && d->p <= 1)) return desc_error(err, errlen, desc, "p must be in [0,1]");
    return 0;
}

int mask_check_desc(const char *desc, int nr, int nc, char *err, int errlen) {
    MaskDesc d;
    return parse_desc(desc, nr, nc, &d, err, errlen);
}

// Undirected link i <-> j (square layouts).
static void link(Mask *mk, int i, int j, uint8_t on) {
    mk->m[(size_t)i * mk->nc + j] = on;
    mk->m[(size_t)j * mk->nc + i] = on;
}

static int linked(const Mask *mk, int i, int j) { return mk->m[(size_t)i * mk->nc + j]; }

// The (stretched) diagonal: the identity for square layouts. Makes every row and column non-empty.
static void add_diagonal(Mask *mk) {
    for (int r = 0; r < mk->nr; r++) mk->m[(size_t)r * mk->nc + (size_t)r * mk->nc / mk->nr] = 1;
    for (int c = 0; c < mk->nc; c++) mk->m[(size_t)c * mk->nr / mk->nc * mk->nc + c] = 1;
}

// Each block kept with probability `density`; square layouts are symmetric (an Erdos-Renyi
// graph), so that they compare like for like with the undirected ba and ws graphs.
static void make_random(Mask *mk, double density, Rng *rng) {
    int square = mk->nr == mk->nc;
    for (int r = 0; r < mk->nr; r++)
        for (int c = 0; c < mk->nc; c++)
            mk->m[(size_t)r * mk->nc + c] = (square && c < r) ? linked(mk, c, r) : rng_uniform(rng) < density;
}

// Barabasi-Albert growth from an empty seed graph of m nodes. `rep` lists every edge endpoint,
// so a uniform draw from it picks a node with probability proportional to its degree.
static void make_ba(Mask *mk, int m, Rng *rng) {
    int n = mk->nr;
    int *rep = xmalloc(sizeof(int) * 2 * (size_t)m * (size_t)(n - m));
    long nrep = 0;
    for (int v = m; v < n; v++) {
        long drawn_from = nrep;  // v's own endpoints must not change its draws
        for (int t = 0; t < m; t++) {
            int x = t;  // node m links to every seed node
            if (v > m) do x = rep[rng_below(rng, (uint64_t)drawn_from)]; while (linked(mk, v, x));
            link(mk, v, x, 1);
            rep[nrep++] = x;
            rep[nrep++] = v;
        }
    }
    free(rep);
    for (int i = 0; i < m; i++)  // dense hub block: the seed nodes form a clique
        for (int j = 0; j < m; j++) link(mk, i, j, 1);
}

// Watts-Strogatz: ring lattice with k/2 neighbours each side, then edge (i, i+j) moves its far
// end to a uniform non-neighbour of i with probability p. Edge count stays n*k/2.
static void make_ws(Mask *mk, int k, double p, Rng *rng) {
    int n = mk->nr;
    int *deg = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        deg[i] = k;
        for (int j = 1; j <= k / 2; j++) link(mk, i, (i + j) % n, 1);
    }
    for (int j = 1; j <= k / 2; j++)
        for (int i = 0; i < n; i++) {
            if (rng_uniform(rng) >= p || deg[i] >= n - 1) continue;
            int w;
            do w = (int)rng_below(rng, (uint64_t)n); while (w == i || linked(mk, i, w));
            link(mk, i, (i + j) % n, 0);
            link(mk, i, w, 1);
            deg[(i + j) % n]--;
            deg[w]++;
        }
    free(deg);
}

Mask mask_make(const char *desc, int nr, int nc, uint64_t seed) {
    char err[512];
    MaskDesc d;
    if (parse_desc(desc, nr, nc, &d, err, sizeof err)) die("%s", err);
    Mask mk = {nr, nc, xcalloc((size_t)nr * (size_t)nc, 1)};
    Rng rng;
    rng_seed(&rng, seed);
    switch (d.kind) {
    case MASK_DENSE: memset(mk.m, 1, (size_t)nr * (size_t)nc); break;
    case MASK_RANDOM: make_random(&mk, d.density, &rng); break;
    case MASK_BA: make_ba(&mk, d.m, &rng); break;
    case MASK_WS: make_ws(&mk, d.k, d.p, &rng); break;
    }
    add_diagonal(&mk);
    return mk;
}

void mask_free(Mask *m) {
    free(m->m);
    m->m = NULL;
}

long mask_count(const Mask *m) {
    long n = 0;
    for (size_t i = 0; i < (size_t)m->nr * (size_t)m->nc; i++) n += m->m[i];
    return n;
}

int mask_owner_row(int nr, int nowners, int o) { return (int)((long)o * nr / nowners); }

void mask_owner_columns(const Mask *m, int nowners, int **ptr, int **list) {
    int *p = xmalloc(sizeof(int) * (size_t)(nowners + 1)), n = 0, cap = m->nc;
    int *l = xmalloc(sizeof(int) * (size_t)cap);
    uint8_t *seen = xmalloc((size_t)m->nc);
    for (int o = 0; o < nowners; o++) {
        p[o] = n;
        memset(seen, 0, (size_t)m->nc);
        for (int r = mask_owner_row(m->nr, nowners, o); r < mask_owner_row(m->nr, nowners, o + 1); r++)
            for (int c = 0; c < m->nc; c++) seen[c] |= m->m[(size_t)r * m->nc + c];
        for (int c = 0; c < m->nc; c++) {
            if (!seen[c]) continue;
            if (n == cap) l = xrealloc(l, sizeof(int) * (size_t)(cap *= 2));
            l[n++] = c;
        }
    }
    p[nowners] = n;
    free(seen);
    *ptr = p;
    *list = l;
}

// ---- graph statistics on a bitset adjacency (off-diagonal, undirected) ----

typedef struct {
    int n, words;   // words per row
    uint64_t *bits; // n x words
} Graph;

static Graph graph_from_mask(const Mask *m) {
    int n = m->nr;
    Graph g = {n, (n + 63) / 64, NULL};
    g.bits = xcalloc((size_t)n * (size_t)g.words, sizeof(uint64_t));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && (linked(m, i, j) || linked(m, j, i))) g.bits[(size_t)i * g.words + j / 64] |= 1ULL << (j % 64);
    return g;
}

static const uint64_t *graph_row(const Graph *g, int i) { return g->bits + (size_t)i * g->words; }

// Level-synchronous BFS on bitsets: n^2/64 word operations per source whatever the density.
// Adds the distances to every node reached from src (src excluded) to *sum, their count to *pairs.
static void bfs_from(const Graph *g, int src, uint64_t *buf, long *sum, long *pairs) {
    int W = g->words;
    uint64_t *vis = buf, *front = buf + W, *next = buf + 2 * W;
    memset(vis, 0, sizeof(uint64_t) * 2 * (size_t)W);
    vis[src / 64] = front[src / 64] = 1ULL << (src % 64);
    for (long dist = 1;; dist++) {
        memset(next, 0, sizeof(uint64_t) * (size_t)W);
        for (int w = 0; w < W; w++)
            for (uint64_t b = front[w]; b; b &= b - 1) {
                const uint64_t *row = graph_row(g, w * 64 + __builtin_ctzll(b));
                for (int x = 0; x < W; x++) next[x] |= row[x];
            }
        long found = 0;
        for (int w = 0; w < W; w++) {
            next[w] &= ~vis[w];
            vis[w] |= next[w];
            found += __builtin_popcountll(next[w]);
        }
        if (!found) return;
        *sum += dist * found;
        *pairs += found;
        uint64_t *t = front;
        front = next;
        next = t;
    }
}

int mask_path_sources(int n) { return n > MASK_STATS_EXACT_MAX ? MASK_STATS_SOURCES : n; }

// Mean shortest path over reachable ordered pairs; NAN if no pair is reachable.
static double avg_path(const Graph *g) {
    int n = g->n, nsrc = mask_path_sources(n);
    int *src = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) src[i] = i;
    Rng rng;
    rng_seed(&rng, 12345);  // fixed: the sampled sources are part of the statistic's definition
    for (int i = 0; i < nsrc; i++) {  // partial Fisher-Yates: nsrc distinct sources
        int j = i + (int)rng_below(&rng, (uint64_t)(n - i)), t = src[i];
        src[i] = src[j];
        src[j] = t;
    }
    long sum = 0, pairs = 0;
    #pragma omp parallel reduction(+ : sum, pairs)
    {
        uint64_t *buf = xmalloc(sizeof(uint64_t) * 3 * (size_t)g->words);
        #pragma omp for schedule(dynamic, 8)
        for (int i = 0; i < nsrc; i++) bfs_from(g, src[i], buf, &sum, &pairs);
        free(buf);
    }
    free(src);
    return pairs ? (double)sum / (double)pairs : NAN;
}

// Mean local clustering coefficient; nodes of degree < 2 count as 0.
static double clustering(const Graph *g) {
    double total = 0;
    #pragma omp parallel for reduction(+ : total) schedule(dynamic, 16)
    for (int i = 0; i < g->n; i++) {
        const uint64_t *ri = graph_row(g, i);
        long deg = 0, tri2 = 0;  // tri2 counts each triangle at i twice
        for (int w = 0; w < g->words; w++) deg += __builtin_popcountll(ri[w]);
        for (int w = 0; w < g->words; w++)
            for (uint64_t b = ri[w]; b; b &= b - 1) {
                const uint64_t *rj = graph_row(g, w * 64 + __builtin_ctzll(b));
                for (int x = 0; x < g->words; x++) tri2 += __builtin_popcountll(ri[x] & rj[x]);
            }
        if (deg >= 2) total += (double)tri2 / ((double)deg * (double)(deg - 1));
    }
    return g->n ? total / g->n : NAN;
}

MaskStats mask_stats(const Mask *m) {
    MaskStats s = {0};
    s.deg_min = m->nc;
    for (int r = 0; r < m->nr; r++) {
        int d = 0;
        for (int c = 0; c < m->nc; c++) d += m->m[(size_t)r * m->nc + c];
        s.blocks += d;
        if (d < s.deg_min) s.deg_min = d;
        if (d > s.deg_max) s.deg_max = d;
    }
    s.density = (double)s.blocks / ((double)m->nr * m->nc);
    s.deg_mean = (double)s.blocks / m->nr;
    s.avg_path = s.clustering = NAN;
    if (m->nr != m->nc) return s;
    Graph g = graph_from_mask(m);
    s.avg_path = avg_path(&g);
    s.clustering = clustering(&g);
    free(g.bits);
    return s;
}

// All sources at once: bits[c] holds the sources that reach block c so far; a step ORs, into
// each output block r, the sets of the input blocks c that r reads (m[r][c]).
void mask_reach(const Mask *steps, int D, double *share) {
    int n = steps[0].nr, W = (n + 63) / 64;
    uint64_t *cur = xcalloc((size_t)n * W, sizeof(uint64_t)), *next = xmalloc(sizeof(uint64_t) * (size_t)n * W);
    for (int c = 0; c < n; c++) cur[(size_t)c * W + c / 64] = 1ULL << (c % 64);
    for (int k = 0; k < D; k++) {
        if (steps[k].nr != n || steps[k].nc != n) die("internal: mask_reach on layouts of different sizes");
        long total = 0;
        #pragma omp parallel for reduction(+ : total) schedule(static)
        for (int r = 0; r < n; r++) {
            uint64_t *out = next + (size_t)r * W;
            memset(out, 0, sizeof(uint64_t) * (size_t)W);
            for (int c = 0; c < n; c++)
                if (steps[k].m[(size_t)r * n + c])
                    for (int w = 0; w < W; w++) out[w] |= cur[(size_t)c * W + w];
            for (int w = 0; w < W; w++) total += __builtin_popcountll(out[w]);
        }
        share[k] = (double)total / ((double)n * n);
        uint64_t *t = cur;
        cur = next;
        next = t;
    }
    free(cur);
    free(next);
}

// Stored blocks black on white: scaled up to >= 256 px for small layouts, down to <= 4096 px
// (a pixel is black if any of its blocks is stored) for huge ones.
void mask_write_png(const Mask *m, const char *path) {
    int big = m->nr > m->nc ? m->nr : m->nc;
    int up = big < 256 ? (256 + big - 1) / big : 1, down = (big + 4095) / 4096;
    int w = (m->nc * up + down - 1) / down, h = (m->nr * up + down - 1) / down;
    uint8_t *px = xmalloc((size_t)w * (size_t)h);
    memset(px, 255, (size_t)w * (size_t)h);
    for (int r = 0; r < m->nr; r++)
        for (int c = 0; c < m->nc; c++) {
            if (!m->m[(size_t)r * m->nc + c]) continue;
            int y0 = r * up / down, x0 = c * up / down;
            for (int y = y0; y < y0 + up; y++) memset(px + (size_t)y * w + x0, 0, (size_t)up);
        }
    png_write_gray(path, px, w, h);
    free(px);
}
