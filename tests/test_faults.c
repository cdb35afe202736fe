// test_faults.c: disk faults during saves. For checkpoints, .npy and label files, an error
// (ENOSPC, EIO), a short write, or a short write then ENOSPC is injected at every system
// call of a save in turn (atomic_file.h's hook); each time the file at the path must be
// exactly the previous version or exactly the new one (never partial), no temporary file
// may remain, and a failed save must die naming the file and the cause.
#ifndef SW_DOUBLE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "io/atomic_file.h"
#include "ops/backend.h"
#include "model/model_io.h"
#include "io/npy.h"
#include "test.h"

typedef void (*SaveFn)(const char *path, int version);  // writes version 0 or 1 of a file

enum { MAX_CALLS = 256 };
enum { F_ENOSPC, F_EIO, F_SHORT, F_SHORT_THEN_ENOSPC, NKINDS };
static const char *kind_name[NKINDS] = {"ENOSPC", "EIO", "short write", "short write then ENOSPC"};
static int fault_at, fault_kind, ncalls;
static AfCall calls[MAX_CALLS];

static int hook(AfCall call, size_t *len) {
    int i = ncalls++;
    if (i < MAX_CALLS) calls[i] = call;
    int shorten = (fault_kind == F_SHORT || fault_kind == F_SHORT_THEN_ENOSPC) && i == fault_at;
    if (shorten && call == AF_WRITE && *len > 1) *len /= 2;
    if (fault_kind == F_ENOSPC && i == fault_at) return ENOSPC;
    if (fault_kind == F_EIO && i == fault_at) return EIO;
    if (fault_kind == F_SHORT_THEN_ENOSPC && i == fault_at + 1) return ENOSPC;
    return 0;
}

static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static int same_bytes(const char *path, const char *want, size_t want_len) {
    if (access(path, F_OK)) return 0;
    size_t len;
    char *got = read_text_file(path, &len, "test file");
    int same = len == want_len && !memcmp(got, want, len);
    free(got);
    return same;
}

// Saves version 1 over version 0 in a child with the fault at call k. Returns the child's
// exit status; its stderr goes to err.
static int faulty_save(SaveFn save, const char *path, int k, int kind, char *err, size_t errlen) {
    int fds[2];
    if (pipe(fds)) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fault_at = k, fault_kind = kind, ncalls = 0, af_fault_hook = hook;
        save(path, 1);
        _exit(0);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], err, errlen - 1);
    err[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// Every call index and fault kind; returns 0 and reports the first violation.
static int check_save_faults(SaveFn save, const char *name) {
    char dir[512], path[600], err[2048];
    snprintf(dir, sizeof dir, "%s", tmp_path(name));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (mkdir_p(dir)) return 0;
    size_t len0, len1;
    save(path, 1);
    char *v1 = read_text_file(path, &len1, "test file");
    fault_at = -1, ncalls = 0, af_fault_hook = hook;  // records the calls of one clean save
    save(path, 0);
    af_fault_hook = NULL;
    int n = ncalls;
    char *v0 = read_text_file(path, &len0, "test file");
    int ok = n < MAX_CALLS && calls[n - 1] == AF_DIRSYNC && !(len0 == len1 && !memcmp(v0, v1, len0));
    for (int k = 0; ok && k < n; k++)
        for (int kind = 0; ok && kind < NKINDS; kind++) {
            int st = faulty_save(save, path, k, kind, err, sizeof err);
            // The clean save's call that fails: after a short write, the resumed write.
            int hit = kind == F_SHORT ? -1 : kind == F_SHORT_THEN_ENOSPC && calls[k] != AF_WRITE ? k + 1 : k;
            int benign = hit < 0 || hit >= n;
            const char *cause = kind == F_EIO ? strerror(EIO) : strerror(ENOSPC);
            // A failed directory fsync comes after the rename: the new file is complete.
            int landed = benign || calls[hit] == AF_DIRSYNC;
            if (benign) ok = st == 0;
            else ok = st == 1 && strstr(err, path) && strstr(err, cause) && !strchr(err, '\n')[1];
            ok = ok && (landed ? same_bytes(path, v1, len1) : same_bytes(path, v0, len0)) && entries(dir) == 1;
            if (!ok) fprintf(stderr, "  %s: %s at call %d of %d (kind %d): exit %d, stderr: %s\n", name, kind_name[kind], k, n, calls[k], st, err);
            save(path, 0);  // back to version 0 for the next fault
        }
    free(v0);
    free(v1);
    return ok;
}

// ---- the files under test ----

static Model *model;
static Acts *acts;

// Version v differs in the step and one weight; adam_m/v reuse the weights (values only).
static void save_ckpt(const char *path, int v) {
    TrainState ts = {.step = 10 + v, .best_valid_bpc = 2.5};
    model->params[0] = (real)v;
    model_save(path, model, &ts, model->params, model->params, acts);
}

// Version v has one more row; big enough for several buffered writes.
static void save_npy(const char *path, int v) {
    size_t shape[2] = {300 + (size_t)v, 64};
    float *x = calloc(shape[0] * shape[1], sizeof(float));
    for (size_t i = 0; i < shape[0] * shape[1]; i++) x[i] = (float)i;
    npy_write(path, "<f4", x, 2, shape);
    free(x);
}

static void save_labels(const char *path, int v) {
    int y[5000];
    for (int i = 0; i < 5000; i++) y[i] = (i * 7 + v) % 3;
    labels_write(path, y, 5000);
}

TEST(faults_checkpoint_save_at_every_call) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 64, cfg.embed_size = 16, cfg.block_size = 16;  // ~230 KB: several writes
    model = model_create(&cfg, backend_cpu());
    acts = acts_create(model, 2, 4);
    int ok = check_save_faults(save_ckpt, "latest.ckpt");
    Ckpt c;
    ckpt_read(&c, tmp_path("latest.ckpt/latest.ckpt"));  // the survivor loads (dies if not)
    ckpt_close(&c);
    acts_free(model, acts);
    model_free(model);
    CHECK(ok);
}

TEST(faults_npy_save_at_every_call) { CHECK(check_save_faults(save_npy, "feats.npy")); }
TEST(faults_labels_txt_save_at_every_call) { CHECK(check_save_faults(save_labels, "labels.txt")); }
#endif
