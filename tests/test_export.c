// test_export.c: `swlstm export` writes a valid safetensors file: header length and padding,
// tensors in name order tiling the data, shapes, block indices and values equal to the
// checkpoint's, the optional EMA copy, metadata, and clear errors.
#ifndef SW_DOUBLE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/model_io.h"
#include "cli/verbs.h"
#include "test.h"

// ---- a reader for the JSON subset of a safetensors header ----

typedef struct {
    char name[64], dtype[8];
    int ndim;
    long long shape[4], off[2];
} Entry;

typedef struct {
    Entry e[64];
    int n;
    char meta[8][2][2048];  // key, value
    int nmeta;
} Header;

static void ws(const char **p) { while (**p == ' ' || **p == '\n') (*p)++; }

static int eat(const char **p, char c) {
    ws(p);
    if (**p != c) return 0;
    (*p)++;
    return 1;
}

static int str(const char **p, char *out, size_t cap) {
    if (!eat(p, '"')) return 0;
    size_t n = 0;
    for (; **p && **p != '"'; (*p)++) {
        char c = **p;
        if (c == '\\') {
            c = *++*p;
            if (c == 'n') c = '\n';
            else if (c == 'u') { c = (char)strtol((char[]){(*p)[1], (*p)[2], (*p)[3], (*p)[4], 0}, NULL, 16); *p += 4; }
        }
        if (n + 1 < cap) out[n++] = c;
    }
    out[n] = 0;
    return eat(p, '"');
}

static int ints(const char **p, long long *v, int max) {
    int n = 0;
    if (!eat(p, '[')) return -1;
    if (eat(p, ']')) return 0;
    do {
        char *end;
        ws(p);
        if (n == max) return -1;
        v[n++] = strtoll(*p, &end, 10);
        if (end == *p) return -1;
        *p = end;
    } while (eat(p, ','));
    return eat(p, ']') ? n : -1;
}

static int entry(const char **p, Entry *e) {
    char key[32];
    if (!eat(p, '{')) return 0;
    do {
        if (!str(p, key, sizeof key) || !eat(p, ':')) return 0;
        if (!strcmp(key, "dtype") && !str(p, e->dtype, sizeof e->dtype)) return 0;
        if (!strcmp(key, "shape") && (e->ndim = ints(p, e->shape, 4)) < 0) return 0;
        if (!strcmp(key, "data_offsets") && ints(p, e->off, 2) != 2) return 0;
    } while (eat(p, ','));
    return eat(p, '}');
}

static int metadata(const char **p, Header *h) {
    if (!eat(p, '{')) return 0;
    if (eat(p, '}')) return 1;
    do {
        char (*kv)[2048] = h->meta[h->nmeta++];
        if (h->nmeta > 8 || !str(p, kv[0], 2048) || !eat(p, ':') || !str(p, kv[1], 2048)) return 0;
    } while (eat(p, ','));
    return eat(p, '}');
}

static int parse_header(const char *p, Header *h) {
    memset(h, 0, sizeof *h);
    if (!eat(&p, '{')) return 0;
    do {
        char key[64];
        if (!str(&p, key, sizeof key) || !eat(&p, ':')) return 0;
        if (!strcmp(key, "__metadata__")) {
            if (!metadata(&p, h)) return 0;
        } else {
            if (h->n == 64 || !entry(&p, &h->e[h->n])) return 0;
            snprintf(h->e[h->n++].name, 64, "%s", key);
        }
    } while (eat(&p, ','));
    return eat(&p, '}');
}

static const Entry *find(const Header *h, const char *name) {
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->e[i].name, name)) return &h->e[i];
    return NULL;
}

static const char *meta(const Header *h, const char *key) {
    for (int i = 0; i < h->nmeta; i++)
        if (!strcmp(h->meta[i][0], key)) return h->meta[i][1];
    return NULL;
}

// ---- fixtures ----

static Model *small_model(void) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32; cfg.block_size = 8; cfg.embed_size = 4; cfg.num_layers = 2; cfg.layer_norm = 1;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ws_2_0.5");
    return model_create(&cfg, backend_cpu());
}

// The checkpoint of m with an extra section of n floats (the EMA copy) when n > 0.
static void save_with_ema(const Model *m, const char *path, const float *ema, size_t n) {
    model_save(path, m, NULL, NULL, NULL, NULL);
    if (!n) return;
    Ckpt c;
    ckpt_read(&c, path);
    CkptWriter *w = ckpt_writer_new();
    for (int i = 0; i < c.nsec; i++) ckpt_add(w, c.sec[i].tag, c.sec[i].data, c.sec[i].len);
    ckpt_add(w, "ema", ema, n * sizeof(float));
    ckpt_close(&c);
    ckpt_commit(w, path);
}

// The verb's one line of stdout goes to /dev/null: the test list stays a list.
static void export_to(const char *ckpt, const char *out) {
    char *argv[] = {"export", (char *)ckpt, "--out", (char *)out, NULL};
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    cmd_export(4, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(null);
    close(saved);
}

static int same_shape(const Entry *e, const char *dtype, int ndim, long long a, long long b, long long c) {
    long long want[3] = {a, b, c};
    if (!e || strcmp(e->dtype, dtype) || e->ndim != ndim) return 0;
    for (int d = 0; d < ndim; d++)
        if (e->shape[d] != want[d]) return 0;
    return 1;
}

// An exported file, read back: its header and the tensors' data (inside file).
typedef struct {
    Header h;
    char *file, *head;
    const uint8_t *data;  // NULL when a check of the layout failed
} Export;

// Exports ckpt to out and reads it back into x (export_done frees it). Checks the layout:
// sorted names, data tiling the file.
static void export_read(const char *ckpt, const char *out, Export *x) {
    Header *h = &x->h;
    char **file = &x->file, **head = &x->head;
    size_t len;
    memset(x, 0, sizeof *x);
    export_to(ckpt, out);
    *file = read_text_file(out, &len, "export");
    unsigned long long hn = 0;
    for (int i = 7; i >= 0; i--) hn = hn << 8 | (unsigned char)(*file)[i];
    CHECK(hn > 2 && 8 + hn <= len && (8 + hn) % 8 == 0);
    *head = strndup(*file + 8, hn);
    size_t json_end = strlen(*head);
    while (json_end && (*head)[json_end - 1] == ' ') json_end--;
    CHECK((*head)[json_end - 1] == '}');  // only spaces pad the header
    CHECK(parse_header(*head, h));
    // Tensors sorted by name, their data tiling [0, end of file) in that order.
    long long at = 0;
    for (int i = 0; i < h->n; i++) {
        CHECK_MSG(i == 0 || strcmp(h->e[i - 1].name, h->e[i].name) < 0, "'%s' before '%s'", h->e[i - 1].name, h->e[i].name);
        CHECK_EQ(h->e[i].off[0], at);
        long long count = 1;
        for (int d = 0; d < h->e[i].ndim; d++) count *= h->e[i].shape[d];
        CHECK_EQ(h->e[i].off[1] - h->e[i].off[0], 4 * count);
        at = h->e[i].off[1];
    }
    CHECK_EQ(8 + hn + (unsigned long long)at, len);
    x->data = (const uint8_t *)*file + 8 + hn;
}

static void export_done(Export *x) { free(x->head); free(x->file); }

TEST(export_writes_safetensors_of_the_checkpoint) {
    Model *m = small_model();
    float *ema = malloc(m->nparams * sizeof(float));
    for (size_t i = 0; i < m->nparams; i++) ema[i] = 0.5f * m->params[i] + 1e-3f * (float)(i % 7);
    const char *ckpt = tmp_path("export.ckpt"), *out = tmp_path("export.safetensors");
    save_with_ema(m, ckpt, ema, m->nparams);
    Export x;
    export_read(ckpt, out, &x);
    CHECK(x.data);
    // Every parameter tensor twice (weights and EMA) and the block indices of 3 sparse matrices.
    CHECK_EQ(x.h.n, 2 * m->ntensor + 6);
    const Layer *L1 = &m->layer[1];
    CHECK(same_shape(find(&x.h, "emb"), "F32", 2, 256, 4, 0));
    CHECK(same_shape(find(&x.h, "l0.wx"), "F32", 2, 128, 4, 0));
    CHECK(same_shape(find(&x.h, "l1.wx"), "F32", 3, L1->wx.nnzb, 8, 8));
    CHECK(same_shape(find(&x.h, "ema.l1.wh"), "F32", 3, L1->wh.nnzb, 8, 8));
    CHECK(same_shape(find(&x.h, "l1.wh.row_ptr"), "I32", 1, 4 * 4 + 1, 0, 0));
    CHECK(same_shape(find(&x.h, "l1.wx.col_idx"), "I32", 1, L1->wx.nnzb, 0, 0));
    CHECK(same_shape(find(&x.h, "l0.ln"), "F32", 1, 128, 0, 0));
    CHECK(same_shape(find(&x.h, "head.w"), "F32", 2, 256, 32, 0));
    CHECK(!find(&x.h, "ema.l1.wh.row_ptr"));
    for (int i = 0; i < m->ntensor; i++) {
        const ParamTensor *t = &m->tensor[i];
        char name[80];
        snprintf(name, sizeof name, "ema.%s", t->name);
        const Entry *e = find(&x.h, t->name), *xe = find(&x.h, name);
        CHECK_MSG(e && xe, "tensor %s missing", t->name);
        CHECK_MSG(!memcmp(x.data + e->off[0], m->params + t->off, 4 * t->n), "values of %s differ", t->name);
        CHECK_MSG(!memcmp(x.data + xe->off[0], ema + t->off, 4 * t->n), "values of %s differ", name);
    }
    const Entry *rp = find(&x.h, "l1.wh.row_ptr"), *ci = find(&x.h, "l1.wx.col_idx");
    CHECK(!memcmp(x.data + rp->off[0], L1->wh.row_ptr, 4 * 17));
    CHECK(!memcmp(x.data + ci->off[0], L1->wx.col_idx, 4 * (size_t)L1->wx.nnzb));
    char *text = config_to_text(&m->cfg);
    CHECK(meta(&x.h, "config") && !strcmp(meta(&x.h, "config"), text));
    CHECK(!strcmp(meta(&x.h, "format"), "swlstm") && !strcmp(meta(&x.h, "format_version"), "1"));
    CHECK(!strcmp(meta(&x.h, "weights"), "params,ema") && !meta(&x.h, "step"));
    free(text); free(ema);
    export_done(&x);
    model_free(m);
}

static void export_arg(void *out) { export_to(tmp_path("plain.ckpt"), out); }
static void export_bad_ema(void *out) { export_to(tmp_path("badema.ckpt"), out); }
static void export_missing(void *out) { export_to(tmp_path("missing.ckpt"), out); }
static void export_no_out(void *ckpt) {
    char *argv[] = {"export", ckpt, NULL};
    cmd_export(2, argv);
}

// An mlstm model: its internal-step matrices are block-sparse too (blocks and indices), its
// input projections and layer norms are plain vectors and matrices.
TEST(export_writes_the_mlstm_layout) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32; cfg.block_size = 8; cfg.embed_size = 4; cfg.num_layers = 2; cfg.depth = 3;
    cfg.cell = CELL_MLSTM;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_1");
    Model *m = model_create(&cfg, backend_cpu());
    const char *ckpt = tmp_path("mlstm.ckpt"), *out = tmp_path("mlstm.safetensors");
    save_with_ema(m, ckpt, NULL, 0);
    Export x;
    export_read(ckpt, out, &x);
    CHECK(x.data);
    // Per layer 3 internal matrices and W_h with their indices.
    CHECK_EQ(x.h.n, m->ntensor + 2 * 2 * 4);
    for (int l = 0; l < 2; l++)
        for (int j = 0; j < 3; j++) {
            const BsMat *w = &m->layer[l].ws[j];
            char name[40], rp[48];
            snprintf(name, sizeof name, "l%d.s%d.w", l, j);
            snprintf(rp, sizeof rp, "%s.row_ptr", name);
            CHECK_MSG(same_shape(find(&x.h, name), "F32", 3, w->nnzb, 8, 8), "%s", name);
            CHECK_MSG(same_shape(find(&x.h, rp), "I32", 1, 4 + 1, 0, 0), "%s", rp);
            CHECK(!memcmp(x.data + find(&x.h, rp)->off[0], w->row_ptr, 4 * 5));
        }
    CHECK(same_shape(find(&x.h, "l0.wx"), "F32", 2, 64, 4, 0));
    CHECK(same_shape(find(&x.h, "l1.wx"), "F32", 2, 64, 32, 0));
    CHECK(same_shape(find(&x.h, "l1.xln"), "F32", 1, 128, 0, 0));
    CHECK(same_shape(find(&x.h, "l1.s2.ln"), "F32", 1, 64, 0, 0));
    export_done(&x);
    model_free(m);
}

TEST(export_errors_are_clear) {
    Model *m = small_model();
    float ema[10] = {0};
    save_with_ema(m, tmp_path("plain.ckpt"), NULL, 0);
    save_with_ema(m, tmp_path("badema.ckpt"), ema, 10);
    CHECK_DIES(export_arg, (void *)tmp_path("nodir/x.safetensors"), "nodir/x.safetensors': cannot create");
    CHECK_DIES(export_bad_ema, (void *)tmp_path("x.safetensors"), "section 'ema' holds 10 values, the model has");
    CHECK_DIES(export_no_out, (void *)tmp_path("plain.ckpt"), "usage: swlstm export CKPT --out");
    CHECK_DIES(export_missing, (void *)tmp_path("x.safetensors"), "missing.ckpt': cannot open");
    model_free(m);
}

// Progress goes to stderr only when asked off a terminal: none by default (stderr is a file
// here) or with --quiet; with --progress a last line with the time and "done".
TEST(export_progress_on_stderr_only_when_asked) {
    Model *m = small_model();
    char ck[512], args[2048];
    snprintf(ck, sizeof ck, "%s", tmp_path("progress.ckpt"));
    save_with_ema(m, ck, m->params, m->nparams);
    model_free(m);
    snprintf(args, sizeof args, "%s --out %s", ck, tmp_path("progress.safetensors"));
    const char *why = progress_off_a_terminal("export", args);
    CHECK_MSG(!why, "%s", why);
}
#endif
