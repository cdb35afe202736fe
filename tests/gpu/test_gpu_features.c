// test_gpu_features.c: `features` on the GPU against the CPU reference: the same checkpoint
// and documents give the same feature rows within fp32 (and bf16) tolerance.
#include <string.h>
#include "features/feature_extract.h"
#include "model/model_io.h"
#include "gpu_check.h"

// A random 2-layer small-world model saved as a checkpoint, and 41 documents of many lengths.
static void fixture(const char **ckpt, const char **docs) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 64; cfg.block_size = 16; cfg.embed_size = 16; cfg.num_layers = 2;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_1");
    Model *m = model_create(&cfg, backend_cpu());
    *ckpt = tmp_path("feat.ckpt");
    model_save(*ckpt, m, NULL, NULL, NULL, NULL);
    model_free(m);
    char text[8192];
    size_t n = 0;
    unsigned long long s = 17;
    for (int i = 0; i < 41; i++) {
        int len = 1 + (int)(test_rand(&s) * 120);
        for (int k = 0; k < len; k++) text[n++] = (char)('a' + (int)(test_rand(&s) * 26));
        text[n++] = '\n';
    }
    *docs = write_file(tmp_path("feat_docs.txt"), text, n);
}

static float *extract(const char *ckpt, const Docs *d, const char *device, const char *prec, char state, int mean, int *dim) {
    FeatOpts o;
    feat_opts_default(&o);
    o.device = config_parse_choice("device", device, "test");
    o.precision = prec_named(prec);
    o.state = mean ? 0 : state;
    o.mean = mean;
    o.batch = 16;
    o.progress = 0;
    Model *m = feat_model_load(ckpt, &o);
    float *f = features_extract(m, d, &o);
    *dim = feat_dim(m, &o);
    model_free(m);
    return f;
}

static void check_features(const char *prec, char state, int mean) {
    const char *ckpt, *path;
    fixture(&ckpt, &path);
    Docs d;
    docs_read(&d, path, 0, 1, 0);
    int dc, dg;
    float *cpu = extract(ckpt, &d, "cpu", "fp32", state, mean, &dc);
    float *gpu = extract(ckpt, &d, "cuda", prec, state, mean, &dg);
    CHECK_EQ(dc, dg);
    double err = rel_l2(gpu, cpu, (size_t)d.n * dc);
    CHECK_MSG(err < tol_for(prec), "%s features (state %c, mean %d): relative L2 error %.3g", prec, state, mean, err);
    free(cpu);
    free(gpu);
    docs_free(&d);
}

TEST(gpu_features_c_fp32_match_cpu) { check_features("fp32", 'c', 0); }
TEST(gpu_features_both_fp32_match_cpu) { check_features("fp32", 'b', 0); }
TEST(gpu_features_mean_fp32_match_cpu) { check_features("fp32", 'c', 1); }
TEST(gpu_features_c_bf16_match_cpu) { check_features("bf16", 'c', 0); }
