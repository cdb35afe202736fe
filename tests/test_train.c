// test_train.c: the train/eval/sample/info verbs end to end on a tiny model: bit-exact
// resume, checkpoint round trip, signals, NaN handling, determinism and bad inputs.
#ifndef SW_DOUBLE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "io/ckpt.h"
#include "model/byte_set.h"
#include "model/model_io.h"
#include "test.h"

// A 40 kB corpus: Tiny Shakespeare's start when present, else generated English-like text.
static const char *corpus(void) {
    static char path[512];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", tmp_path("corpus.txt"));
    char *buf = malloc(40000);
    const char *src = shared_data("tinyshakespeare.txt");
    FILE *f = src ? fopen(src, "rb") : NULL;
    size_t got = f ? fread(buf, 1, 40000, f) : 0;
    if (f) fclose(f);
    unsigned long long s = 5;
    static const char *words[] = {"the ", "king ", "and ", "queen ", "of ", "all ", "men\n", "speak ", "thou "};
    for (size_t i = got, w = 0; i < 40000; i++, w++) buf[i] = words[(int)(test_rand(&s) * 9)][0] + (char)(w % 3 == 0);
    write_file(path, buf, 40000);
    free(buf);
    return path;
}

static const char *tiny_cfg(void) {
    static char path[512];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", tmp_path("tiny.cfg"));
    char text[2048];
    int n = snprintf(text, sizeof text,
                     "data = %s\nsplit = 0.8,0.1,0.1\nhidden_size = 32\nembed_size = 8\nblock_size = 8\n"
                     "num_layers = 2\nsparsity = ba_1\nbatch_size = 4\nseq_length = 16\nmax_steps = 8\n"
                     "learning_rate = 1e-2\nlr_schedule = cosine\nwarmup_steps = 2\nlog_every = 1\n"
                     "eval_every = 4\neval_bytes = 2000\nthreads = 1\n", corpus());
    write_file(path, text, (size_t)n);
    return path;
}

static int train(const char *out_dir, const char *extra, char *log, size_t loglen) {
    char args[4096];
    snprintf(args, sizeof args, "train %s --out_dir=%s %s", tiny_cfg(), out_dir, extra);
    return run_swlstm(args, log, loglen);
}

// 8 steps against 3 + resume + 5: the same weights, moments, carried state (and average).
static void check_resume(const char *name, const char *opts, int ema) {
    char log[8192], d1[512], d2[512], p1[600], p2[600], extra[1200];
    snprintf(d1, sizeof d1, "%s-full", tmp_path(name));
    snprintf(d2, sizeof d2, "%s-split", tmp_path(name));
    CHECK_EQ(train(d1, opts, log, sizeof log), 0);
    snprintf(extra, sizeof extra, "%s --stop-after 3", opts);
    CHECK_EQ(train(d2, extra, log, sizeof log), 0);
    snprintf(p2, sizeof p2, "%s/latest.ckpt", d2);
    snprintf(extra, sizeof extra, "%s --resume %s", opts, p2);
    CHECK_EQ(train(d2, extra, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "resumed from") != NULL, "no resume message: %s", log);
    snprintf(p1, sizeof p1, "%s/latest.ckpt", d1);
    CHECK(ckpt_same_section(p1, p2, "params"));
    CHECK(ckpt_same_section(p1, p2, "adam_m"));
    CHECK(ckpt_same_section(p1, p2, "adam_v"));
    CHECK(ckpt_same_section(p1, p2, "hidden"));
    CHECK(ckpt_same_section(p1, p2, "masks"));
    if (ema) CHECK(ckpt_same_section(p1, p2, "ema"));
}

TEST(train_resume_is_bit_exact) { check_resume("lstm", "", 0); }
TEST(train_mlstm_ema_resume_is_bit_exact) { check_resume("mlstm", "--cell=mlstm --depth=3 --ema=0.99 --init=identity", 1); }

// The average differs from the trained weights, and eval uses it unless --raw-weights.
TEST(eval_uses_ema_unless_raw_weights) {
    char log[4096], dir[512], args[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("emaeval"));
    CHECK_EQ(train(dir, "--cell=mlstm --depth=2 --ema=0.9 --max_steps=4 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    double bpc[2];
    for (int raw = 0; raw < 2; raw++) {
        snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --json%s", dir, raw ? " --raw-weights" : "");
        CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
        const char *p = strstr(log, "\"bpc\": ");
        CHECK(p);
        bpc[raw] = atof(p + 7);
    }
    CHECK_MSG(bpc[0] != bpc[1] && bpc[0] > 3 && bpc[1] > 3 && bpc[0] < 8.5, "ema %g, raw %g", bpc[0], bpc[1]);
    snprintf(args, sizeof args, "sample %s/latest.ckpt -n 20 -s 1 --raw-weights", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    snprintf(args, sizeof args, "info %s/latest.ckpt", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "cell mlstm (depth 2)") && strstr(log, "layer 1 W_h1:") && strstr(log, "ema(") &&
              strstr(log, "layer 1: units reachable within 1..2 internal step(s):"), "%s", log);
}

// --resume on a corpus that grew, or changed in place, is refused with the sizes and
// fingerprints; on the same corpus it continues.
TEST(train_resume_refuses_a_changed_corpus) {
    char log[8192], dir[300], extra[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("corpus-change"));
    size_t n;
    char *text = read_text_file(corpus(), &n, "test corpus");
    const char *copy = write_file(tmp_path("corpus-copy.txt"), text, n);
    snprintf(extra, sizeof extra, "--data=%s --stop-after 2", copy);
    CHECK_EQ(train(dir, extra, log, sizeof log), 0);
    snprintf(extra, sizeof extra, "--data=%s --resume %s/latest.ckpt --stop-after 3", copy, dir);
    write_file(copy, text, n - 1);
    int rc = train(dir, extra, log, sizeof log);
    CHECK_MSG(rc == 1 && strstr(log, "the checkpoint was trained on 40000 bytes of data") && strstr(log, "has 39999 bytes"), "%s", log);
    text[n / 2] ^= 1;
    write_file(copy, text, n);
    rc = train(dir, extra, log, sizeof log);
    CHECK_MSG(rc == 1 && strstr(log, "has 40000 bytes (fingerprint"), "%s", log);
    text[n / 2] ^= 1;
    write_file(copy, text, n);
    free(text);
    CHECK_EQ(train(dir, extra, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "resumed from") != NULL, "%s", log);
}

// --resume without --data reads the checkpoint's corpus, not the config file's (the quick
// start trains with --data; the README's resume command gives none); a missing data file's
// error says how to get one.
TEST(train_resume_takes_the_checkpoints_data_path) {
    char log[8192], dir[300], extra[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("resume-data"));
    size_t n;
    char *text = read_text_file(corpus(), &n, "test corpus");
    const char *other = write_file(tmp_path("corpus-other.txt"), text, n / 2);
    free(text);
    snprintf(extra, sizeof extra, "--data=%s --stop-after 2", other);
    CHECK_EQ(train(dir, extra, log, sizeof log), 0);
    snprintf(extra, sizeof extra, "--resume %s/latest.ckpt --stop-after 3", dir);
    CHECK_EQ(train(dir, extra, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "--resume: data = ") && strstr(log, "corpus-other.txt (the checkpoint's corpus") &&
              strstr(log, "resumed from"), "%s", log);
    snprintf(extra, sizeof extra, "--data=%s --max_steps=2", tmp_path("no-corpus.txt"));
    CHECK_EQ(train(dir, extra, log, sizeof log), 1);
    CHECK_MSG(strstr(log, "no-corpus.txt': cannot open: No such file or directory (bash data/get_corpus.sh puts"), "%s", log);
}

// A save that fails (here best.ckpt's rename: a directory is in the way) stops training with
// one line naming the file and the cause; latest.ckpt, saved just before, loads and resumes.
TEST(train_stops_cleanly_when_a_save_fails) {
    char log[8192], dir[300], blocker[400], extra[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("save-fails"));
    snprintf(blocker, sizeof blocker, "%s/best.ckpt/x", dir);
    CHECK(mkdir_p(blocker) == 0);
    int rc = train(dir, "", log, sizeof log);
    CHECK_MSG(rc == 1 && strstr(log, "best.ckpt': rename failed: ") && strstr(log, "(any previous file there is unchanged)"), "%s", log);
    CHECK_MSG(strstr(log, "step 4/8"), "training did not reach the first evaluation: %s", log);
    snprintf(extra, sizeof extra, "--resume %s/latest.ckpt --eval_every=0 --stop-after 5", dir);
    CHECK_EQ(train(dir, extra, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "at step 4"), "%s", log);
}

TEST(train_writes_log_best_and_info) {
    char log[16384], dir[512], args[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("info"));
    CHECK_EQ(train(dir, "", log, sizeof log), 0);
    CHECK(strstr(log, "parameters:") && strstr(log, "dense model of this shape"));
    // every bpc names its protocol and bytes (eval_bytes = 2000 of the 4000-byte valid split)
    CHECK_MSG(strstr(log, "| valid bpc ") && strstr(log, " over 1996 bytes (protocol stripes: 4 from zero states) |") &&
              strstr(log, "(protocol stripes over the first 2000 bytes of the valid split); checkpoints in"), "%s", log);
    snprintf(args, sizeof args, "info %s/best.ckpt", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "format version 1") && strstr(log, "step 8") && strstr(log, "hidden_size = 32"), "%s", log);
    CHECK_MSG(strstr(log, " (protocol stripes over the first 2000 bytes of the valid split)\n") &&
              strstr(log, "byte values in the corpus: "), "%s", log);
    // eval_bytes past the valid split: the bytes scored are the split's, as train says
    char big[600];
    snprintf(big, sizeof big, "%s-big", dir);
    CHECK_EQ(train(big, "--eval_bytes=100000 --max_steps=4", log, sizeof log), 0);
    CHECK_MSG(strstr(log, "(protocol stripes over the first 4000 bytes of the valid split); checkpoints in"), "%s", log);
    snprintf(args, sizeof args, "info %s/best.ckpt", big);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, " (protocol stripes over the first 4000 bytes of the valid split)\n"), "%s", log);
    snprintf(args, sizeof args, "%s/log.jsonl", dir);
    size_t n;
    char *jl = read_text_file(args, &n, "log");
    CHECK(strstr(jl, "\"type\":\"step\",\"step\":8") && strstr(jl, "\"type\":\"eval\""));
    free(jl);
}

// info names the path CUDA would take for a CPU checkpoint: the mlstm's per-step ops replayed
// a window at a time, or issued one by one with engine = steps.
TEST(info_names_the_mlstm_path) {
    char log[16384], dir[512], args[1024];
    const char *engines[] = {"auto", "steps"},
               *want[] = {"\nrecurrent path on cuda (train --device cuda): per-step ops, each window's steps replayed",
                          "\nrecurrent path on cuda (train --device cuda): per-step ops; layer 0's"};
    for (int i = 0; i < 2; i++) {
        snprintf(dir, sizeof dir, "%s-%s", tmp_path("info-mlstm"), engines[i]);
        snprintf(args, sizeof args, "--cell=mlstm --depth=2 --engine=%s --max_steps=1 --warmup_steps=0 --eval_every=0",
                 engines[i]);
        CHECK_EQ(train(dir, args, log, sizeof log), 0);
        snprintf(args, sizeof args, "info %s/latest.ckpt", dir);
        CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
        CHECK_MSG(strstr(log, want[i]) != NULL, "engine %s: %s", engines[i], log);
    }
}

// info names the path of the checkpoint's own device first, in the words training's log used
// (a CPU checkpoint runs per-step ops, not CUDA's engine), then where CUDA would take it.
TEST(info_names_the_path_of_the_checkpoints_device) {
    char log[16384], dir[512], args[1024], path[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("info-route"));
    CHECK_EQ(train(dir, "--block_size=32 --hidden_size=128 --sparsity=ba_1 --max_steps=1 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    const char *p = strstr(log, "  recurrent path: ");
    CHECK_MSG(p && strchr(p, '\n'), "%s", log);
    p += 18;
    int len = (int)(strchr(p, '\n') - p);
    CHECK_MSG(!strncmp(p, "per-step ops;", 13), "%.*s", len, p);
    snprintf(path, sizeof path, "\nrecurrent path on cpu: %.*s\n", len, p);
    snprintf(args, sizeof args, "info %s/latest.ckpt", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, path) && strstr(log, "\nrecurrent path on cuda (train --device cuda): fused engine"),
              "want '%s' then CUDA's engine: %s", path + 1, log);
}

TEST(eval_json_matches_model) {
    char log[4096], dir[512], args[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("evalj"));
    CHECK_EQ(train(dir, "--max_steps=2 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --protocol stripes --json", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    double bpc = -1;
    long bytes = -1;
    const char *p = strstr(log, "\"bpc\": "), *q = strstr(log, "\"bytes\": ");
    CHECK(p && q);
    bpc = atof(p + 7);
    bytes = atol(q + 9);
    CHECK(bpc > 3 && bpc < 8.5);
    CHECK_EQ(bytes, 4 * (1000 / 4 - 1));
}

// --protocol stream is one stripe: every byte after the first predicted once, as --batch-size 1;
// warm (the default) counts its warm-up's bytes once; the output names the protocol.
TEST(eval_protocol_stream_and_stripes) {
    char log[4096], dir[512], args[1024], one[1024];
    snprintf(dir, sizeof dir, "%s", tmp_path("evalp"));
    CHECK_EQ(train(dir, "--max_steps=2 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --protocol stream --json", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "\"bytes\": 999, \"split\": \"test\", \"protocol\": \"stream\", \"stripes\": 1,"), "%s", log);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --batch-size 1 --json", dir);
    CHECK_EQ(run_swlstm(args, one, sizeof one), 0);
    CHECK_MSG(!strncmp(log, one, strstr(log, "\"seconds\"") - log), "%s\n%s", log, one);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --batch-size 2 --protocol stripes", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, " over 998 bytes (protocol stripes: 2 stripes, each from a zero state; "), "%s", log);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --batch-size 4 --warmup 100", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);  // the default: 100 + 4 * 224 bytes
    CHECK_MSG(strstr(log, " over 996 bytes (protocol warm: 4 stripes, each after the first run over the 100 bytes before it; "),
              "%s", log);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --protocol stream", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "(protocol stream: one stream, state carried across the whole split; "), "%s", log);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --protocol streams", dir);
    CHECK(run_swlstm(args, log, sizeof log) != 0 && strstr(log, "eval: --protocol 'streams': expected warm, stripes or stream"));
    snprintf(args, sizeof args, "eval %s/latest.ckpt --protocol stream --batch-size 4", dir);
    CHECK(run_swlstm(args, log, sizeof log) != 0 && strstr(log, "eval: --protocol stream is one stream; drop --batch-size 4"));
}

TEST(checkpoint_round_trip_keeps_weights) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32; cfg.block_size = 8; cfg.embed_size = 4; cfg.num_layers = 2;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ws_2_0.5");
    Model *m = model_create(&cfg, backend_cpu());
    const char *path = tmp_path("rt.ckpt");
    model_save(path, m, NULL, NULL, NULL, NULL);
    Model *r = ckpt_model(path, DEVICE_CPU, PREC_FP32);
    CHECK_EQ(r->nparams, m->nparams);
    CHECK(memcmp(r->params, m->params, m->nparams * sizeof(real)) == 0);
    CHECK(memcmp(r->layer[1].mask_x.m, m->layer[1].mask_x.m, 16) == 0);
    model_free(m);
    model_free(r);
    // mlstm with an average: every internal mask and the average come back.
    cfg.cell = CELL_MLSTM;
    cfg.depth = 3;
    cfg.ema = 0.5;
    m = model_create(&cfg, backend_cpu());
    for (size_t i = 0; i < m->nparams; i++) m->ema[i] = (real)i;
    model_save(path, m, NULL, NULL, NULL, NULL);
    r = ckpt_model(path, DEVICE_CPU, PREC_FP32);
    CHECK_EQ(r->nparams, m->nparams);
    CHECK(memcmp(r->params, m->params, m->nparams * sizeof(real)) == 0);
    CHECK(r->ema && memcmp(r->ema, m->ema, m->nparams * sizeof(real)) == 0);
    for (int l = 0; l < 2; l++)
        for (int j = 0; j < 3; j++) CHECK(memcmp(r->layer[l].mask_s[j].m, m->layer[l].mask_s[j].m, 16) == 0);
    const Mask *ms = m->layer[0].mask_s;  // each step its own seed
    CHECK(memcmp(ms[0].m, ms[1].m, 16) || memcmp(ms[1].m, ms[2].m, 16));
    model_free(r);
    r = model_load_infer(path, DEVICE_CPU, PREC_FP32, 0);  // inference: the average as the weights, none kept
    CHECK(!r->ema && memcmp(r->params, m->ema, m->nparams * sizeof(real)) == 0);
    model_free(r);
    r = model_load_infer(path, DEVICE_CPU, PREC_FP32, 1);  // --raw-weights
    CHECK(!r->ema && memcmp(r->params, m->params, m->nparams * sizeof(real)) == 0);
    model_free(m);
    model_free(r);
}

// Sum of |v - I| over the stored blocks of w (the identity on diagonal blocks, 0 elsewhere).
static double off_identity(const BsMat *w, const real *vals) {
    double d = 0;
    int bs = w->bs;
    for (int br = 0; br < w->nbr; br++)
        for (int k = w->row_ptr[br]; k < w->row_ptr[br + 1]; k++)
            for (int i = 0; i < bs; i++)
                for (int j = 0; j < bs; j++)
                    d += fabs(vals[((long)k * bs + i) * bs + j] - (w->col_idx[k] == br % w->nbc && i == j));
    return d;
}

TEST(identity_init_of_recurrent_matrices) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32; cfg.block_size = 8; cfg.embed_size = 4; cfg.num_layers = 2; cfg.depth = 3;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_1");
    cfg.init = INIT_IDENTITY;
    Model *m = model_create(&cfg, backend_cpu());  // LSTM: each gate's W_h
    for (int l = 0; l < 2; l++) CHECK(off_identity(&m->layer[l].wh, m->params + m->layer[l].off_wh) == 0);
    model_free(m);
    cfg.cell = CELL_MLSTM;
    m = model_create(&cfg, backend_cpu());  // mlstm: the internal steps; the gates stay uniform
    for (int l = 0; l < 2; l++) {
        for (int j = 0; j < 3; j++) CHECK(off_identity(&m->layer[l].ws[j], m->params + m->layer[l].off_ws[j]) == 0);
        CHECK(off_identity(&m->layer[l].wh, m->params + m->layer[l].off_wh) > 1);
    }
    model_free(m);
}

static void load_bad(void *path) { ckpt_model(path, DEVICE_CPU, PREC_FP32); }
static void read_bad(void *path) {
    Ckpt c;
    ckpt_read(&c, path);
}

// The bytes (n of them; caller frees) of a one-step checkpoint trained into tmp dir `name`,
// its path, and in *at the offset of a payload byte of section `tag` (8 characters with the
// NUL padding). NULL if training failed or there is no such section.
static char *one_step_ckpt(const char *name, const char *tag8, char path[600], size_t *n, size_t *at) {
    char log[4096], dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path(name));
    if (train(dir, "--max_steps=1 --warmup_steps=0 --eval_every=0", log, sizeof log)) return NULL;
    snprintf(path, 600, "%s/latest.ckpt", dir);
    char *buf = read_text_file(path, n, "ckpt");
    const char *sec = memmem(buf, *n, tag8, 8);
    if (!sec) { free(buf); return NULL; }
    *at = (size_t)(sec - buf) + 20 + 8;
    return buf;
}

// A checkpoint read whole, as resume and export read it: a flipped byte in the weights, or in
// the optimizer's sections mid-file, is an error, and so are a cut file and another version.
TEST(checkpoint_corruption_is_a_clean_error) {
    char log[4096], path[600];
    size_t n, at;
    char *buf = one_step_ckpt("corrupt", "params\0\0", path, &n, &at);
    CHECK(buf != NULL);
    buf[at] ^= 0x20;
    write_file(tmp_path("flipped.ckpt"), buf, n);
    CHECK_DIES(load_bad, (void *)tmp_path("flipped.ckpt"), "section 'params' is corrupt");
    buf[at] ^= 0x20;
    buf[n / 2] ^= 0x20;
    write_file(tmp_path("flipped.ckpt"), buf, n);
    CHECK_DIES(read_bad, (void *)tmp_path("flipped.ckpt"), "corrupt");
    buf[n / 2] ^= 0x20;
    write_file(tmp_path("cut.ckpt"), buf, n - 100);
    CHECK_DIES(load_bad, (void *)tmp_path("cut.ckpt"), "checkpoint");
    buf[8] = 9;  // format version field
    write_file(tmp_path("v9.ckpt"), buf, n);
    CHECK_DIES(load_bad, (void *)tmp_path("v9.ckpt"), "version 9");
    free(buf);
    char args[700];
    snprintf(args, sizeof args, "sample %s -n 5", tmp_path("v9.ckpt"));
    CHECK(run_swlstm(args, log, sizeof log) != 0 && strstr(log, "swlstm: error: checkpoint"));
}

// Runs `sample` with the given options into a file and returns its bytes (NULs included).
static char *sample_to(const char *dir, const char *opts, const char *name, size_t *len) {
    char args[2048], log[4096];
    snprintf(args, sizeof args, "sample %s/latest.ckpt %s > %s", dir, opts, tmp_path(name));
    if (run_swlstm(args, log, sizeof log) != 0) { fprintf(stderr, "%s\n", log); return NULL; }
    return read_text_file(tmp_path(name), len, "sample output");
}

static int same_bytes(const char *a, size_t na, const char *b, size_t nb) { return na == nb && !memcmp(a, b, na); }

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

// A flipped byte in the Adam moments: every verb that does not read them says so in one
// warning line and goes on; those that do (prune, --resume) stop with an error.
TEST(damaged_unread_section_is_one_warning_in_every_verb) {
    char log[16384], path[600], args[1600];
    size_t n, at;
    char *buf = one_step_ckpt("damaged", "adam_m\0\0", path, &n, &at);
    CHECK(buf != NULL);
    buf[at] ^= 0x20;
    const char *bad = write_file(tmp_path("adam-flipped.ckpt"), buf, n);
    free(buf);
    const char *warn = "section 'adam_m' is damaged (CRC mismatch); this command does not read it";
    const char *fine[] = {"sample %s -n 5", "eval %s --split test --max-bytes 500", "export %s --out %s.st",
                          "mask --ckpt %s"};
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, fine[i], bad, bad);
        int rc = run_swlstm(args, log, sizeof log);
        CHECK_MSG(rc == 0 && count_of(log, "swlstm: warning: ") == 1 && strstr(log, warn), "%s: rc %d: %s", args, rc, log);
    }
    const char *docs = write_file(tmp_path("damaged-docs.txt"), "one doc\nanother\n", 17);
    snprintf(args, sizeof args, "features %s --input %s --out %s.npy", bad, docs, bad);
    CHECK_MSG(run_swlstm(args, log, sizeof log) == 0 && count_of(log, "swlstm: warning: ") == 1, "%s", log);
    snprintf(args, sizeof args, "prune %s --density 0.5 --out %s.pruned", bad, bad);
    CHECK_MSG(run_swlstm(args, log, sizeof log) == 1 && strstr(log, "section 'adam_m' is corrupt"), "%s", log);
}

TEST(sample_is_deterministic) {
    char log[4096], dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("sample"));
    CHECK_EQ(train(dir, "--max_steps=3 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    size_t n1, n2, n3, g1, g2;
    char *a1 = sample_to(dir, "-n 200 -t 0.9 --top-k 40 -s 11 -i 'The '", "s1", &n1);
    char *a2 = sample_to(dir, "-n 200 -t 0.9 --top-k 40 -s 11 -i 'The '", "s2", &n2);
    char *a3 = sample_to(dir, "-n 200 -t 0.9 --top-k 40 -s 12 -i 'The '", "s3", &n3);
    char *b1 = sample_to(dir, "-n 50 -t 0 -s 1", "g1", &g1), *b2 = sample_to(dir, "-n 50 -t 0 -s 2", "g2", &g2);
    CHECK(a1 && a2 && a3 && b1 && b2);
    CHECK_EQ(n1, 204);
    CHECK(memcmp(a1, "The ", 4) == 0);
    CHECK(same_bytes(a1, n1, a2, n2));
    CHECK(!same_bytes(a1, n1, a3, n3));
    CHECK(g1 == 50 && same_bytes(b1, g1, b2, g2));
    // -v names the path on stderr (here in the same file: first, then the times after the
    // text) and leaves the text as it was.
    size_t nv;
    char *v = sample_to(dir, "-n 50 -t 0 -s 1 -v", "gv", &nv);
    const char *say = "sample: per-step ops\nsample: no device loop: the backend has no device loop\n";
    CHECK(v && nv > strlen(say) + 50 && !memcmp(v, say, strlen(say)) && !memcmp(v + strlen(say), b1, 50));
    CHECK(v && strstr(v + strlen(say) + 50, "sample: checkpoint loaded in "));
    free(a1); free(a2); free(a3); free(b1); free(b2); free(v);
}

// Runs "$SWLSTM_BIN <args>" with stdout on a terminal (a pseudo-terminal that passes bytes
// unchanged) and stderr to /dev/null; returns the bytes written (up to n) or -1.
static long swlstm_on_terminal(const char *args, char *out, size_t n) {
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) || unlockpt(master)) return -1;
    const char *bin = getenv("SWLSTM_BIN") ? getenv("SWLSTM_BIN") : "./swlstm";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", bin, args);
    pid_t pid = fork();
    if (pid == 0) {
        int tty = open(ptsname(master), O_RDWR | O_NOCTTY);
        struct termios t;
        if (tty < 0 || tcgetattr(tty, &t)) _exit(127);
        t.c_oflag &= ~(tcflag_t)OPOST;  // no "\r\n" for "\n"
        tcsetattr(tty, TCSANOW, &t);
        dup2(tty, STDOUT_FILENO);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    size_t got = 0;
    ssize_t k;
    while (got < n && (k = read(master, out + got, n - got)) > 0) got += (size_t)k;  // EIO once the child closes it
    int status;
    waitpid(pid, &status, 0);
    close(master);
    return WIFEXITED(status) && !WEXITSTATUS(status) ? (long)got : -1;
}

// On a terminal the text ends with a newline (the prompt gets a line of its own); through a
// pipe or into a file the bytes are exactly the prime and the bytes drawn.
TEST(sample_ends_its_line_on_a_terminal_only) {
    char log[4096], dir[512], args[1024], tty[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("sample-tty"));
    CHECK_EQ(train(dir, "--max_steps=2 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    static const char *opts[] = {"-n 37 -t 1 -s 5 -i 'The '", "-n 0 -i 'ab'", "-n 0 -i 'ab\n'"};
    for (int i = 0; i < 3; i++) {
        size_t n;
        char *piped = sample_to(dir, opts[i], "tty-pipe", &n);
        CHECK(piped && n == (i ? 2 + (size_t)(i == 2) : 41));
        CHECK_MSG(i == 2 || piped[n - 1] != '\n', "%s: pick another seed, this text ends a line", opts[i]);
        snprintf(args, sizeof args, "sample %s/latest.ckpt %s", dir, opts[i]);
        long k = swlstm_on_terminal(args, tty, sizeof tty);
        int add = piped[n - 1] != '\n';
        CHECK_MSG(k == (long)(n + add) && !memcmp(tty, piped, n) && tty[k - 1] == '\n', "%s: %ld bytes on a terminal, %zu piped",
                  opts[i], k, n);
        free(piped);
    }
}

// The checkpoint records its corpus's byte values; sample draws only those (here at a
// temperature that makes every byte about as likely) unless --any-byte.
TEST(sample_draws_only_the_corpus_bytes) {
    char log[4096], dir[512], ck[600];
    snprintf(dir, sizeof dir, "%s", tmp_path("byteset"));
    CHECK_EQ(train(dir, "--max_steps=2 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    size_t n;
    char *text = read_text_file(corpus(), &n, "test corpus");
    uint8_t want[BYTE_SET_BYTES], got[BYTE_SET_BYTES];
    byte_set_of((const uint8_t *)text, n, want);
    free(text);
    snprintf(ck, sizeof ck, "%s/latest.ckpt", dir);
    CHECK(ckpt_byte_set(ck, got) == 1);
    CHECK(!memcmp(want, got, sizeof want));
    CHECK(byte_set_count(want) > 10 && byte_set_count(want) < 100);
    for (int any = 0; any < 2; any++) {
        size_t k;
        char *s = sample_to(dir, any ? "-n 3000 -t 50 -s 3 --any-byte" : "-n 3000 -t 50 -s 3", any ? "ab1" : "ab0", &k);
        CHECK(s && k == 3000);
        int outside = 0;
        for (size_t i = 0; i < k; i++) outside += !byte_set_has(want, (unsigned char)s[i]);
        free(s);
        CHECK_MSG(any ? outside > 1000 : outside == 0, "--any-byte %d: %d bytes outside the corpus's", any, outside);
    }
}

TEST(sigint_saves_checkpoint_and_exits_130) {
    char dir[512], cfgarg[600], jl[600], ck[600];
    snprintf(dir, sizeof dir, "%s", tmp_path("sigint"));
    snprintf(cfgarg, sizeof cfgarg, "--out_dir=%s", dir);
    snprintf(jl, sizeof jl, "%s/log.jsonl", dir);
    const char *bin = getenv("SWLSTM_BIN") ? getenv("SWLSTM_BIN") : "./swlstm";
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(3);
        execl(bin, bin, "train", tiny_cfg(), cfgarg, "--max_steps=100000", "--eval_every=0", (char *)NULL);
        _exit(127);
    }
    int started = 0;
    for (int i = 0; i < 600 && !started; i++) {
        usleep(50000);
        FILE *f = fopen(jl, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) started |= strstr(line, "\"step\":2") != NULL;
        if (f) fclose(f);
    }
    kill(pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    CHECK(started);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGINT, "status %d", st);  // as the shell's ^C
    snprintf(ck, sizeof ck, "%s/latest.ckpt", dir);
    Ckpt c;
    ckpt_read(&c, ck);
    TrainState ts;
    CHECK(ckpt_train_state(&c, &ts) && ts.step >= 2);
    ckpt_close(&c);
}

TEST(nan_loss_stops_with_hint_or_skips) {
    char log[16384], dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("nan"));
    CHECK(train(dir, "--learning_rate=1e30 --grad_clip=0 --max_steps=30 --eval_every=0", log, sizeof log) != 0);
    CHECK_MSG(strstr(log, "non-finite") && strstr(log, "Hint"), "%s", log);
    // Skipping cannot rescue weights that are already broken: it skips, then gives up clearly.
    CHECK(train(dir, "--learning_rate=1e30 --grad_clip=0 --max_steps=30 --eval_every=0 --nan_policy=skip", log, sizeof log) != 0);
    CHECK_MSG(strstr(log, "step skipped") && strstr(log, "in a row were non-finite"), "%s", log);
}

// Each bad input: a one-line error naming what is wrong, and a non-zero exit.
static void expect_cli_error(const char *args, const char *needle, int *ok) {
    char out[4096];
    int rc = run_swlstm(args, out, sizeof out);
    if (rc == 0 || !strstr(out, needle) || !strstr(out, "swlstm: error: ")) {
        test_fail(__FILE__, __LINE__, "'%s': exit %d, output: %s", args, rc, out);
        *ok = 0;
    }
}

TEST(bad_inputs_are_clear_errors) {
    char args[1200];
    int ok = 1;
    write_file(tmp_path("empty.txt"), "", 0);
    snprintf(args, sizeof args, "train %s --data=%s/nope.txt", tiny_cfg(), test_tmpdir());
    expect_cli_error(args, "nope.txt", &ok);
    snprintf(args, sizeof args, "train %s --data=%s", tiny_cfg(), tmp_path("empty.txt"));
    expect_cli_error(args, "empty", &ok);
    snprintf(args, sizeof args, "train %s --hiden_size=64", tiny_cfg());
    expect_cli_error(args, "hidden_size", &ok);
    snprintf(args, sizeof args, "train %s --hidden_size=36", tiny_cfg());
    expect_cli_error(args, "multiple of block_size", &ok);
    snprintf(args, sizeof args, "train %s --sparsity=ba_x", tiny_cfg());
    expect_cli_error(args, "ba_x", &ok);
    expect_cli_error("train /nonexistent.cfg", "nonexistent.cfg", &ok);
    expect_cli_error("sample /nonexistent.ckpt", "nonexistent.ckpt", &ok);
    expect_cli_error("frobnicate", "frobnicate", &ok);
    snprintf(args, sizeof args, "train %s --gpus=2", tiny_cfg());
    expect_cli_error(args, "gpus = 2 needs device = cuda", &ok);
    snprintf(args, sizeof args, "train %s --device=cuda --gpus=3", tiny_cfg());
    expect_cli_error(args, "batch_size = 4 is not divisible by gpus = 3", &ok);
    setenv("SWLSTM_RANK", "1", 1);
    setenv("SWLSTM_WORLD_SIZE", "2", 1);
    snprintf(args, sizeof args, "train %s", tiny_cfg());
    expect_cli_error(args, "2 ranks (2 processes from ", &ok);
    unsetenv("SWLSTM_RANK");
    unsetenv("SWLSTM_WORLD_SIZE");
    CHECK(ok);
}

// Every verb reads "--opt value" and "--opt=value" alike (main() splits the second form).
TEST(options_take_both_syntaxes) {
    char log[8192], dir[512], a1[1200], a2[1200], o1[4096], o2[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("syntax"));
    CHECK_EQ(train(dir, "--max_steps 2 --warmup_steps=0 --eval_every 0", log, sizeof log), 0);
    CHECK_MSG(strstr(log, "done: 2 steps") && strstr(log, "best valid bpc none;"), "%s", log);
    snprintf(a1, sizeof a1, "eval %s/latest.ckpt --data=%s --split=test --max-bytes=1000 --batch-size=2 --json", dir, corpus());
    snprintf(a2, sizeof a2, "eval %s/latest.ckpt --data %s --split test --max-bytes 1000 --batch-size 2 --json", dir, corpus());
    CHECK_EQ(run_swlstm(a1, o1, sizeof o1), 0);
    CHECK_EQ(run_swlstm(a2, o2, sizeof o2), 0);
    CHECK_MSG(!strncmp(o1, o2, strstr(o1, "\"seconds\"") - o1) && strstr(o1, "\"bytes\": 999"), "%s\n%s", o1, o2);
    snprintf(a1, sizeof a1, "sample %s/latest.ckpt -n 40 --seed=3 --top-k=5 --prime=Th", dir);
    snprintf(a2, sizeof a2, "sample %s/latest.ckpt -n 40 --seed 3 --top-k 5 --prime Th", dir);
    CHECK_EQ(run_swlstm(a1, o1, sizeof o1), 0);
    CHECK_EQ(run_swlstm(a2, o2, sizeof o2), 0);
    CHECK(!strcmp(o1, o2) && strlen(o1) == 42);
    CHECK_EQ(run_swlstm("mask --hidden=64 --block 8 --sparsity=ba_2 --seed=4 --json", o1, sizeof o1), 0);
    CHECK_EQ(run_swlstm("mask --hidden 64 --block=8 --sparsity ba_2 --seed 4 --json", o2, sizeof o2), 0);
    CHECK(!strcmp(o1, o2) && strstr(o1, "\"hidden\":64"));
}

// A killed run leaves "<ckpt>.tmp.<pid>"; the next run in that directory removes it, and only
// files whose process is gone.
// '_' and '-' alike in every option's name, and the config's names for the mask's options.
TEST(options_take_both_spellings) {
    char log[8192], dir[512], a1[1200], a2[1200], o1[4096], o2[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("spelling"));
    CHECK_EQ(train(dir, "--max-steps 2 --warmup-steps=0 --eval_every 0", log, sizeof log), 0);
    CHECK_MSG(strstr(log, "done: 2 steps"), "%s", log);
    snprintf(a1, sizeof a1, "eval %s/latest.ckpt --split=test --max_bytes=1000 --batch_size=2 --json", dir);
    snprintf(a2, sizeof a2, "eval %s/latest.ckpt --split test --max-bytes 1000 --batch-size 2 --json", dir);
    CHECK_EQ(run_swlstm(a1, o1, sizeof o1), 0);
    CHECK_EQ(run_swlstm(a2, o2, sizeof o2), 0);
    CHECK_MSG(!strncmp(o1, o2, strstr(o1, "\"seconds\"") - o1) && strstr(o1, "\"bytes\": 999"), "%s\n%s", o1, o2);
    CHECK_EQ(run_swlstm("mask --hidden_size=64 --block_size 8 --sparsity=ba_2 --mask_seed=4 --json", o1, sizeof o1), 0);
    CHECK_EQ(run_swlstm("mask --hidden 64 --block=8 --sparsity ba_2 --seed 4 --json", o2, sizeof o2), 0);
    CHECK_MSG(!strcmp(o1, o2) && strstr(o1, "\"hidden\":64"), "%s", o1);
}

// Usage errors go to stderr with status 1 in every verb (and with no verb); --help and
// --version print on stdout with status 0.
TEST(usage_errors_and_version_exit_codes) {
    char out[4096];
    const char *verbs[] = {"", "train", "eval", "sample", "info", "mask", "features", "probe", "export", "prune", "units",
                           "nosuchverb", "info a.ckpt b.ckpt", "eval --nosuch"};
    for (int i = 0; i < (int)(sizeof verbs / sizeof verbs[0]); i++) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", getenv("SWLSTM_BIN") ? getenv("SWLSTM_BIN") : "./swlstm", verbs[i]);
        int rc = run_shell(cmd, out, sizeof out);
        CHECK_MSG(rc == 1 && out[0] == 0, "'swlstm %s': status %d, stdout '%s'", verbs[i], rc, out);
    }
    CHECK_EQ(run_swlstm("--version", out, sizeof out), 0);
    CHECK_MSG(!strncmp(out, "swlstm ", 7) && strstr(out, "(checkpoint format 1, "), "%s", out);
    CHECK_EQ(run_swlstm("info --help", out, sizeof out), 0);
    CHECK(!strncmp(out, "usage: swlstm info CKPT", 23));
}

TEST(train_removes_stale_temporary_files) {
    char log[8192], dir[512], dead[700], alive[700], other[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("stale"));
    CHECK(mkdir_p(dir) == 0);
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    snprintf(dead, sizeof dead, "%s/latest.ckpt.tmp.%ld", dir, (long)pid);
    snprintf(alive, sizeof alive, "%s/best.ckpt.tmp.%ld", dir, (long)getpid());
    snprintf(other, sizeof other, "%s/notes.tmp.old", dir);
    write_file(dead, "x", 1);
    write_file(alive, "x", 1);
    write_file(other, "x", 1);
    CHECK_EQ(train(dir, "--max_steps=1 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    CHECK_MSG(strstr(log, "removed 1 temporary file(s) of a killed run"), "%s", log);
    CHECK(access(dead, F_OK) != 0);
    CHECK(access(alive, F_OK) == 0 && access(other, F_OK) == 0);
}
// A run directory belongs to one run: a new run into one that holds another's checkpoints is
// refused with the ways on and writes nothing, --overwrite replaces that run; --resume writes
// beside its checkpoint (not the config's out_dir) and refuses a folder whose checkpoints are
// not the one it continues.
TEST(train_keeps_each_run_directory_to_its_run) {
    char log[16384], dir[512], other[512], args[2048], want[2048], ck[700], stray[700];
    snprintf(dir, sizeof dir, "%s", tmp_path("owned"));
    snprintf(other, sizeof other, "%s", tmp_path("owned-other"));
    snprintf(ck, sizeof ck, "%s/best.ckpt", dir);
    CHECK_EQ(train(dir, "--max_steps=4", log, sizeof log), 0);
    size_t n0, n1;
    char *best = read_text_file(ck, &n0, "checkpoint");
    CHECK_EQ(train(dir, "--max_steps=4 --seed=2", log, sizeof log), 1);
    snprintf(want, sizeof want, "swlstm: error: out_dir '%s' holds another run's checkpoints (latest.ckpt, best.ckpt): continue "
             "it with --resume %s/latest.ckpt, give this run another --out_dir, or --overwrite to replace it\n", dir, dir);
    CHECK_MSG(strstr(log, want) && !strstr(log, "step 1/"), "%s", log);
    char *still = read_text_file(ck, &n1, "checkpoint");
    CHECK(n0 == n1 && !memcmp(best, still, n0));
    free(still);
    // --resume without --out_dir: the checkpoint's folder, whatever the config says
    snprintf(args, sizeof args, "train %s --resume %s/latest.ckpt --max_steps=6", tiny_cfg(), dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    snprintf(want, sizeof want, "--resume: out_dir = %s (the checkpoint's folder; --out_dir=DIR for another)", dir);
    CHECK_MSG(strstr(log, want) && strstr(log, "resumed from") && strstr(log, "checkpoints in "), "%s", log);
    snprintf(args, sizeof args, "info %s/latest.ckpt", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(strstr(log, "training state: step 6,"), "%s", log);
    // a checkpoint beside another run's is not that run: refused there, taken elsewhere
    snprintf(stray, sizeof stray, "%s/stray.ckpt", dir);
    write_file(stray, best, n0);
    free(best);
    snprintf(args, sizeof args, "train %s --resume %s --max_steps=8", tiny_cfg(), stray);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 1);
    snprintf(want, sizeof want, "out_dir '%s' holds another run's checkpoints (latest.ckpt, best.ckpt; %s is not one of them): "
             "give this run another --out_dir, or --overwrite to replace that run\n", dir, stray);
    CHECK_MSG(strstr(log, want), "%s", log);
    snprintf(args, sizeof args, "train %s --resume %s --max_steps=8 --out_dir=%s", tiny_cfg(), stray, other);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(!strstr(log, "--resume: out_dir"), "%s", log);
    // --overwrite: the old run's files go first
    CHECK_EQ(train(dir, "--max_steps=2 --eval_every=0 --overwrite", log, sizeof log), 0);
    snprintf(want, sizeof want, "--overwrite: removed the previous run's latest.ckpt, best.ckpt and log.jsonl from %s\n", dir);
    CHECK_MSG(strstr(log, want), "%s", log);
    CHECK(access(ck, F_OK) != 0);  // eval_every = 0: no best of its own
}

// max_steps below the warm-up ends the warm-up at the last step, with one line.
TEST(train_clamps_the_warmup_to_max_steps) {
    char log[16384], dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("short"));
    CHECK_EQ(train(dir, "--max_steps=1 --warmup_steps=5", log, sizeof log), 0);
    CHECK_MSG(strstr(log, "warmup_steps = 5 is more than max_steps = 1: the warm-up ends at step 1\n") &&
              strstr(log, "step 1/1 |") && strstr(log, "lr 1.00e-02"), "%s", log);
}

// eval on a corpus other than the checkpoint's (its size and fingerprint) warns in one line,
// and --json says so; on the checkpoint's own corpus, neither.
TEST(eval_warns_of_another_corpus) {
    char log[8192], dir[512], args[2048];
    snprintf(dir, sizeof dir, "%s", tmp_path("evalother"));
    CHECK_EQ(train(dir, "--max_steps=2 --warmup_steps=0 --eval_every=0", log, sizeof log), 0);
    size_t n;
    char *text = read_text_file(corpus(), &n, "test corpus");
    text[n / 2] ^= 1;
    const char *other = write_file(tmp_path("corpus-edited.txt"), text, n);
    free(text);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --json --data %s", dir, other);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(count_of(log, "swlstm: warning: eval: data '") == 1 &&
              strstr(log, "(40000 bytes, fingerprint ") && strstr(log, "is not the corpus ") &&
              strstr(log, "\"other_corpus\": true}"), "%s", log);
    snprintf(args, sizeof args, "eval %s/latest.ckpt --split test --max-bytes 1000 --json", dir);
    CHECK_EQ(run_swlstm(args, log, sizeof log), 0);
    CHECK_MSG(!strstr(log, "warning") && strstr(log, "\"other_corpus\": false}"), "%s", log);
}

#endif
