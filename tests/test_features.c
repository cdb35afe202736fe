// test_features.c: .npy files, document reading and preprocessing, and feature extraction
// (batch invariance, agreement with a document run alone, --mean, the features verb).
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include "features/docs.h"
#include "features/feature_extract.h"
#include "model/model_io.h"
#include "io/npy.h"
#include "test.h"

TEST(npy_write_read_roundtrip) {
    float data[15];
    for (int i = 0; i < 15; i++) data[i] = (float)i * 0.5f - 3;
    const char *path = tmp_path("a.npy");
    npy_write(path, "<f4", data, 2, (size_t[]){3, 5});
    size_t len;
    uint8_t *buf = (uint8_t *)read_text_file(path, &len, "test");
    NpyHeader h;
    npy_parse_header(&h, buf, len, path);
    CHECK(!strcmp(h.descr, "<f4"));
    CHECK_EQ(h.ndim, 2);
    CHECK_EQ(h.shape[0], 3);
    CHECK_EQ(h.shape[1], 5);
    CHECK_EQ(h.data_off % 64, 0);
    CHECK_EQ(buf[h.data_off - 1], '\n');
    CHECK_EQ(len, h.data_off + sizeof data);
    CHECK(memcmp(buf + h.data_off, data, sizeof data) == 0);
    CHECK(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0);
    CHECK(strstr((char *)buf + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }") == (char *)buf + 10);
    free(buf);
    size_t r, c;
    float *back = npy_read_matrix(path, &r, &c);
    CHECK(r == 3 && c == 5 && memcmp(back, data, sizeof data) == 0);
    free(back);
}

TEST(npy_labels_npy_and_txt) {
    int lab[4] = {0, 1, 1, -7};
    const char *names[2] = {"l.npy", "l.txt"};
    for (int k = 0; k < 2; k++) {
        const char *p = tmp_path(names[k]);
        labels_write(p, lab, 4);
        size_t n;
        int *back = labels_read(p, &n);
        CHECK_EQ(n, 4);
        CHECK(memcmp(back, lab, sizeof lab) == 0);
        free(back);
    }
    size_t len;
    char *txt = read_text_file(tmp_path("l.txt"), &len, "test");
    CHECK(!strcmp(txt, "0\n1\n1\n-7\n"));
    free(txt);
}

static void read_bad_npy(void *path) { size_t r, c; npy_read_matrix(path, &r, &c); }

TEST(npy_rejects_bad_files) {
    const char *p = write_file(tmp_path("bad.npy"), "not numpy", 9);
    CHECK_DIES(read_bad_npy, (void *)p, "bad.npy': not a .npy file");
    float x[2] = {1, 2};
    const char *q = tmp_path("trunc.npy");
    npy_write(q, "<f4", x, 1, (size_t[]){2});
    size_t len;
    char *buf = read_text_file(q, &len, "test");
    write_file(q, buf, len - 3);
    free(buf);
    CHECK_DIES(read_bad_npy, (void *)q, "truncated data");
}

TEST(docs_preprocess_exact_bytes) {
    uint8_t out[64];
    const char *in = "  hello\tw\xe9rld \r";
    size_t n = doc_preprocess(out, (const uint8_t *)in, strlen(in));
    CHECK_EQ(n, 14);
    CHECK(memcmp(out, "\n hello\tw\xe9rld ", 14) == 0);
    n = doc_preprocess(out, (const uint8_t *)"a\nb", 3);
    CHECK(n == 6 && memcmp(out, "\n a b ", 6) == 0);
    n = doc_preprocess(out, (const uint8_t *)" \t ", 3);
    CHECK(n == 3 && memcmp(out, "\n  ", 3) == 0);
}

TEST(docs_read_labelled_and_raw) {
    const char *text = "1 a good film \n0 bad\xff\n-3 \n12\n";
    const char *p = write_file(tmp_path("docs.txt"), text, strlen(text));
    Docs d;
    docs_read(&d, p, 1, 1, 0);
    CHECK_EQ(d.n, 4);
    CHECK(d.label[0] == 1 && d.label[1] == 0 && d.label[2] == -3 && d.label[3] == 12);
    CHECK(doc_len(&d, 0) == 14 && memcmp(doc_bytes(&d, 0), "\n a good film ", 14) == 0);
    CHECK(doc_len(&d, 1) == 7 && memcmp(doc_bytes(&d, 1), "\n bad\xff ", 7) == 0);
    CHECK(doc_len(&d, 2) == 3 && doc_len(&d, 3) == 3);
    docs_free(&d);
    docs_read(&d, p, 0, 0, 2);  // unlabelled, raw, first two lines
    CHECK_EQ(d.n, 2);
    CHECK(d.label == NULL);
    CHECK(doc_len(&d, 0) == 14 && memcmp(doc_bytes(&d, 0), "1 a good film ", 14) == 0);
    docs_free(&d);
}

static void read_labelled(void *path) { Docs d; docs_read(&d, path, 1, 1, 0); }

TEST(docs_bad_label_names_file_and_line) {
    const char *p = write_file(tmp_path("bad.txt"), "1 ok\nx1 not a label\n", 20);
    CHECK_DIES(read_labelled, (void *)p, "bad.txt:2: expected 'LABEL TEXT' with an integer label first, got 'x1 not a label'");
    const char *q = write_file(tmp_path("bad2.txt"), "1 ok\n0 fine\n\n", 13);
    CHECK_DIES(read_labelled, (void *)q, "bad2.txt:3: expected 'LABEL TEXT'");
    const char *r = write_file(tmp_path("bad3.txt"), "99999999999 big\n", 16);
    CHECK_DIES(read_labelled, (void *)r, "bad3.txt:1:");
}

// ---- feature extraction on a tiny random model ----

static Model *tiny_model_of(const char *cell) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32;
    cfg.block_size = 8;
    cfg.embed_size = 16;
    cfg.num_layers = 1;
    cfg.seed = 11;
    cfg.depth = 3;
    cfg.cell = config_parse_choice("cell", cell, "test");
    return model_create(&cfg, backend_cpu());
}

static Model *tiny_model(void) { return tiny_model_of("lstm"); }
// Also used by test_units.c.
Model *test_tiny_model(void) { return tiny_model(); }

// Random documents of lengths 0..40 (with repeats, so sorting has ties), unpreprocessed.
static void random_docs(Docs *d, int n) {
    unsigned long long s = 5;
    d->n = n;
    d->off = xcalloc(n + 1, sizeof(size_t));
    d->bytes = xmalloc(n * 41 + 1);
    d->label = NULL;
    for (int i = 0; i < n; i++) {
        size_t len = i == 3 ? 0 : (size_t)(test_rand(&s) * 20) * 2;
        for (size_t t = 0; t < len; t++) d->bytes[d->off[i] + t] = (uint8_t)(test_rand(&s) * 256);
        d->off[i + 1] = d->off[i] + len;
    }
}

static float *extract(Model *m, const Docs *d, const char *state, int mean, int tanh_c, int batch) {
    FeatOpts o;
    feat_opts_default(&o);
    o.state = state ? state[0] : 'c';
    o.mean = mean;
    o.tanh_c = tanh_c;
    o.batch = batch;
    o.layer = 0;
    o.progress = 0;
    return features_extract(m, d, &o);
}

static void check_batch_invariance(const char *cell) {
    Model *m = tiny_model_of(cell);
    Docs d;
    random_docs(&d, 50);
    const char *states[3] = {"c", "h", "b"};
    for (int k = 0; k < 4; k++) {
        int D = k == 2 ? 64 : 32;
        float *a = extract(m, &d, k < 3 ? states[k] : NULL, k == 3, 0, 1);
        float *b = extract(m, &d, k < 3 ? states[k] : NULL, k == 3, 0, 256);
        float *c = extract(m, &d, k < 3 ? states[k] : NULL, k == 3, 0, 7);
        CHECK_MSG(memcmp(a, b, sizeof(float) * d.n * D) == 0, "%s state %d: batch 1 and 256 differ", cell, k);
        CHECK_MSG(memcmp(a, c, sizeof(float) * d.n * D) == 0, "%s state %d: batch 1 and 7 differ", cell, k);
        free(a); free(b); free(c);
    }
    docs_free(&d);
    model_free(m);
}

TEST(features_batch_size_invariant_bitwise) { check_batch_invariance("lstm"); }
TEST(features_batch_size_invariant_bitwise_mlstm) { check_batch_invariance("mlstm"); }

// Runs one document alone, step by step; returns final c and h and the mean of h.
static void run_alone(Model *m, const Docs *d, int i, float *c, float *h, float *mean) {
    Infer *s = infer_create(m, 1, 0);
    infer_reset(m, s);
    float sum[32] = {0};
    for (size_t t = 0; t < doc_len(d, i); t++) {
        int tok = doc_bytes(d, i)[t];
        infer_step(m, s, &tok, 1, NULL);
        infer_get(m, s, 0, 'h', 1, h);
        for (int j = 0; j < 32; j++) sum[j] += h[j];
    }
    infer_get(m, s, 0, 'c', 1, c);
    infer_get(m, s, 0, 'h', 1, h);
    for (int j = 0; j < 32; j++) mean[j] = doc_len(d, i) ? sum[j] / (float)doc_len(d, i) : 0;
    infer_free(m, s);
}

TEST(features_equal_document_run_alone_in_input_order) {
    Model *m = test_tiny_model();
    Docs d;
    random_docs(&d, 30);
    float *both = extract(m, &d, "both", 0, 0, 256), *mean = extract(m, &d, NULL, 1, 0, 256);
    float *tc = extract(m, &d, "c", 0, 1, 256);
    for (int i = 0; i < d.n; i++) {
        float c[32], h[32], mh[32];
        run_alone(m, &d, i, c, h, mh);
        CHECK_MSG(memcmp(both + i * 64, c, sizeof c) == 0, "doc %d: c differs from a lone run", i);
        CHECK_MSG(memcmp(both + i * 64 + 32, h, sizeof h) == 0, "doc %d: h differs from a lone run", i);
        for (int j = 0; j < 32; j++) {
            CHECK_NEAR(mean[i * 32 + j], mh[j], 1e-6);
            CHECK_NEAR(tc[i * 32 + j], tanhf(c[j]), 1e-7);
        }
    }
    CHECK(doc_len(&d, 3) == 0 && both[3 * 64] == 0 && mean[3 * 32] == 0);
    free(both); free(mean); free(tc);
    docs_free(&d);
    model_free(m);
}

TEST(features_verb_writes_npy_and_labels) {
    Model *m = test_tiny_model();
    const char *ck = tmp_path("tiny.ckpt");
    model_save(ck, m, NULL, NULL, NULL, NULL);
    const char *text = "1 great fun\n0 dull and slow\n1 a joy\n0 bad\n1 good\n0 awful\n1 lovely\n0 no\n";
    const char *in = write_file(tmp_path("in.txt"), text, strlen(text));
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "features %s --input %s --out %s --labels --state both", ck, in, tmp_path("f.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    size_t r, c, n;
    float *F = npy_read_matrix(tmp_path("f.npy"), &r, &c);
    int *lab = labels_read(tmp_path("f.labels.npy"), &n);
    CHECK(r == 8 && c == 64 && n == 8);
    CHECK(lab[0] == 1 && lab[1] == 0 && lab[2] == 1);
    Docs d;
    docs_read(&d, in, 1, 1, 0);
    float *want = extract(m, &d, "both", 0, 0, 2);
    CHECK(memcmp(F, want, sizeof(float) * 8 * 64) == 0);
    snprintf(cmd, sizeof cmd, "features %s --input %s --out %s --labels %s --mean --state h", ck, in, tmp_path("g.npy"), tmp_path("g.txt"));
    CHECK(run_swlstm(cmd, out, sizeof out) != 0 && strstr(out, "--mean replaces the final state"));
    snprintf(cmd, sizeof cmd, "probe %s --train %s --folds 9 --json", ck, in);
    CHECK(run_swlstm(cmd, out, sizeof out) != 0 && strstr(out, "--folds 9: expected 2 to 8"));
    snprintf(cmd, sizeof cmd, "probe %s --train %s --folds 2 --penalty l2 --layer 0 --json", ck, in);
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "\"nonzero\":32,\"folds\":2,") && strstr(out, "\"n_train\":8,\"n_test\":0,"), "output: %s", out);
    free(F); free(lab); free(want);
    docs_free(&d);
    model_free(m);
}
#endif
