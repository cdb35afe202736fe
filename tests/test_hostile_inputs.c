// test_hostile_inputs.c: the bugs fuzzing found (and hardening it prompted), each as an
// exact error; their raw reproducers also replay under tests/fuzz/<target>/crash-*.
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include "ops/backend.h"
#include "model/model_io.h"
#include "io/npy.h"
#include "test.h"

static const char *npy_file(const char *name, const char *descr, const char *shape, const void *data, size_t n) {
    char head[128];
    int h = snprintf(head, sizeof head, "\x93NUMPY\x01%c%c%c{'descr': '%s', 'fortran_order': False, 'shape': %s, }\n",
                     0, 0, 0, descr, shape);
    head[8] = (char)(h - 10);
    char *buf = malloc((size_t)h + n);
    memcpy(buf, head, (size_t)h);
    memcpy(buf + h, data, n);
    write_file(tmp_path(name), buf, (size_t)h + n);
    free(buf);
    return tmp_path(name);
}

static void read_labels(void *path) { size_t n; free(labels_read(path, &n)); }
static void read_matrix(void *path) { size_t r, c; free(npy_read_matrix(path, &r, &c)); }

// Was undefined behaviour: (int) of a double outside int's range.
TEST(hostile_npy_label_outside_int_range) {
    long long big[2] = {1, 1LL << 40};
    CHECK_DIES(read_labels, (void *)npy_file("big.npy", "<i8", "(2,)", big, sizeof big), "element 1 is 1.09951e+12; expected an integer label");
}

// A shape whose byte count wraps around 2^64 must not pass the size check.
TEST(hostile_npy_shape_overflow) {
    float x[4] = {0};
    CHECK_DIES(read_matrix, (void *)npy_file("wrap.npy", "<f4", "(4611686018427387904, 4)", x, sizeof x), "truncated data");
}

// A config claiming a huge model must fail on the params count before anything is allocated.
static void load(void *path) { model_free(ckpt_model(path, DEVICE_CPU, CKPT_CHOICE)); }

TEST(hostile_ckpt_config_larger_than_its_params) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 8, cfg.embed_size = 4, cfg.block_size = 8;
    Model *m = model_create(&cfg, backend_cpu());
    const char *path = tmp_path("small.ckpt");
    model_save(path, m, NULL, NULL, NULL, NULL);
    Ckpt c;
    ckpt_read(&c, path);
    CkptWriter *w = ckpt_writer_new();
    for (int i = 0; i < c.nsec; i++) {
        const CkptSection *s = &c.sec[i];
        if (strcmp(s->tag, "config")) { ckpt_add(w, s->tag, s->data, s->len); continue; }
        cfg.embed_size = 1 << 30;
        char *text = config_to_text(&cfg);
        ckpt_add(w, "config", text, strlen(text));
        free(text);
    }
    ckpt_close(&c);
    ckpt_commit(w, tmp_path("huge.ckpt"));
    model_free(m);
    CHECK_DIES(load, (void *)tmp_path("huge.ckpt"), "section 'params' holds 3744 values, its config and masks need 309237647904");
}
#endif
