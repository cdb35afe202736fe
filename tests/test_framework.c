// test_framework.c: the registry, process helpers and main() of the test binaries.
#include "test.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "io/ckpt.h"
#include "model/model_io.h"

typedef struct { const char *name, *file; test_fn fn; } TestCase;
static TestCase tests[1024];
static int ntests, cur_failed;
static char cur_skip[200];

void test_register(const char *name, const char *file, test_fn fn) {
    if (ntests < 1024) tests[ntests++] = (TestCase){name, file, fn};
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    cur_failed = 1;
}

static char tmpdir[256];
static pid_t tmpdir_owner;  // forked children (CHECK_DIES) must not remove it at exit
const char *test_tmpdir(void) {
    if (!tmpdir[0]) {
        tmpdir_owner = getpid();
        snprintf(tmpdir, sizeof tmpdir, "/tmp/swlstm-test-XXXXXX");
        if (!mkdtemp(tmpdir)) { perror("mkdtemp"); exit(2); }
    }
    return tmpdir;
}

const char *tmp_path(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

const char *shared_data(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    const char *root = getenv("SWLSTM_SHARED_DATA");
    snprintf(p, 512, "%s/%s", root ? root : "../shared/data", name);
    return access(p, R_OK) == 0 ? p : NULL;
}

const char *write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) { perror(path); exit(2); }
    return path;
}

double test_rand(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) * (1.0 / 9007199254740992.0);
}

static char *read_fd_all(int fd) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while ((got = read(fd, buf + n, cap - n - 1)) > 0) {
        n += (size_t)got;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    return buf;
}

pid_t spawn_child(void (*fn)(void *), void *arg, int *err) {
    int fds[2];
    if (pipe(fds)) { perror("pipe"); exit(2); }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    *err = fds[0];
    return pid;
}

char *child_stderr(pid_t pid, int err, int *status) {
    char *text = read_fd_all(err);
    close(err);
    *status = 0;
    waitpid(pid, status, 0);
    return text;
}

int expect_die(void (*fn)(void *), void *arg, const char *needle) {
    int err, st;
    pid_t pid = spawn_child(fn, arg, &err);
    char *text = child_stderr(pid, err, &st);
    int exited_nonzero = WIFEXITED(st) && WEXITSTATUS(st) != 0;
    int ok = exited_nonzero && strstr(text, needle) != NULL;
    if (!ok) fprintf(stderr, "  child status %d, stderr: %s\n", st, text);
    free(text);
    return ok;
}

int run_shell(const char *cmd, char *out, size_t outlen) {
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = 0;
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && n + 1 < outlen) {
            size_t take = got < outlen - 1 - n ? got : outlen - 1 - n;
            memcpy(out + n, tmp, take);
            n += take;
        }
    }
    if (out && outlen) out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int run_swlstm(const char *args, char *out, size_t outlen) {
    const char *bin = getenv("SWLSTM_BIN");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin ? bin : "./swlstm", args);
    return run_shell(cmd, out, outlen);
}

const char *progress_off_a_terminal(const char *verb, const char *args) {
    static char why[8192];
    static const char *opt[] = {"", " --quiet", " --progress"};
    const char *bin = getenv("SWLSTM_BIN") ? getenv("SWLSTM_BIN") : "./swlstm";
    char cmd[4096], err[4096], out[3][4096], errf[512], head[64];
    snprintf(errf, sizeof errf, "%s", tmp_path("progress.err"));
    snprintf(head, sizeof head, "%s: 100.0%% | 0m0", verb);
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s %s %s%s 2>%s", bin, verb, args, opt[i], errf);
        if (run_shell(cmd, out[i], sizeof out[i])) return snprintf(why, sizeof why, "%s: failed: %s", cmd, out[i]), why;
        snprintf(cmd, sizeof cmd, "cat %s", errf);
        if (run_shell(cmd, err, sizeof err)) return snprintf(why, sizeof why, "%s: no stderr file", verb), why;
        int ok = i < 2 ? !err[0] : !strncmp(err, head, strlen(head)) && strstr(err, "s | done\n") && !strchr(err, '\n')[1];
        if (!ok) return snprintf(why, sizeof why, "%s%s: stderr '%s'", verb, opt[i], err), why;
        if (strcmp(out[i], out[0])) return snprintf(why, sizeof why, "%s%s: stdout '%s', without: '%s'", verb, opt[i], out[i], out[0]), why;
    }
    return NULL;
}

static void cleanup_tmp(void) {
    if (tmpdir[0] && getpid() == tmpdir_owner && !getenv("KEEP_TEST_TMP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd)) {}
    }
}

void test_skip(const char *why) { snprintf(cur_skip, sizeof cur_skip, "%s", why); }

// A test runs when no filter is given or its name contains one of them.
static int selected(const char *name, int nfilter, char **filter) {
    for (int i = 0; i < nfilter; i++)
        if (strstr(name, filter[i])) return 1;
    return nfilter == 0;
}

// Usage: tests [substring-filter ...]
int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);  // a log cut by a timeout still shows how far it got
    atexit(cleanup_tmp);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < ntests; i++) {
        if (!selected(tests[i].name, argc - 1, argv + 1)) continue;
        cur_failed = 0;
        cur_skip[0] = 0;
        printf("%-44s ", tests[i].name);
        fflush(stdout);
        tests[i].fn();
        if (cur_failed) { failed++; printf("FAIL\n"); fprintf(stderr, "  (in %s)\n", tests[i].file); }
        else if (cur_skip[0]) { skipped++; printf("skipped: %s\n", cur_skip); }
        else { passed++; printf("ok\n"); }
    }
    if (skipped) printf("%d skipped (listed above)\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int ckpt_same_section(const char *a, const char *b, const char *tag) {
    Ckpt ca, cb;
    ckpt_read(&ca, a);
    ckpt_read(&cb, b);
    const CkptSection *sa = ckpt_find(&ca, tag, 1), *sb = ckpt_find(&cb, tag, 1);
    int same = sa->len == sb->len && memcmp(sa->data, sb->data, sa->len) == 0;
    ckpt_close(&ca);
    ckpt_close(&cb);
    return same;
}

int chdir_repo_root(void) {
    for (int up = 0; up < 3; up++) {
        struct stat st;
        if (!stat("docs/ARCHITECTURE.md", &st) && !stat("src", &st)) return 1;
        if (chdir("..")) return 0;
    }
    return 0;
}

Model *ckpt_model(const char *path, int device, int precision) {
    Ckpt c;
    ckpt_read(&c, path);
    Model *m = model_from_ckpt(&c, device, precision);
    ckpt_close(&c);
    return m;
}
