// bench_probe_ckpt.c: `swlstm bench --probe --checkpoint CKPT`: the probe sweep on a real
// model's features of MR and SST-2. Generated features hide what makes real ones hard (raw
// cell states of a small char-LM: scale 60, correlation eigenvalues spanning 7 decades), so
// these rows come first. Targets (2 CPU cores): MR 10-fold, both penalties, 256-d features:
// 20 s; SST-2, both penalties, 4096-d: 120 s (15 s with --device cuda).
#include <stdio.h>
#include <string.h>
#include "features/feature_extract.h"
#include "probe/bench_probe.h"

static Owned extract(Model *m, const FeatOpts *fo, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    Docs docs;
    docs_read(&docs, path, 1, fo->preprocess, 0);
    if (docs.n == 0) die("bench --probe: no documents in '%s'", path);
    for (int i = 0; i < docs.n; i++)
        if (docs.label[i] != 0 && docs.label[i] != 1)
            die("bench --probe: '%s' line %d: label %d (expected 0 or 1)", path, i + 1, docs.label[i]);
    Owned o = {features_extract(m, &docs, fo), docs.label, docs.n, feat_dim(m, fo)};
    docs.label = NULL;
    docs_free(&docs);
    return o;
}

static double target(const char *task, int d, const ProbeOpts *o) {
    if (o->penalties != 3) return 0;
    if (!strcmp(task, "mr") && d <= 256) return 20;
    if (!strcmp(task, "sst2") && d >= 4096) return o->device == PROBE_CUDA ? 15 : 120;
    return 0;
}

int bench_probe_checkpoint(const char *ckpt, const char *data_dir, const char *device, const char *only, ProbeOpts *o,
                           const char *pen) {
    FeatOpts fo;
    feat_opts_default(&fo);
    fo.device = o->device == PROBE_CUDA ? DEVICE_CUDA : DEVICE_CPU;
    fo.progress = 0;
    double t0 = now_sec();
    Model *m = feat_model_load(ckpt, &fo);
    int mr = !only || !strcmp(only, "mr"), sst = !only || !strcmp(only, "sst2");
    Owned all = mr ? extract(m, &fo, data_dir, "mr.all") : (Owned){0};
    Owned tr = sst ? extract(m, &fo, data_dir, "sst2.train") : (Owned){0}, dv = sst ? extract(m, &fo, data_dir, "sst2.dev") : (Owned){0};
    model_free(m);
    fprintf(stderr, "bench --probe: features of '%s' (%d wide) extracted on %s in %.1f s\n", ckpt, all.d ? all.d : tr.d,
            device, now_sec() - t0);
    o->penalties = probe_parse_penalty(pen ? pen : "both");
    if (mr) {
        ProbeSet a = {all.X, all.y, all.n, all.d};
        bench_probe_row("mr", &a, NULL, o, target("mr", all.d, o));
    }
    if (sst) {
        ProbeSet a = {tr.X, tr.y, tr.n, tr.d}, b = {dv.X, dv.y, dv.n, dv.d};
        bench_probe_row("sst2", &a, &b, o, target("sst2", tr.d, o));
    }
    owned_free(&all);
    owned_free(&tr);
    owned_free(&dv);
    return mr + sst;
}
