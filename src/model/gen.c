// gen.c: the device sampling loop's model side: which models it takes, and layer 0's table.
#include "model/gen.h"
#include <stdlib.h>

static const char *refusal(const Model *m) {
    if (!m->be->gen_create) return "the backend has no device loop";
    if (m->mlstm) return "the mlstm cell runs its steps op by op";
    if (m->L != 1) return "the device loop takes one layer";
    if (m->ln) return "the device loop has no layer norm";
    if (m->bs != 32) return "the device loop takes blocks of 32";
    return NULL;
}

Gen *gen_open(Model *m, const SamplerOpts *so, const char **why_not) {
    const char *no = refusal(m);
    Gen *g = NULL;
    if (!no) {
        const Backend *be = m->be;
        const Layer *L = &m->layer[0];
        g = xcalloc(1, sizeof *g);
        g->m = m;
        g->xtab = be->alloc((size_t)SW_VOCAB * 4 * m->H * sizeof(real));
        input_table_fwd(m, g->xtab);
        GenArgs a = {m->H, &L->wh, m->params + L->off_wh, m->params + L->off_b, g->xtab, m->params + m->off_wo,
                     m->params + m->off_bo, so->temperature, so->top_p, so->top_k};
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

const char *gen_path(const Gen *g) { return g->m->be->gen_path(g->loop); }
