// probe_features.c: a real model's features of MR and SST-2 for `swlstm bench --probe
// --checkpoint CKPT`. Generated features hide what makes real ones hard (raw cell states of a
// small char-LM: scale 60, correlation eigenvalues spanning 7 decades), so bench_probe.c times
// these first.
#include <stdio.h>
#include "bench/probe_features.h"
#include "features/feature_extract.h"

static Owned extract(Model *m, const FeatOpts *fo, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    Docs docs;
    docs_read(&docs, path, 1, fo->preprocess, 0);
    if (docs.n == 0) die("bench --probe: no documents in '%s'", path);
    for (int i = 0; i < docs.n; i++)
        if (docs.label[i] != 0 && docs.label[i] != 1)
            die("bench --probe: '%s' line %d: label %d (expected 0 or 1)", path, i + 1, docs.label[i]);
    Owned o = {.X = features_extract(m, &docs, fo), .y = docs.label, .n = docs.n, .d = feat_dim(m, fo)};
    docs.label = NULL;
    docs_free(&docs);
    return o;
}

void ckpt_features(const char *ckpt, const char *data_dir, ProbeDevice device, int want_mr, int want_sst, Owned *mr,
                   Owned *sst_tr, Owned *sst_dev) {
    FeatOpts fo;
    feat_opts_default(&fo);
    fo.device = device == PROBE_CUDA ? DEVICE_CUDA : DEVICE_CPU;
    fo.progress = 0;
    double t0 = now_sec();
    Model *m = feat_model_load(ckpt, &fo);
    *mr = want_mr ? extract(m, &fo, data_dir, "mr.all") : (Owned){0};
    *sst_tr = want_sst ? extract(m, &fo, data_dir, "sst2.train") : (Owned){0};
    *sst_dev = want_sst ? extract(m, &fo, data_dir, "sst2.dev") : (Owned){0};
    model_free(m);
    fprintf(stderr, "bench --probe: features of '%s' (%d wide) extracted on %s in %.1f s\n", ckpt,
            want_mr ? mr->d : sst_tr->d, CFG_NAME(&fo, device), now_sec() - t0);
}
