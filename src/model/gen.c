// gen.c: the device sampling loop's model side: which models it takes, and layer 0's table.
#include "model/gen.h"
#include "model/mlstm.h"
#include <stdlib.h>

static const char *refusal(const Model *m) {
    if (!m->be->gen_create) return "the backend has no device loop";
    if (m->L != 1) return "the device loop takes one layer";
    if (m->ln && !m->mlstm) return "the device loop has no layer norm for the plain cell";
    if (m->bs != 32) return "the device loop takes blocks of 32";
    return NULL;
}

// The mLSTM's arguments: its internal matrices and norms, and m and a of each byte.
static void input_tables(Model *m, const Layer *L, GenArgs *a, Gen *g) {
    g->xtab = m->be->alloc((size_t)2 * SW_VOCAB * m->H * sizeof(real));
    mlstm_byte_table(m, g->xtab);
    for (int j = 0; j < m->D; j++)
        a->ws[j] = &L->ws[j], a->ws_vals[j] = m->params + L->off_ws[j], a->sln[j] = m->params + L->off_sln[j];
    a->gain = m->params + L->off_g, a->mtab = g->xtab;
}

Gen *gen_open(Model *m, const SamplerOpts *so, const char **why_not) {
    const char *no = refusal(m);
    Gen *g = NULL;
    if (!no) {
        const Backend *be = m->be;
        const Layer *L = &m->layer[0];
        g = xcalloc(1, sizeof *g);
        g->m = m;
        GenArgs a = {.H = m->H, .D = m->D, .wh = &L->wh, .wh_vals = m->params + L->off_wh, .bias = m->params + L->off_b,
                     .wo = m->params + m->off_wo, .bo = m->params + m->off_bo, .temperature = so->temperature,
                     .top_p = so->top_p, .top_k = so->top_k};
        if (m->mlstm) input_tables(m, L, &a, g);
        else {
            g->xtab = be->alloc((size_t)SW_VOCAB * 4 * m->H * sizeof(real));
            input_table_fwd(m, g->xtab);
            a.xtab = g->xtab;
        }
        g->loop = be->gen_create(&a);
        if (!g->loop) {
            gen_close(g);
            g = NULL;
            no = "the backend's loop does not take this shape";
        }
    }
    if (why_not) *why_not = no;
    return g;
}

void gen_close(Gen *g) {
    if (!g) return;
    if (g->loop) g->m->be->gen_free(g->loop);
    g->m->be->free(g->xtab);
    free(g);
}

void gen_draw(Gen *g, const int *feed, int nfeed, int n, Rng *rng, unsigned char *out) {
    g->m->be->gen_run(g->loop, feed, nfeed, n, rng->s, out, NULL);
}

Route gen_route(const Gen *g) {
    Route r = {.sampling = 1, .place = LOOP_NONE};
    if (g) g->m->be->gen_route(g->loop, &r);
    return r;
}
