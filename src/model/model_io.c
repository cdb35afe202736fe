// model_io.c: checkpoint sections of a model: "config", "masks", "params" (always fp32,
// whatever the device), "ema" (the weights' moving average, with ema > 0), and for training
// "state", "adam_m", "adam_v", "hidden".
#include "model/model_io.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ops/backend.h"

typedef struct { uint8_t *p; size_t n, cap; } Buf;

static void buf_put(Buf *b, const void *src, size_t n) {
    if (!n) return;
    if (b->n + n > b->cap) b->p = xrealloc(b->p, b->cap = 2 * (b->n + n));
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void buf_i32(Buf *b, int32_t v) { buf_put(b, &v, 4); }

typedef struct { const uint8_t *p; size_t n, at; const char *path, *tag; } Rd;

static void rd_get(Rd *r, void *dst, size_t n) {
    if (n > r->n - r->at) die("checkpoint '%s': section '%s' is malformed (too short)", r->path, r->tag);
    memcpy(dst, r->p + r->at, n);
    r->at += n;
}
static int32_t rd_i32(Rd *r) { int32_t v; rd_get(r, &v, 4); return v; }

static Rd reader(const Ckpt *c, const char *tag) {
    const CkptSection *s = ckpt_find(c, tag, 1);
    return (Rd){s->data, s->len, 0, c->path, tag};
}

// Appends n backend reals to b as fp32.
static void buf_reals(Buf *b, const Backend *be, const real *src, size_t n) {
    real *tmp = xmalloc(n * sizeof(real));
    float *f = xmalloc(n * sizeof(float));
    be->to_host(tmp, src, n * sizeof(real));
    for (size_t i = 0; i < n; i++) f[i] = (float)tmp[i];
    buf_put(b, f, n * sizeof(float));
    free(f);
    free(tmp);
}

// Uploads n fp32 values from (unaligned) checkpoint bytes as backend reals: straight from
// the bytes when reals are fp32 (no host copy of the weights on the way to the device).
static void upload_floats(const Backend *be, real *dst, const uint8_t *bytes, size_t n) {
    if (sizeof(real) == sizeof(float)) {
        be->to_device(dst, bytes, n * sizeof(float));
        return;
    }
    real *tmp = xmalloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, bytes + 4 * i, 4);
        tmp[i] = (real)f;
    }
    be->to_device(dst, tmp, n * sizeof(real));
    free(tmp);
}

static void add_reals(CkptWriter *w, const char *tag, const Backend *be, const real *src, size_t n) {
    Buf b = {0};
    buf_reals(&b, be, src, n);
    ckpt_add(w, tag, b.p, b.n);
    free(b.p);
}

void ckpt_get_reals(const Ckpt *c, const char *tag, const Backend *be, real *dst, size_t n) {
    const CkptSection *s = ckpt_find(c, tag, 1);
    if (s->len != n * sizeof(float))
        die("checkpoint '%s': section '%s' holds %llu values, the model needs %zu",
            c->path, tag, (unsigned long long)(s->len / sizeof(float)), n);
    upload_floats(be, dst, s->data, n);
}

static void put_mask(Buf *b, const Mask *mk) {
    buf_i32(b, mk->nr);
    buf_i32(b, mk->nc);
    buf_put(b, mk->m, (size_t)mk->nr * mk->nc);
}

// Mask k of layer l in the order of model_create_with_masks (absent W_x: an empty mask).
static const Mask *layer_mask(const Model *m, int l, int k) {
    static const Mask none = {0, 0, NULL};
    const Mask *mk = model_layer_mask(m, l, k, NULL, NULL);
    return mk ? mk : &none;
}

// The layer count, then every layer's masks (2 + depth for mlstm layers) back to back.
static void add_masks(CkptWriter *w, const Model *m) {
    Buf b = {0};
    buf_i32(&b, m->L);
    for (int l = 0; l < m->L; l++)
        for (int k = 0; k < 2 + m->D; k++) put_mask(&b, layer_mask(m, l, k));
    ckpt_add(w, "masks", b.p, b.n);
    free(b.p);
}

static void add_state(CkptWriter *w, const TrainState *ts) {
    Buf b = {0};
    int64_t step = ts->step;
    buf_put(&b, &step, 8);
    buf_put(&b, &ts->best_valid_bpc, 8);
    buf_put(&b, &ts->elapsed_sec, 8);
    buf_put(&b, &ts->bytes_seen, 8);
    buf_put(&b, &ts->data_pos, 8);
    buf_put(&b, ts->rng.s, 32);
    buf_put(&b, &ts->data_len, 8);
    buf_put(&b, &ts->data_crc, 4);
    if (ts->has_bytes) buf_put(&b, ts->bytes, sizeof ts->bytes);
    ckpt_add(w, "state", b.p, b.n);
    free(b.p);
}

static void add_hidden(CkptWriter *w, const Model *m, const Acts *a) {
    size_t blk = (size_t)a->B * m->H;
    Buf b = {0};
    buf_i32(&b, a->B);
    for (int l = 0; l < m->L; l++) {
        buf_reals(&b, m->be, a->h[l], blk);
        buf_reals(&b, m->be, a->c[l], blk);
    }
    ckpt_add(w, "hidden", b.p, b.n);
    free(b.p);
}

// Config, masks, weights and their moving average: what every checkpoint holds.
static CkptWriter *model_sections(const Model *m) {
    CkptWriter *w = ckpt_writer_new();
    char *text = config_to_text(&m->cfg);
    ckpt_add(w, "config", text, strlen(text));
    free(text);
    add_masks(w, m);
    add_reals(w, "params", m->be, m->params, m->nparams);
    if (m->ema) add_reals(w, "ema", m->be, m->ema, m->nparams);
    return w;
}

void model_save(const char *path, const Model *m, const TrainState *ts, const real *adam_m,
                const real *adam_v, const Acts *a) {
    CkptWriter *w = model_sections(m);
    if (ts) {
        add_state(w, ts);
        add_reals(w, "adam_m", m->be, adam_m, m->nparams);
        add_reals(w, "adam_v", m->be, adam_v, m->nparams);
        add_hidden(w, m, a);
    }
    ckpt_commit(w, path);
}

static void copy_section(CkptWriter *w, const Ckpt *c, const char *tag) {
    const CkptSection *s = ckpt_find(c, tag, 1);
    ckpt_add(w, tag, s->data, s->len);
}

void model_save_like(const char *path, const Model *m, const Ckpt *c, const real *adam_m, const real *adam_v) {
    CkptWriter *w = model_sections(m);
    TrainState ts;
    if (ckpt_train_state(c, &ts)) {
        ts.best_valid_bpc = INFINITY;  // another model: its fine-tuning keeps its own best
        add_state(w, &ts);
        add_reals(w, "adam_m", m->be, adam_m, m->nparams);
        add_reals(w, "adam_v", m->be, adam_v, m->nparams);
        copy_section(w, c, "hidden");
    }
    ckpt_commit(w, path);
}

void ckpt_config(const Ckpt *c, Config *cfg) {
    const CkptSection *s = ckpt_find(c, "config", 1);
    char *text = xmalloc(s->len + 1);
    memcpy(text, s->data, s->len);
    text[s->len] = 0;
    char where[600];
    snprintf(where, sizeof where, "checkpoint '%s' config", c->path);
    config_defaults(cfg);
    config_from_saved_text(cfg, text, where);
    free(text);
}

int ckpt_masks(const Ckpt *c, Mask *masks, int max_masks) {
    Rd r = reader(c, "masks");
    int L = rd_i32(&r), i = 0;
    if (L < 1 || L > SW_MAX_LAYERS) die("checkpoint '%s': section 'masks' is malformed (%d layers)", c->path, L);
    for (; r.at < r.n; i++) {
        if (i == max_masks) die("checkpoint '%s': section 'masks' holds more than %d masks", c->path, max_masks);
        int nr = rd_i32(&r), nc = rd_i32(&r);
        if (nr < 0 || nc < 0 || (size_t)nr * (size_t)nc > r.n - r.at)
            die("checkpoint '%s': section 'masks' is malformed (mask %d is %d x %d)", c->path, i, nr, nc);
        masks[i] = (Mask){nr, nc, xmalloc((size_t)nr * nc + 1)};
        rd_get(&r, masks[i].m, (size_t)nr * nc);
    }
    return i;
}

// Checks that the stored masks fit the stored config before building anything from them.
static void check_masks(const Ckpt *c, const Config *cfg, const Mask *masks, int n) {
    int nb = cfg->hidden_size / cfg->block_size, per = model_masks_per_layer(cfg);
    if (n != per * cfg->num_layers)
        die("checkpoint '%s': %d masks for %d layers of cell %s (expected %d each)", c->path, n, cfg->num_layers, CFG_NAME(cfg, cell), per);
    for (int i = 0; i < n; i++) {
        int sparse_x = per == 2 && i >= per;  // W_x is stored above layer 0 of LSTM stacks
        int want = i % per != 1 || sparse_x ? nb : 0;
        if (masks[i].nr != want || masks[i].nc != want)
            die("checkpoint '%s': masks of layer %d do not match hidden_size/block_size = %d blocks", c->path, i / per, nb);
    }
}

int ckpt_masks_for(const Ckpt *c, const Config *cfg, Mask *masks) {
    int n = ckpt_masks(c, masks, SW_MAX_MASKS);
    check_masks(c, cfg, masks, n);
    return n;
}

// The model of c's config (cfg, as ckpt_config read it; the overrides go into it) and masks on
// a device, its weights unset; the section `weights` must hold as many values as the model has.
static Model *model_of_ckpt(const Ckpt *c, Config cfg, const char *weights, int device, int precision, int keep_ema) {
    config_validate(&cfg);
    Mask masks[SW_MAX_MASKS];
    int n = ckpt_masks_for(c, &cfg, masks);
    double want = model_param_count(&cfg, masks);  // a hostile config cannot make us allocate more than the weights hold
    uint64_t have = ckpt_find(c, weights, 1)->len / sizeof(float);
    if (want != (double)have)
        die("checkpoint '%s': section '%s' holds %llu values, its config and masks need %.0f", c->path, weights,
            (unsigned long long)have, want);
    if (device != CKPT_CHOICE) cfg.device = (Device)device;
    if (precision != CKPT_CHOICE) cfg.precision = (Precision)precision;
    else if (cfg.device == DEVICE_CPU) cfg.precision = PREC_FP32;
    if (!keep_ema) cfg.ema = 0;
    Model *m = model_create_blank(&cfg, backend_get(cfg.device, cfg.precision), masks);  // no initialisation to overwrite
    for (int i = 0; i < n; i++) mask_free(&masks[i]);
    return m;
}

Model *model_from_ckpt(const Ckpt *c, int device, int precision) {
    Config cfg;
    ckpt_config(c, &cfg);
    Model *m = model_of_ckpt(c, cfg, "params", device, precision, 1);
    model_load_weights(m, c);
    return m;
}

// The CUDA context's warm-up thread (model_load_infer): joined before the model is built, and
// at exit, so that a checkpoint that dies mid-read does not end the process while the thread
// is still inside the CUDA driver.
static pthread_t warm;
static int warming;

static void *warm_cuda(void *unused) {
    backend_cuda_warm();
    return unused;
}

static void warm_join(void) {
    if (warming) pthread_join(warm, NULL);
    warming = 0;
}

static void warm_start(void) {
    static int registered;
    if (!registered) registered = atexit(warm_join) == 0;
    warming = registered && pthread_create(&warm, NULL, warm_cuda, NULL) == 0;
}

Model *model_load_infer(const char *path, int device, int precision, int raw) {
    static const char *const weights_and_training[] = {"params", "ema", "adam_m", "adam_v", "state", "hidden", NULL};
    Ckpt c;
    ckpt_read_except(&c, path, weights_and_training);
    Config cfg;
    ckpt_config(&c, &cfg);
    // The CUDA context is made while the weights are read (start-up of sample, eval, features).
    if ((device == CKPT_CHOICE ? (int)cfg.device : device) == DEVICE_CUDA) warm_start();
    const char *weights = !raw && ckpt_has(&c, "ema") ? "ema" : "params";
    ckpt_read_section(&c, weights);
    warm_join();
    Model *m = model_of_ckpt(&c, cfg, weights, device, precision, 0);
    ckpt_get_reals(&c, weights, m->be, m->params, m->nparams);
    ckpt_warn_damaged(&c);
    ckpt_close(&c);
    return m;
}

void model_load_weights(Model *m, const Ckpt *c) {
    Mask masks[SW_MAX_MASKS];
    int n = ckpt_masks(c, masks, SW_MAX_MASKS), per = 2 + m->D;
    int same = n == per * m->L;
    for (int i = 0; same && i < n; i++) {
        const Mask *mk = layer_mask(m, i / per, i % per);
        size_t bytes = (size_t)mk->nr * mk->nc;
        same = masks[i].nr == mk->nr && masks[i].nc == mk->nc && (!bytes || !memcmp(masks[i].m, mk->m, bytes));
    }
    for (int i = 0; i < n; i++) mask_free(&masks[i]);
    if (!same) die("checkpoint '%s': its masks differ from this model's (check cell, depth, sparsity, mask_seed, hidden_size, num_layers)", c->path);
    ckpt_get_reals(c, "params", m->be, m->params, m->nparams);
    if (!m->ema) return;
    if (ckpt_find(c, "ema", 0)) ckpt_get_reals(c, "ema", m->be, m->ema, m->nparams);
    else m->be->copy(m->ema, m->params, m->nparams * sizeof(real));  // the average starts here
}

int ckpt_train_state(const Ckpt *c, TrainState *ts) {
    if (!ckpt_find(c, "state", 0)) return 0;
    Rd r = reader(c, "state");
    int64_t step;
    rd_get(&r, &step, 8);
    ts->step = (long)step;
    rd_get(&r, &ts->best_valid_bpc, 8);
    rd_get(&r, &ts->elapsed_sec, 8);
    rd_get(&r, &ts->bytes_seen, 8);
    rd_get(&r, &ts->data_pos, 8);
    rd_get(&r, ts->rng.s, 32);
    ts->data_len = 0, ts->data_crc = 0;
    if (r.n > r.at) {  // absent before the corpus check existed
        rd_get(&r, &ts->data_len, 8);
        rd_get(&r, &ts->data_crc, 4);
    }
    ts->has_bytes = r.n > r.at;  // absent before the byte set was recorded
    if (ts->has_bytes) rd_get(&r, ts->bytes, sizeof ts->bytes);
    return 1;
}

void model_load_train_state(const Model *m, const Ckpt *c, TrainState *ts, real *adam_m,
                            real *adam_v, Acts *a, int row0, int rows) {
    if (!ckpt_train_state(c, ts)) die("checkpoint '%s' has no training state (a weights-only file): use init_from instead of --resume", c->path);
    ckpt_get_reals(c, "adam_m", m->be, adam_m, m->nparams);
    ckpt_get_reals(c, "adam_v", m->be, adam_v, m->nparams);
    Rd r = reader(c, "hidden");
    int B = rd_i32(&r);
    size_t blk = (size_t)B * m->H;
    if (B != rows || r.n - r.at != 2 * m->L * blk * sizeof(float))
        die("checkpoint '%s': carried state is for batch_size %d, this run uses %d (keep batch_size to resume)", c->path, B, rows);
    if (row0 < 0 || row0 + a->B > rows) die("internal: rows [%d, %d) of a carried state of %d", row0, row0 + a->B, rows);
    for (int i = 0; i < 2 * m->L; i++)
        upload_floats(m->be, i % 2 ? a->c[i / 2] : a->h[i / 2], r.p + r.at + 4 * (blk * (size_t)i + (size_t)row0 * m->H),
                      (size_t)a->B * m->H);
}
