// swlstm_api.c: the C ABI of libswlstm.so (swlstm_api.h) over src/sparse, src/ops (the CPU
// products), src/model (checkpoints) and cuda/api (the device products). The library's own
// errors die(); here a die_hook jumps back to the call, which returns its message instead.
#include "api/swlstm_api.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api_cuda.h"
#include "model/model_io.h"
#include "ops/backend.h"

#define SWLSTM_ABI_VERSION 3

static _Thread_local char last_error[2048];
static _Thread_local jmp_buf *catch_at;

static void api_die_hook(void) {
    if (catch_at) longjmp(*catch_at, 1);
}

static int fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

// Runs stmt with die() turned into SWLSTM_ERR_FAILED and its message (the return of the
// enclosing function). stmt must not leave automatic variables changed.
#define GUARDED(stmt)                                                          \
    do {                                                                       \
        jmp_buf jb_;                                                           \
        jmp_buf *prev_ = catch_at;                                             \
        die_hook = api_die_hook;                                               \
        catch_at = &jb_;                                                       \
        if (setjmp(jb_)) {                                                     \
            catch_at = prev_;                                                  \
            return fail(SWLSTM_ERR_FAILED, "%s", die_message());               \
        }                                                                      \
        stmt;                                                                  \
        catch_at = prev_;                                                      \
    } while (0)

const char *swlstm_last_error(void) { return last_error; }
int swlstm_abi_version(void) { return SWLSTM_ABI_VERSION; }

int swlstm_has_cuda(void) {
#ifdef SW_CUDA
    return 1;
#else
    return 0;
#endif
}

// ---- masks ----
int swlstm_mask(const char *desc, int nr, int nc, uint64_t seed, uint8_t *out) {
    char err[512];
    if (!desc || !out || nr <= 0 || nc <= 0) return fail(SWLSTM_ERR_ARG, "mask: %d x %d blocks: expected positive sizes", nr, nc);
    if (mask_check_desc(desc, nr, nc, err, sizeof err)) return fail(SWLSTM_ERR_ARG, "mask: %s", err);
    Mask m;
    GUARDED(m = mask_make(desc, nr, nc, seed));
    memcpy(out, m.m, (size_t)nr * nc);
    mask_free(&m);
    return SWLSTM_OK;
}

int swlstm_mask_stats_of(const uint8_t *m, int nr, int nc, swlstm_mask_stats *out) {
    if (!m || !out || nr <= 0 || nc <= 0) return fail(SWLSTM_ERR_ARG, "mask_stats: %d x %d blocks: expected positive sizes", nr, nc);
    Mask mk = {nr, nc, (uint8_t *)m};
    MaskStats s;
    GUARDED(s = mask_stats(&mk));
    *out = (swlstm_mask_stats){s.blocks, s.density, s.deg_min, s.deg_max, s.deg_mean, s.avg_path, s.clustering};
    return SWLSTM_OK;
}

// ---- layouts ----
int swlstm_layout_new(const uint8_t *m, int nr, int nc, int bs, swlstm_layout **out) {
    if (!m || !out) return fail(SWLSTM_ERR_ARG, "layout: a NULL mask or result pointer");
    *out = NULL;
    if (bs != 8 && bs != 16 && bs != 32) return fail(SWLSTM_ERR_ARG, "layout: block %d: expected 8, 16 or 32", bs);
    if (nr <= 0 || nc <= 0 || (long)nr * bs > (1L << 30) / bs || (long)nc * bs > (1L << 30) / bs)
        return fail(SWLSTM_ERR_ARG, "layout: %d x %d blocks of %d: expected positive sizes within 2^30 values", nr, nc, bs);
    for (int r = 0; r < nr; r++) {
        int any = 0;
        for (int c = 0; c < nc; c++) any |= m[(long)r * nc + c];
        if (!any) return fail(SWLSTM_ERR_ARG, "layout: block row %d stores no block (every block row and column needs one)", r);
    }
    for (int c = 0; c < nc; c++) {
        int any = 0;
        for (int r = 0; r < nr; r++) any |= m[(long)r * nc + c];
        if (!any) return fail(SWLSTM_ERR_ARG, "layout: block column %d stores no block (every block row and column needs one)", c);
    }
    BsMat *w = calloc(1, sizeof *w);
    if (!w) return fail(SWLSTM_ERR_FAILED, "layout: out of host memory");
    Mask mk = {nr, nc, (uint8_t *)m};
    GUARDED(bsmat_from_mask(w, &mk, bs, 1));
    *out = w;
    return SWLSTM_OK;
}

void swlstm_layout_free(swlstm_layout *l) {
    if (!l) return;
#ifdef SW_CUDA
    if (l->dev) api_cuda_release(l);
#endif
    bsmat_free(l);
    free(l);
}

void swlstm_layout_shape(const swlstm_layout *l, int *rows, int *cols, int *bs, int *nnzb) {
    *rows = l->rows, *cols = l->cols, *bs = l->bs, *nnzb = l->nnzb;
}

void swlstm_layout_indices(const swlstm_layout *l, int32_t *row_ptr, int32_t *col_idx) {
    memcpy(row_ptr, l->row_ptr, sizeof(int) * ((size_t)l->nbr + 1));
    memcpy(col_idx, l->col_idx, sizeof(int) * (size_t)l->nnzb);
}

// ---- products ----
static int product(int op, const swlstm_layout *l, int device, int dtype, int out_dtype, void *out, const void *a,
                   const void *b, int N, int acc, void *stream) {
    static const char *names[] = {"fwd", "bwd_data", "bwd_weight"};
    if (!l || !out || !a || !b) return fail(SWLSTM_ERR_ARG, "%s: a NULL layout or pointer", names[op]);
    if (N < 0) return fail(SWLSTM_ERR_ARG, "%s: %d rows: expected >= 0", names[op], N);
    if (dtype != SWLSTM_F32 && dtype != SWLSTM_BF16) return fail(SWLSTM_ERR_ARG, "%s: dtype %d: expected f32 (0) or bf16 (1)", names[op], dtype);
    if (out_dtype != SWLSTM_F32 && out_dtype != SWLSTM_BF16)
        return fail(SWLSTM_ERR_ARG, "%s: out_dtype %d: expected f32 (0) or bf16 (1)", names[op], out_dtype);
    if (device == SWLSTM_CPU) {
        if (dtype != SWLSTM_F32 || out_dtype != SWLSTM_F32)
            return fail(SWLSTM_ERR_ARG, "%s: the CPU products take and write float32 only", names[op]);
        const Backend *be = backend_cpu();
        BsMat *w = (BsMat *)l;
        if (op == 0) GUARDED(be->bsmm_fwd(out, a, w, b, N, acc));
        else if (op == 1) GUARDED(be->bsmm_bwd_data(out, a, w, b, N, acc));
        else GUARDED(be->bsmm_bwd_weight(out, a, b, w, N));
        return SWLSTM_OK;
    }
    if (device < SWLSTM_CUDA) return fail(SWLSTM_ERR_ARG, "%s: device %d: expected cpu (0) or cuda (1 + ordinal)", names[op], device);
#ifdef SW_CUDA
    BsMat *w = (BsMat *)l;
    GUARDED(api_cuda_init(device - SWLSTM_CUDA));
    if (!w->dev) GUARDED(api_cuda_upload(w));
    GUARDED(api_cuda_product(op, dtype == SWLSTM_BF16, out, out_dtype == SWLSTM_BF16, a, b, w, N, acc, stream));
    return SWLSTM_OK;
#else
    return fail(SWLSTM_ERR_NO_CUDA, "%s: this libswlstm.so was built without CUDA (make python on a machine with nvcc)", names[op]);
#endif
}

int swlstm_fwd(const swlstm_layout *l, int device, int dtype, int out_dtype, void *y, const void *x,
               const void *vals, int N, int accumulate, void *stream) {
    return product(0, l, device, dtype, out_dtype, y, x, vals, N, accumulate, stream);
}
int swlstm_bwd_data(const swlstm_layout *l, int device, int dtype, int out_dtype, void *dx, const void *dy,
                    const void *vals, int N, int accumulate, void *stream) {
    return product(1, l, device, dtype, out_dtype, dx, dy, vals, N, accumulate, stream);
}
int swlstm_bwd_weight(const swlstm_layout *l, int device, int dtype, float *dvals, const void *dy, const void *x,
                      int N, void *stream) {
    return product(2, l, device, dtype, SWLSTM_F32, dvals, dy, x, N, 1, stream);
}

// ---- checkpoints ----
struct swlstm_ckpt {
    Model *m;
    char *config, *config_json;
    int64_t step;
};

static void ckpt_fill(swlstm_ckpt *c, const char *path) {
    Ckpt k;
    ckpt_read(&k, path);
    const CkptSection *cfg = ckpt_find(&k, "config", 1);
    c->config = xmalloc(cfg->len + 1);
    memcpy(c->config, cfg->data, cfg->len);
    c->config[cfg->len] = 0;
    Config parsed;
    ckpt_config(&k, &parsed);
    c->config_json = config_to_json(&parsed);
    TrainState ts;
    c->step = ckpt_train_state(&k, &ts) ? ts.step : -1;
    c->m = model_from_ckpt(&k, DEVICE_CPU, PREC_FP32);
    ckpt_close(&k);
}

int swlstm_ckpt_open(const char *path, swlstm_ckpt **out) {
    if (!path || !out) return fail(SWLSTM_ERR_ARG, "ckpt_open: a NULL path or result pointer");
    *out = NULL;
    swlstm_ckpt *c = calloc(1, sizeof *c);
    if (!c) return fail(SWLSTM_ERR_FAILED, "ckpt_open: out of host memory");
    GUARDED(ckpt_fill(c, path));
    *out = c;
    return SWLSTM_OK;
}

void swlstm_ckpt_close(swlstm_ckpt *c) {
    if (!c) return;
    if (c->m) model_free(c->m);
    free(c->config);
    free(c->config_json);
    free(c);
}

const char *swlstm_ckpt_config(const swlstm_ckpt *c) { return c->config; }
const char *swlstm_ckpt_config_json(const swlstm_ckpt *c) { return c->config_json; }
int64_t swlstm_ckpt_step(const swlstm_ckpt *c) { return c->step; }
int swlstm_ckpt_ntensors(const swlstm_ckpt *c) { return c->m->ntensor; }

int swlstm_ckpt_tensor(const swlstm_ckpt *c, int i, const char **name, int *ndim, int64_t *shape,
                       const float **values, const float **ema, const swlstm_layout **layout) {
    const Model *m = c->m;
    if (i < 0 || i >= m->ntensor) return fail(SWLSTM_ERR_ARG, "ckpt_tensor: index %d: the model has %d tensors", i, m->ntensor);
    const ParamTensor *t = &m->tensor[i];
    const BsMat *w = model_tensor_bsmat(m, t);
    *name = t->name;
    *layout = w;
    if (w) *ndim = 3, shape[0] = w->nnzb, shape[1] = shape[2] = w->bs;
    else *ndim = model_tensor_shape(m, t, shape);
    *values = m->params + t->off;
    *ema = m->ema ? m->ema + t->off : NULL;
    return SWLSTM_OK;
}
