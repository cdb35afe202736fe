// cmd_export.c: the `export` verb: a checkpoint's weights as named tensors in a safetensors
// file, for PyTorch users (tools/swlstm_torch.py loads it and reproduces `swlstm eval`).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "base/progress.h"
#include "model/model_io.h"
#include "io/safetensors.h"
#include "cli/opts.h"
#include "cli/verbs.h"

#define EXPORT_VERSION "1"

// Optional checkpoint sections holding a second copy of every parameter in the layout of
// "params" (the EMA weights): exported again under the prefix when the checkpoint has one.
static const struct { const char *tag, *prefix; } copies[] = {{"params", ""}, {"ema", "ema."}};
#define NCOPIES (int)(sizeof copies / sizeof copies[0])

static void export_usage(void) {
    printf("usage: swlstm export CKPT --out MODEL.safetensors [--quiet | --progress]\n"
           "Writes the weights of CKPT as named float32 tensors: dense matrices [rows, cols] (y = x W^T),\n"
           "block-sparse ones as their stored blocks NAME [nnzb, bs, bs] with int32 block indices\n"
           "NAME.row_ptr [block rows + 1] and NAME.col_idx [nnzb] (CSR: block k is rows\n"
           "[r*bs, (r+1)*bs) and columns [col_idx[k]*bs, ...) of the dense matrix), biases, layer-norm\n"
           "gains, and the EMA weights as ema.NAME when the checkpoint has them. The metadata holds\n"
           "the config text and the format version. tools/swlstm_torch.py loads the file in PyTorch.\n"
           "On a terminal, progress and an ETA go to stderr unless --quiet; --progress shows them\n"
           "even when stderr is not a terminal.\n");
}

static void add_index(SafeTensors *st, const char *name, const char *what, const int *v, int n) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", name, what);
    st_add(st, full, "I32", 1, (int64_t[]){n}, v);
}

// Every parameter tensor of one copy (fp32 values straight from the checkpoint section);
// the block indices once, with the first copy.
static void add_copy(SafeTensors *st, const Model *m, const char *prefix, const uint8_t *vals) {
    for (int i = 0; i < m->ntensor; i++) {
        const ParamTensor *t = &m->tensor[i];
        const BsMat *w = model_tensor_bsmat(m, t);
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        int64_t shape[3];
        int ndim = w ? 3 : model_tensor_shape(m, t, shape);
        if (w) memcpy(shape, (int64_t[]){w->nnzb, w->bs, w->bs}, sizeof shape);
        st_add(st, name, "F32", ndim, shape, vals + 4 * t->off);
        if (w && !*prefix) {
            add_index(st, t->name, "row_ptr", w->row_ptr, w->nbr + 1);
            add_index(st, t->name, "col_idx", w->col_idx, w->nnzb);
        }
    }
}

static void add_metadata(SafeTensors *st, const Ckpt *c, const char *weights) {
    const CkptSection *cfg = ckpt_find(c, "config", 1);
    char *text = xmalloc(cfg->len + 1), num[32];
    memcpy(text, cfg->data, cfg->len);
    text[cfg->len] = 0;
    st_meta(st, "format", "swlstm");
    st_meta(st, "format_version", EXPORT_VERSION);
    snprintf(num, sizeof num, "%u", c->version);
    st_meta(st, "checkpoint_version", num);
    st_meta(st, "config", text);
    st_meta(st, "weights", weights);
    TrainState ts;
    if (ckpt_train_state(c, &ts)) {
        snprintf(num, sizeof num, "%ld", ts.step);
        st_meta(st, "step", num);
    }
    free(text);
}

// Bytes of CKPT read (not the optimizer's sections): the progress line counts them, then about
// as many written.
static double bytes_read(const Ckpt *c) {
    double n = 0;
    for (int i = 0; i < c->nsec; i++) n += c->sec[i].skipped ? 0 : (double)c->sec[i].len;
    return n;
}

int cmd_export(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL;
    Opts o;
    if (!opts_begin(&o, "export", argc, argv, export_usage)) return 0;
    while (opts_next(&o)) {
        if (opts_progress(&o)) continue;
        if (opts_is(&o, "--out")) out = opts_value(&o);
        else if (!opts_positional(&o, &ckpt)) opts_unknown(&o);
    }
    if (!ckpt || !out) die("export: usage: swlstm export CKPT --out MODEL.safetensors");
    refuse_same_file("export", ckpt, out);
    static const char *const optimizer[] = {"adam_m", "adam_v", "hidden", NULL};
    Progress pr;
    progress_init(&pr, "export", NULL, 2 * file_size(ckpt), o.progress);
    Ckpt c;
    ckpt_read_except(&c, ckpt, optimizer);
    ckpt_warn_damaged(&c);
    pr.total = 2 * bytes_read(&c);
    progress_show(&pr, pr.total / 2);
    Model *m = model_from_ckpt(&c, DEVICE_CPU, PREC_FP32);
    SafeTensors *st = st_new();
    char weights[64] = "";
    for (int k = 0; k < NCOPIES; k++) {
        const CkptSection *s = ckpt_find(&c, copies[k].tag, k == 0);
        if (!s) continue;
        if (s->len != 4 * (uint64_t)m->nparams)
            die("checkpoint '%s': section '%s' holds %" PRIu64 " values, the model has %zu parameters",
                ckpt, copies[k].tag, s->len / 4, m->nparams);
        add_copy(st, m, copies[k].prefix, s->data);
        snprintf(weights + strlen(weights), sizeof weights - strlen(weights), "%s%s", k ? "," : "", copies[k].tag);
    }
    add_metadata(st, &c, weights);
    uint64_t bytes = st_write(st, out);
    progress_done(&pr);
    printf("export: %s -> %s (%zu parameters, weights %s, %" PRIu64 " bytes)\n", ckpt, out, m->nparams, weights, bytes);
    ckpt_close(&c);
    model_free(m);
    return 0;
}
