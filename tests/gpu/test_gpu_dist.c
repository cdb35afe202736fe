// test_gpu_dist.c: data-parallel training through NCCL, driven through `swlstm train`. With
// the same global batch, one process with gpus = 2 and two processes (TCP or file) train
// what one GPU trains (losses, validation bpc, final weights and carried state within fp32
// tolerance); checkpoints resume across GPU counts; a killed rank ends its peer with an error
// naming the rank; more GPUs than the machine has is a clear error; the mlstm cell (with EMA
// weights) trains on 2 GPUs what it trains on one; mask updates keep one mask on both ranks.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "train/dist.h"
#include "model/model_io.h"
#include "gpu_train.h"

enum { STEPS = 20, HALF = 10, B = 8 };

static const char *bin(void) {
    const char *b = getenv("SWLSTM_BIN");
    return b ? b : "./swlstm";
}

// Two layers with tiny buckets, so that several all-reduces start during backward.
static const char *cfg(void) {
    static char path[512];
    if (path[0]) return path;
    char data[512], body[2048];
    size_t len = 256 * 1024;
    unsigned char *text = toy_text(len, 9);
    snprintf(data, sizeof data, "%s", tmp_path("dist_text.txt"));
    write_file(data, text, len);
    free(text);
    int n = snprintf(body, sizeof body,
                     "data = %s\nsplit = 0.9,0.05,0.05\ndevice = cuda\nprecision = fp32\nhidden_size = 128\n"
                     "block_size = 16\nnum_layers = 2\nsparsity = ba_2\nembed_size = 32\nlayer_norm = true\n"
                     "batch_size = %d\nseq_length = 32\nmax_steps = %d\nlearning_rate = 3e-3\nwarmup_steps = 2\n"
                     "log_every = 1\neval_every = %d\neval_bytes = 8192\ndist_bucket_mb = 0.05\nseed = 5\n",
                     data, B, STEPS, HALF);
    snprintf(path, sizeof path, "%s", tmp_path("dist.cfg"));
    write_file(path, body, (size_t)n);
    return path;
}

static const char *dir(const char *name) {
    static char d[4][512];
    static int k;
    char *p = d[k++ % 4];
    snprintf(p, 512, "%s", tmp_path(name));
    return p;
}

static int train(const char *out_dir, const char *extra, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train %s --out_dir=%s %s 2>&1", bin(), cfg(), out_dir, extra);
    return run_shell(cmd, out, n);
}

// Ranks 0 and 1 as two processes, joined over TCP on a free loopback port, or through a file.
static int train_2proc(const char *out_dir, int tcp, char *out, size_t n) {
    int port = 0;
    char init[600], cmd[4096];
    if (tcp) close(dist_tcp_listen("127.0.0.1", &port)), snprintf(init, sizeof init, "tcp://127.0.0.1:%d", port);
    else snprintf(init, sizeof init, "file://%s/nccl_id", out_dir);
    snprintf(cmd, sizeof cmd,
             "export SWLSTM_WORLD_SIZE=2 SWLSTM_DIST_INIT=%s SWLSTM_DIST_TIMEOUT=120 SWLSTM_RUN_ID=$$; "
             "SWLSTM_RANK=1 %s train %s --out_dir=%s 2>&1 & p=$!; "
             "SWLSTM_RANK=0 %s train %s --out_dir=%s 2>&1; r=$?; wait $p; exit $((r | $?))",
             init, bin(), cfg(), out_dir, bin(), cfg(), out_dir);
    return run_shell(cmd, out, n);
}

typedef struct {
    double loss[STEPS], bpc[STEPS / HALF];
    int nloss, nbpc;
} Curve;

static Curve curve_of(const char *out_dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/log.jsonl", out_dir);
    char *text = read_text_file(path, NULL, "log");
    Curve c = {0};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        const char *v;
        if (strstr(line, "\"type\":\"step\"") && (v = strstr(line, "\"loss\":")) && c.nloss < STEPS)
            c.loss[c.nloss++] = atof(v + 7);
        if (strstr(line, "\"type\":\"eval\"") && (v = strstr(line, "\"valid_bpc\":")) && c.nbpc < STEPS / HALF)
            c.bpc[c.nbpc++] = atof(v + 12);
    }
    free(text);
    return c;
}

static double max_abs_diff(const real *a, const real *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

// Largest |a - b| over the weights and over the carried state of two final checkpoints.
static void ckpt_diff(const char *dir_a, const char *dir_b, double *dw, double *dh) {
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/latest.ckpt", dir_a);
    snprintf(pb, sizeof pb, "%s/latest.ckpt", dir_b);
    Ckpt ca, cb;
    ckpt_read(&ca, pa);
    ckpt_read(&cb, pb);
    Model *ma = model_from_ckpt(&ca, DEVICE_CPU, PREC_FP32), *mb = model_from_ckpt(&cb, DEVICE_CPU, PREC_FP32);
    *dw = max_abs_diff(ma->params, mb->params, ma->nparams);
    Acts *aa = acts_create(ma, B, 1), *ab = acts_create(mb, B, 1);
    real *mom = xmalloc(2 * ma->nparams * sizeof(real));
    TrainState ts;
    model_load_train_state(ma, &ca, &ts, mom, mom + ma->nparams, aa, 0, B);
    model_load_train_state(mb, &cb, &ts, mom, mom + ma->nparams, ab, 0, B);
    ckpt_close(&ca);
    ckpt_close(&cb);
    *dh = 0;
    for (int l = 0; l < ma->L; l++) {
        double e = max_abs_diff(aa->h[l], ab->h[l], (size_t)B * ma->H);
        double f = max_abs_diff(aa->c[l], ab->c[l], (size_t)B * ma->H);
        *dh = fmax(*dh, fmax(e, f));
    }
    free(mom);
    acts_free(ma, aa);
    acts_free(mb, ab);
    model_free(ma);
    model_free(mb);
}

// Float sums in another order drift apart a little over 20 Adam steps; a wrong row, stripe
// or scale gives differences of 1e-2 and more.
#define LOSS_TOL 1e-4
#define W_TOL 1e-4
#define H_TOL 1e-3

static int matches_within(const char *what, const char *ref_dir, const char *dir_b, double w_tol, double h_tol) {
    Curve a = curve_of(ref_dir), b = curve_of(dir_b);
    if (a.nloss != STEPS || b.nloss != STEPS || a.nbpc != STEPS / HALF || b.nbpc != STEPS / HALF) {
        test_fail(__FILE__, __LINE__, "%s: %d/%d logged steps, %d/%d evals", what, a.nloss, b.nloss, a.nbpc, b.nbpc);
        return 0;
    }
    double dl = worst_rel(b.loss, a.loss, STEPS), db = worst_rel(b.bpc, a.bpc, STEPS / HALF), dw, dh;
    ckpt_diff(ref_dir, dir_b, &dw, &dh);
    printf("\n  %s vs 1 GPU: loss rel %.2g, valid bpc rel %.2g, weights %.2g, carried state %.2g ", what, dl, db, dw, dh);
    if (dl < LOSS_TOL && db < LOSS_TOL && dw < w_tol && dh < h_tol) return 1;
    test_fail(__FILE__, __LINE__, "%s differs from 1 GPU beyond tolerance (loss/bpc %g, weights %g, state %g)", what,
              LOSS_TOL, w_tol, h_tol);
    return 0;
}

static int matches(const char *what, const char *ref_dir, const char *dir_b) {
    return matches_within(what, ref_dir, dir_b, W_TOL, H_TOL);
}

static int two_gpus(void) {
    if (backend_cuda_devices() >= 2) return 1;
    test_skip("needs 2 GPUs");
    return 0;
}

// The 1-GPU reference run, made once (its own copy of the path: dir() reuses its buffers).
static const char *one_gpu(void) {
    static char d[512];
    if (d[0]) return d;
    char out[8192];
    const char *p = dir("gpu1");
    if (train(p, "", out, sizeof out)) {
        printf("%s\n", out);
        return NULL;
    }
    snprintf(d, sizeof d, "%s", p);
    return d;
}

TEST(gpu_dist_two_gpus_match_one) {
    if (!two_gpus()) return;
    char out[16384];
    const char *ref = one_gpu(), *threads = dir("gpus2"), *procs = dir("proc2"), *viafile = dir("file2");
    CHECK_MSG(ref, "the 1-GPU run failed");
    CHECK_MSG(train(threads, "--gpus=2", out, sizeof out) == 0, "gpus = 2 failed: %s", out);
    CHECK_MSG(strstr(out, "data parallel: 2 ranks, 4 stripes each"), "no data-parallel line: %s", out);
    CHECK(matches("gpus = 2 (one process)", ref, threads));
    CHECK_MSG(train_2proc(procs, 1, out, sizeof out) == 0, "two processes over TCP failed: %s", out);
    CHECK(matches("2 processes (TCP id exchange)", ref, procs));
    CHECK_MSG(train_2proc(viafile, 0, out, sizeof out) == 0, "two processes through a file failed: %s", out);
    CHECK(matches("2 processes (id through a file)", ref, viafile));
}

TEST(gpu_dist_mlstm_two_gpus_match_one) {
    if (!two_gpus()) return;
    char out[16384], one[512], two[512];
    const char *opts = "--cell=mlstm --depth=3 --ema=0.99 --init=identity";
    snprintf(one, sizeof one, "%s", dir("mlstm1"));
    snprintf(two, sizeof two, "%s", dir("mlstm2"));
    CHECK_MSG(train(one, opts, out, sizeof out) == 0, "mlstm on 1 GPU failed: %s", out);
    char extra[256];
    snprintf(extra, sizeof extra, "%s --gpus=2", opts);
    CHECK_MSG(train(two, extra, out, sizeof out) == 0, "mlstm on 2 GPUs failed: %s", out);
    // The mlstm's identity init and internal norms leave weights whose gradients are near zero:
    // 20 Adam steps turn their rounding into weight differences of a few 1e-4 and state ones of
    // 1e-2, while its loss stays within LOSS_TOL (test_dist_train.c checks on the CPU that the
    // ranks' gradients average to one rank's, every tensor to rounding).
    CHECK(matches_within("mlstm, gpus = 2", one, two, 1e-3, 3e-2));
}

// Data-parallel ranks keep one mask: RigL (its scores from all-reduced dense gradients) and
// gradual pruning on 2 GPUs end on the masks of 1 GPU, with its weights.
TEST(gpu_dist_mask_updates_two_gpus_match_one) {
    if (!two_gpus()) return;
    char out[16384], one[512], two[512], ca[600], cb[600], extra[512];
    const char *opts = "--mask_update=rigl --mask_update_every=4 --mask_update_end=16 --prune_to=0.6 --prune_start=2 "
                       "--prune_end=12 --prune_every=5";
    snprintf(one, sizeof one, "%s", dir("masks1"));
    snprintf(two, sizeof two, "%s", dir("masks2"));
    CHECK_MSG(train(one, opts, out, sizeof out) == 0, "mask updates on 1 GPU failed: %s", out);
    CHECK_MSG(strstr(out, "step 8: mask update (rigl) moved") && strstr(out, "step 12: pruned"), "%s", out);
    snprintf(extra, sizeof extra, "%s --gpus=2", opts);
    CHECK_MSG(train(two, extra, out, sizeof out) == 0, "mask updates on 2 GPUs failed: %s", out);
    snprintf(ca, sizeof ca, "%s/latest.ckpt", one);
    snprintf(cb, sizeof cb, "%s/latest.ckpt", two);
    CHECK_MSG(ckpt_same_section(ca, cb, "masks"), "2 GPUs ended on other masks than 1 GPU");
    CHECK(matches("mask updates, gpus = 2", one, two));
}

// Half the run on one GPU count, the rest on the other, from the latest checkpoint.
static int resumed(const char *name, const char *dir_name, const char *first, const char *then) {
    char out[16384], extra[700];
    const char *d = dir(dir_name);
    snprintf(extra, sizeof extra, "%s --stop-after %d", first, HALF);
    if (train(d, extra, out, sizeof out)) return printf("%s\n", out), 0;
    snprintf(extra, sizeof extra, "%s --resume %s/latest.ckpt", then, d);
    if (train(d, extra, out, sizeof out)) return printf("%s\n", out), 0;
    return matches(name, one_gpu(), d);
}

TEST(gpu_dist_resume_across_gpu_counts) {
    if (!two_gpus()) return;
    CHECK_MSG(one_gpu(), "the 1-GPU run failed");
    CHECK(resumed("2 GPUs then 1", "resume21", "--gpus=2", "--gpus=1"));
    CHECK(resumed("1 GPU then 2", "resume12", "--gpus=1", "--gpus=2"));
}

// Rank `dead` is killed while training; the other must exit with an error naming both ranks
// well before the NCCL timeout (120 s here), through the closed id-exchange connection.
static int survivor_fails(int dead) {
    int port = 0;
    close(dist_tcp_listen("127.0.0.1", &port));
    const char *d = dir(dead ? "dead1" : "dead0");
    char cmd[4096], out[16384], want[64];
    snprintf(cmd, sizeof cmd,
             "export SWLSTM_WORLD_SIZE=2 SWLSTM_DIST_INIT=tcp://127.0.0.1:%d SWLSTM_DIST_TIMEOUT=120; "
             "args='train %s --out_dir=%s --max_steps=1000000 --eval_every=0 --log_every=0'; "
             "SWLSTM_RANK=%d %s $args >/dev/null 2>&1 & pd=$!; "
             "SWLSTM_RANK=%d timeout 300 %s $args 2>&1 & ps=$!; "
             "for i in $(seq 240); do grep -q '\"step\"' %s/log.jsonl 2>/dev/null && break; sleep 0.5; done; "
             "kill -9 $pd; t=$(date +%%s); wait $ps; echo \"survivor exit $? after $(($(date +%%s) - t)) s\"",
             port, cfg(), d, dead, bin(), 1 - dead, bin(), d);
    run_shell(cmd, out, sizeof out);
    printf("\n  rank %d killed: %s", dead, strstr(out, "swlstm: error") ? strstr(out, "swlstm: error") : out);
    snprintf(want, sizeof want, "swlstm: error: rank %d of 2: ", 1 - dead);
    const char *after = strstr(out, " after ");
    int secs = after ? atoi(after + 7) : 999;
    snprintf(cmd, sizeof cmd, "rank %d exited", dead);
    if (strstr(out, want) && strstr(out, cmd) && !strstr(out, "survivor exit 0") && secs < 60) return 1;
    test_fail(__FILE__, __LINE__, "rank %d killed: the survivor did not fail in time naming both ranks", dead);
    return 0;
}

TEST(gpu_dist_dead_rank_ends_the_other) {
    if (!two_gpus()) return;
    CHECK(survivor_fails(1));
    CHECK(survivor_fails(0));
}

TEST(gpu_dist_more_gpus_than_present) {
    char out[4096];
    CHECK(train(dir("many"), "--gpus=64 --batch_size=64", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "gpus = 64 needs 64 GPUs, but this machine shows"), "unclear: %s", out);
}
