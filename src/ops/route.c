// route.c: a Route (route.h) in words.
#include <stdio.h>
#include "ops/route.h"

const char *recur_name(RecurPath p) {
    static const char *names[RECUR_NPATHS] = {"steps", "replay", "graph", "dense", "wgmma"};
    return p >= 0 && p < RECUR_NPATHS ? names[p] : "?";
}

const char *loop_name(LoopPlace p) {
    static const char *names[LOOP_NPLACES] = {"steps", "loop, smem", "loop, part smem", "loop, L2"};
    return p >= 0 && p < LOOP_NPLACES ? names[p] : "?";
}

static const char *recur_words(RecurPath p) {
    static const char *words[RECUR_NPATHS] = {
        "per-step ops",
        "per-step ops, each window's steps replayed as one launch per direction",
        "fused engine (a kernel per time step; whole window per launch graph)",
        "engine for dense W_h (a cuBLAS product and the cell per step; whole window per launch graph)",
        "fused engine, its forward and backward steps and weight gradient on Hopper's warpgroup products (a "
        "persistent kernel a time step; whole window per launch graph)"};
    return p >= 0 && p < RECUR_NPATHS ? words[p] : "?";
}

static const char *loop_text(const Route *r, char *buf, size_t n) {
    if (r->place == LOOP_NONE) return snprintf(buf, n, "per-step ops"), buf;
    int k = snprintf(buf, n, "device loop: one cooperative launch of %d CTAs, %d product%s a step; %.1f MB of %s weights ",
                     r->ctas, r->products, r->products > 1 ? "s" : "", r->mb, r->bf16 ? "bf16" : "fp32");
    if (k < 0 || (size_t)k >= n) return buf;
    if (r->place == LOOP_SMEM) snprintf(buf + k, n - k, "held in shared memory");
    else if (r->place == LOOP_L2) snprintf(buf + k, n - k, "read from L2/HBM every step");
    else snprintf(buf + k, n - k, "(%.1f MB held in shared memory, the rest read from L2/HBM every step)", r->held_mb);
    return buf;
}

// Layers that run the same path are said once; else each layer's path in turn.
const char *route_text(const Route *r, char *buf, size_t n) {
    if (r->sampling) return loop_text(r, buf, n);
    int same = 1, k = 0;
    for (int l = 1; l < r->nlayers; l++) same &= r->layer[l] == r->layer[0];
    buf[0] = 0;
    for (int l = 0; l < (same ? 1 : r->nlayers) && k >= 0 && (size_t)k < n; l++) {
        if (same) k += snprintf(buf + k, n - k, "%s", recur_words(r->layer[l]));
        else k += snprintf(buf + k, n - k, "%slayer %d: %s", l ? "; " : "", l, recur_words(r->layer[l]));
    }
    if (r->table && k >= 0 && (size_t)k < n) snprintf(buf + k, n - k, "; layer 0's input projections from a table of the 256 bytes' rows");
    return buf;
}
