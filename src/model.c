// model.c: parameters, masks and initialisation of the block-sparse LSTM language model.
#include "model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "rng.h"

uint64_t model_mask_seed(long mask_seed, int layer, int is_input) {
    return (uint64_t)mask_seed + 1000u * (uint64_t)layer + (is_input ? 500u : 0u);
}

double model_dense_params(const Config *cfg) {
    double H = cfg->hidden_size, G = 4 * H, n = 256.0 * cfg->embed_size + 256.0 * H + 256;
    for (int l = 0; l < cfg->num_layers; l++)
        n += G * ((l ? H : cfg->embed_size) + H) + G * (cfg->layer_norm ? 2 : 1);
    return n;
}

static size_t add_tensor(Model *m, const char *name, size_t n, int decay) {
    ParamTensor *t = &m->tensor[m->ntensor++];
    t->name = xstrdup(name);
    t->off = m->nparams;
    t->n = n;
    t->decay = decay;
    m->nparams += n;
    return t->off;
}

static void layout_layer(Model *m, int l, const Mask *mh, const Mask *mx) {
    Layer *L = &m->layer[l];
    char name[32];
    size_t G = 4 * (size_t)m->H;
    L->in = l == 0 ? m->E : m->H;
    L->sparse_x = l > 0;
    L->mask_h = (Mask){mh->nr, mh->nc, memcpy(xmalloc((size_t)mh->nr * mh->nc), mh->m, (size_t)mh->nr * mh->nc)};
    bsmat_from_mask(&L->wh, &L->mask_h, m->bs, 4);
    snprintf(name, sizeof name, "l%d.wx", l);
    if (L->sparse_x) {
        L->mask_x = (Mask){mx->nr, mx->nc, memcpy(xmalloc((size_t)mx->nr * mx->nc), mx->m, (size_t)mx->nr * mx->nc)};
        bsmat_from_mask(&L->wx, &L->mask_x, m->bs, 4);
        L->off_wx = add_tensor(m, name, (size_t)bsmat_nvals(&L->wx), 1);
    } else {
        L->off_wx = add_tensor(m, name, G * (size_t)L->in, 1);
    }
    snprintf(name, sizeof name, "l%d.wh", l);
    L->off_wh = add_tensor(m, name, (size_t)bsmat_nvals(&L->wh), 1);
    snprintf(name, sizeof name, "l%d.b", l);
    L->off_b = add_tensor(m, name, G, 0);
    if (m->ln) {
        snprintf(name, sizeof name, "l%d.ln", l);
        L->off_g = add_tensor(m, name, G, 0);
    }
}

// Uniform in +-1/sqrt(fan_in), where a sparse row's fan-in counts only its stored weights.
static void init_bsmat(real *vals, const BsMat *w, Rng *r) {
    int bs = w->bs;
    for (int br = 0; br < w->nbr; br++) {
        int nblk = w->row_ptr[br + 1] - w->row_ptr[br];
        double a = 1.0 / sqrt((double)nblk * bs);
        for (long k = (long)w->row_ptr[br] * bs * bs; k < (long)w->row_ptr[br + 1] * bs * bs; k++)
            vals[k] = (real)(a * (2.0 * rng_uniform(r) - 1.0));
    }
}

static void init_uniform(real *p, size_t n, double a, Rng *r) {
    for (size_t i = 0; i < n; i++) p[i] = (real)(a * (2.0 * rng_uniform(r) - 1.0));
}

// Draws every initial value on the host in a fixed order: all backends start identical.
static void init_params(Model *m, real *p) {
    Rng r;
    rng_seed(&r, (uint64_t)m->cfg.seed);
    for (size_t i = 0; i < 256 * (size_t)m->E; i++) p[m->off_emb + i] = (real)rng_normal(&r);
    size_t H = (size_t)m->H;
    for (int l = 0; l < m->L; l++) {
        Layer *L = &m->layer[l];
        if (L->sparse_x) init_bsmat(p + L->off_wx, &L->wx, &r);
        else init_uniform(p + L->off_wx, 4 * H * L->in, 1.0 / sqrt((double)L->in), &r);
        init_bsmat(p + L->off_wh, &L->wh, &r);
        for (size_t i = 0; i < H; i++) p[L->off_b + H + i] = 1;  // forget gate bias 1
        if (m->ln)
            for (size_t i = 0; i < 4 * H; i++) p[L->off_g + i] = 1;
    }
    init_uniform(p + m->off_wo, 256 * H, 1.0 / sqrt((double)H), &r);
}

Model *model_create_with_masks(const Config *cfg, const Backend *be, const Mask *masks) {
    Model *m = xcalloc(1, sizeof *m);
    m->cfg = *cfg;
    m->be = be;
    m->E = cfg->embed_size;
    m->H = cfg->hidden_size;
    m->L = cfg->num_layers;
    m->bs = cfg->block_size;
    m->ln = cfg->layer_norm;
    m->off_emb = add_tensor(m, "emb", 256 * (size_t)m->E, 0);
    for (int l = 0; l < m->L; l++) layout_layer(m, l, &masks[2 * l], &masks[2 * l + 1]);
    m->off_wo = add_tensor(m, "head.w", 256 * (size_t)m->H, 1);
    m->off_bo = add_tensor(m, "head.b", 256, 0);
    m->dense_equiv = model_dense_params(cfg);
    for (int l = 0; l < m->L; l++) {
        be->bsmat_upload(&m->layer[l].wh);
        if (m->layer[l].sparse_x) be->bsmat_upload(&m->layer[l].wx);
    }
    real *host = xcalloc(m->nparams, sizeof(real));
    init_params(m, host);
    m->params = be->alloc(m->nparams * sizeof(real));
    m->grads = be->alloc(m->nparams * sizeof(real));
    be->register_params(m->params, m->nparams);
    be->to_device(m->params, host, m->nparams * sizeof(real));
    free(host);
    return m;
}

Model *model_create(const Config *cfg, const Backend *be) {
    int n = cfg->hidden_size / cfg->block_size;
    const char *xdesc = cfg->input_sparsity[0] ? cfg->input_sparsity : cfg->sparsity;
    Mask masks[2 * SW_MAX_LAYERS];
    for (int l = 0; l < cfg->num_layers; l++) {
        masks[2 * l] = mask_make(cfg->sparsity, n, n, model_mask_seed(cfg->mask_seed, l, 0));
        masks[2 * l + 1] = l > 0 ? mask_make(xdesc, n, n, model_mask_seed(cfg->mask_seed, l, 1)) : (Mask){0, 0, NULL};
    }
    Model *m = model_create_with_masks(cfg, be, masks);
    for (int l = 0; l < cfg->num_layers; l++) {
        mask_free(&masks[2 * l]);
        if (l > 0) mask_free(&masks[2 * l + 1]);
    }
    return m;
}

void model_free(Model *m) {
    if (!m) return;
    for (int l = 0; l < m->L; l++) {
        Layer *L = &m->layer[l];
        m->be->bsmat_release(&L->wh);
        bsmat_free(&L->wh);
        mask_free(&L->mask_h);
        if (L->sparse_x) {
            m->be->bsmat_release(&L->wx);
            bsmat_free(&L->wx);
            mask_free(&L->mask_x);
        }
    }
    for (int i = 0; i < m->ntensor; i++) free((char *)m->tensor[i].name);
    m->be->free(m->params);
    m->be->free(m->grads);
    free(m);
}

const ParamTensor *model_tensor(const Model *m, const char *name) {
    for (int i = 0; i < m->ntensor; i++)
        if (strcmp(m->tensor[i].name, name) == 0) return &m->tensor[i];
    return NULL;
}
