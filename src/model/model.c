// model.c: parameters, masks and initialisation of the block-sparse LSTM language model.
#include "model/model.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "base/rng.h"

uint64_t model_mask_seed(long mask_seed, int layer, int is_input) {
    return (uint64_t)mask_seed + 1000u * (uint64_t)layer + (is_input ? 500u : 0u);
}

uint64_t model_step_mask_seed(long mask_seed, int layer, int step) {
    return (uint64_t)mask_seed + 1000u * (uint64_t)layer + 1u + (uint64_t)step;
}

static int is_mlstm(const Config *cfg) { return cfg->cell == CELL_MLSTM; }

int model_masks_per_layer(const Config *cfg) { return 2 + (is_mlstm(cfg) ? cfg->depth : 0); }

const Mask *model_layer_mask(const Model *m, int l, int k, const BsMat **w, size_t *off) {
    const Layer *L = &m->layer[l];
    const BsMat *wk = k == 0 ? &L->wh : k == 1 ? (L->sparse_x ? &L->wx : NULL) : &L->ws[k - 2];
    if (w) *w = wk;
    if (off) *off = k == 0 ? L->off_wh : k == 1 ? L->off_wx : L->off_ws[k - 2];
    return !wk ? NULL : k == 0 ? &L->mask_h : k == 1 ? &L->mask_x : &L->mask_s[k - 2];
}

// Blocks of mask i (model_create_with_masks's order) of masks, or of a dense mask when NULL.
static double mask_blocks(const Config *cfg, const Mask *masks, int i) {
    double nb = cfg->hidden_size / cfg->block_size;
    return masks ? (double)mask_count(&masks[i]) : nb * nb;
}

double model_param_count(const Config *cfg, const Mask *masks) {
    double H = cfg->hidden_size, G = 4 * H, blk = (double)cfg->block_size * cfg->block_size;
    double n = 256.0 * cfg->embed_size + 256 * H + 256;
    int per = model_masks_per_layer(cfg);
    for (int l = 0; l < cfg->num_layers; l++) {
        int i = per * l;
        double in = l ? H : cfg->embed_size;
        n += 4 * blk * mask_blocks(cfg, masks, i);  // W_h, the 4 gates
        if (is_mlstm(cfg)) {  // projections and their norms, the gates' bias and gains, D internal steps
            n += 2 * H * in + 4 * H + 2 * G;
            for (int j = 0; j < cfg->depth; j++) n += blk * mask_blocks(cfg, masks, i + 2 + j) + 2 * H;
        } else {
            n += l ? 4 * blk * mask_blocks(cfg, masks, i + 1) : G * in;
            n += G * (cfg->layer_norm ? 2 : 1);
        }
    }
    return n;
}

double model_dense_params(const Config *cfg) { return model_param_count(cfg, NULL); }

// Names are printf formats ("l%d.wx").
__attribute__((format(printf, 4, 5))) static size_t add_tensor(Model *m, size_t n, int decay, const char *fmt, ...) {
    char name[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    ParamTensor *t = &m->tensor[m->ntensor++];
    t->name = xstrdup(name);
    t->off = m->nparams;
    t->n = n;
    t->decay = decay;
    m->nparams += n;
    return t->off;
}

static Mask mask_dup(const Mask *mk) {
    size_t n = (size_t)mk->nr * mk->nc;
    return (Mask){mk->nr, mk->nc, memcpy(xmalloc(n + 1), mk->m, n)};
}

static void layout_layer(Model *m, int l, const Mask *mh, const Mask *mx) {
    Layer *L = &m->layer[l];
    size_t G = 4 * (size_t)m->H;
    L->in = l == 0 ? m->E : m->H;
    L->sparse_x = l > 0;
    L->mask_h = mask_dup(mh);
    bsmat_from_mask(&L->wh, &L->mask_h, m->bs, 4);
    if (L->sparse_x) {
        L->mask_x = mask_dup(mx);
        bsmat_from_mask(&L->wx, &L->mask_x, m->bs, 4);
        L->off_wx = add_tensor(m, (size_t)bsmat_nvals(&L->wx), 1, "l%d.wx", l);
    } else {
        L->off_wx = add_tensor(m, G * (size_t)L->in, 1, "l%d.wx", l);
    }
    L->off_wh = add_tensor(m, (size_t)bsmat_nvals(&L->wh), 1, "l%d.wh", l);
    L->off_b = add_tensor(m, G, 0, "l%d.b", l);
    if (m->ln) L->off_g = add_tensor(m, G, 0, "l%d.ln", l);
}

// The input projections come first, so that off_wx starts the layer as for the LSTM layer
// (model_backward reports a layer's gradients final from there).
static void layout_mlstm(Model *m, int l, const Mask *mk) {
    Layer *L = &m->layer[l];
    size_t H = (size_t)m->H;
    L->in = l == 0 ? m->E : m->H;
    L->off_wx = add_tensor(m, 2 * H * (size_t)L->in, 1, "l%d.wx", l);
    L->off_xln = add_tensor(m, 4 * H, 0, "l%d.xln", l);
    for (int j = 0; j < m->D; j++) {
        L->mask_s[j] = mask_dup(&mk[2 + j]);
        bsmat_from_mask(&L->ws[j], &L->mask_s[j], m->bs, 1);
        L->off_ws[j] = add_tensor(m, (size_t)bsmat_nvals(&L->ws[j]), 1, "l%d.s%d.w", l, j);
        L->off_sln[j] = add_tensor(m, 2 * H, 0, "l%d.s%d.ln", l, j);
    }
    L->mask_h = mask_dup(&mk[0]);
    bsmat_from_mask(&L->wh, &L->mask_h, m->bs, 4);
    L->off_wh = add_tensor(m, (size_t)bsmat_nvals(&L->wh), 1, "l%d.wh", l);
    L->off_b = add_tensor(m, 4 * H, 0, "l%d.b", l);
    L->off_g = add_tensor(m, 4 * H, 0, "l%d.ln", l);
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

// init = identity: I in each diagonal block (every mask stores its diagonal), zeros elsewhere;
// stacked gates each get their own I. Draws nothing.
static void init_identity(real *vals, const BsMat *w) {
    int bs = w->bs, nb = w->nbc;
    for (int br = 0; br < w->nbr; br++)
        for (int k = w->row_ptr[br]; k < w->row_ptr[br + 1]; k++)
            for (int i = 0; i < bs * bs; i++) vals[(long)k * bs * bs + i] = w->col_idx[k] == br % nb && i % (bs + 1) == 0;
}

// A recurrent matrix: uniform, or the identity when cfg init = identity.
static void init_recurrent(const Model *m, real *vals, const BsMat *w, Rng *r) {
    if (m->cfg.init == INIT_IDENTITY) init_identity(vals, w);
    else init_bsmat(vals, w, r);
}

static void fill(real *p, size_t n, real v) {
    for (size_t i = 0; i < n; i++) p[i] = v;
}

// Layer-norm gains 1, biases 0 (gates: forget-gate bias 1).
static void init_mlstm(const Model *m, const Layer *L, real *p, Rng *r) {
    size_t H = (size_t)m->H;
    init_uniform(p + L->off_wx, 2 * H * L->in, 1.0 / sqrt((double)L->in), r);
    fill(p + L->off_xln, H, 1);
    fill(p + L->off_xln + 2 * H, H, 1);
    for (int j = 0; j < m->D; j++) {
        init_recurrent(m, p + L->off_ws[j], &L->ws[j], r);
        fill(p + L->off_sln[j], H, 1);
    }
    init_bsmat(p + L->off_wh, &L->wh, r);
    fill(p + L->off_b + H, H, 1);
    fill(p + L->off_g, 4 * H, 1);
}

// Draws every initial value on the host in a fixed order: all backends start identical.
static void init_params(Model *m, real *p) {
    Rng r;
    rng_seed(&r, (uint64_t)m->cfg.seed);
    for (size_t i = 0; i < 256 * (size_t)m->E; i++) p[m->off_emb + i] = (real)rng_normal(&r);
    size_t H = (size_t)m->H;
    for (int l = 0; l < m->L; l++) {
        Layer *L = &m->layer[l];
        if (m->mlstm) {
            init_mlstm(m, L, p, &r);
            continue;
        }
        if (L->sparse_x) init_bsmat(p + L->off_wx, &L->wx, &r);
        else init_uniform(p + L->off_wx, 4 * H * L->in, 1.0 / sqrt((double)L->in), &r);
        init_recurrent(m, p + L->off_wh, &L->wh, &r);
        fill(p + L->off_b + H, H, 1);  // forget gate bias 1
        if (m->ln) fill(p + L->off_g, 4 * H, 1);
    }
    init_uniform(p + m->off_wo, 256 * H, 1.0 / sqrt((double)H), &r);
}

Model *model_create_blank(const Config *cfg, const Backend *be, const Mask *masks) {
    Model *m = xcalloc(1, sizeof *m);
    m->cfg = *cfg;
    m->be = be;
    m->E = cfg->embed_size;
    m->H = cfg->hidden_size;
    m->L = cfg->num_layers;
    m->bs = cfg->block_size;
    m->mlstm = is_mlstm(cfg);
    m->D = m->mlstm ? cfg->depth : 0;
    m->ln = cfg->layer_norm || m->mlstm;
    int per = model_masks_per_layer(cfg);
    m->off_emb = add_tensor(m, 256 * (size_t)m->E, 0, "emb");
    for (int l = 0; l < m->L; l++) {
        if (m->mlstm) layout_mlstm(m, l, &masks[per * l]);
        else layout_layer(m, l, &masks[per * l], &masks[per * l + 1]);
    }
    m->off_wo = add_tensor(m, 256 * (size_t)m->H, 1, "head.w");
    m->off_bo = add_tensor(m, 256, 0, "head.b");
    m->dense_equiv = model_dense_params(cfg);
    for (int l = 0; l < m->L; l++) {
        Layer *L = &m->layer[l];
        be->bsmat_upload(&L->wh);
        if (L->sparse_x) be->bsmat_upload(&L->wx);
        for (int j = 0; j < m->D; j++) be->bsmat_upload(&L->ws[j]);
    }
    m->params = be->alloc(m->nparams * sizeof(real));
    m->grads = be->alloc(m->nparams * sizeof(real));
    be->register_params(m->params, m->nparams);
    if (cfg->ema > 0) m->ema = be->alloc(m->nparams * sizeof(real));
    return m;
}

Model *model_create_with_masks(const Config *cfg, const Backend *be, const Mask *masks) {
    Model *m = model_create_blank(cfg, be, masks);
    real *host = xcalloc(m->nparams, sizeof(real));
    init_params(m, host);
    be->to_device(m->params, host, m->nparams * sizeof(real));
    free(host);
    if (m->ema) be->copy(m->ema, m->params, m->nparams * sizeof(real));
    return m;
}

int model_draw_masks(const Config *cfg, Mask *masks) {
    int n = cfg->hidden_size / cfg->block_size, per = model_masks_per_layer(cfg);
    const char *xdesc = cfg->input_sparsity[0] ? cfg->input_sparsity : cfg->sparsity;
    for (int l = 0; l < cfg->num_layers; l++) {
        Mask *mk = &masks[per * l];
        mk[0] = mask_make(cfg->sparsity, n, n, model_mask_seed(cfg->mask_seed, l, 0));
        mk[1] = l > 0 && !is_mlstm(cfg) ? mask_make(xdesc, n, n, model_mask_seed(cfg->mask_seed, l, 1)) : (Mask){0, 0, NULL};
        for (int j = 0; j < per - 2; j++) mk[2 + j] = mask_make(cfg->sparsity, n, n, model_step_mask_seed(cfg->mask_seed, l, j));
    }
    return per * cfg->num_layers;
}

Model *model_create(const Config *cfg, const Backend *be) {
    int per = model_masks_per_layer(cfg);
    Mask masks[SW_MAX_MASKS];
    model_draw_masks(cfg, masks);
    Model *m = model_create_with_masks(cfg, be, masks);
    for (int i = 0; i < per * cfg->num_layers; i++) mask_free(&masks[i]);
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
        for (int j = 0; j < m->D; j++) {
            m->be->bsmat_release(&L->ws[j]);
            bsmat_free(&L->ws[j]);
            mask_free(&L->mask_s[j]);
        }
    }
    for (int i = 0; i < m->ntensor; i++) free((char *)m->tensor[i].name);
    if (m->ema) m->be->free(m->ema);
    m->be->free(m->params);
    m->be->free(m->grads);
    free(m);
}

const ParamTensor *model_tensor(const Model *m, const char *name) {
    for (int i = 0; i < m->ntensor; i++)
        if (strcmp(m->tensor[i].name, name) == 0) return &m->tensor[i];
    return NULL;
}

const BsMat *model_tensor_bsmat(const Model *m, const ParamTensor *t) {
    for (int l = 0; l < m->L; l++) {
        const Layer *L = &m->layer[l];
        if (t->off == L->off_wh) return &L->wh;
        if (L->sparse_x && t->off == L->off_wx) return &L->wx;
        for (int j = 0; j < m->D; j++)
            if (t->off == L->off_ws[j]) return &L->ws[j];  // the mlstm's internal steps
    }
    return NULL;
}

int model_tensor_shape(const Model *m, const ParamTensor *t, int64_t *shape) {
    shape[0] = (int64_t)t->n;
    shape[1] = 0;
    if (t->off == m->off_emb || t->off == m->off_wo) shape[1] = t->off == m->off_emb ? m->E : m->H;
    for (int l = 0; l < m->L; l++)
        if (t->off == m->layer[l].off_wx) shape[1] = m->layer[l].in;
    if (!shape[1]) return 1;
    shape[0] = (int64_t)t->n / shape[1];
    return 2;
}
