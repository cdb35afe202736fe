// harness.c: scratch files, the die() escape and leak bookkeeping of the fuzz targets; in
// the test build, the replay test of every file kept under tests/fuzz/<target>/.
#include "harness.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

jmp_buf fuzz_jmp;

char *fuzz_str(const void *data, size_t size) {
    char *s = xmalloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

#ifdef SW_LIBFUZZER
#include <sanitizer/allocator_interface.h>

// Blocks allocated during the current input and not yet freed (the target is single-threaded).
enum { MAX_LIVE = 1 << 16, MAX_FD = 16 };  // inputs open a few files: low numbers
static const volatile void *live[MAX_LIVE];
static int nlive, tracking, overflow;
static uint8_t fd_open[MAX_FD];

static void on_malloc(const volatile void *p, size_t n) {
    if (!tracking) return;
    if (nlive == MAX_LIVE) overflow = 1;
    else live[nlive++] = p;
}

static void on_free(const volatile void *p) {
    if (!tracking) return;
    for (int i = nlive - 1; i >= 0; i--)
        if (live[i] == p) { live[i] = live[--nlive]; return; }
}

static void jump_out(void) { longjmp(fuzz_jmp, 1); }

void fuzz_begin(void) {
    static int hooked;
    if (!hooked) hooked = 1, __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
    for (int fd = 0; fd < MAX_FD; fd++) fd_open[fd] = fcntl(fd, F_GETFD) != -1;
    nlive = overflow = 0;
    tracking = 1;
    die_hook = jump_out;
}

// Closes descriptors opened since fuzz_begin; returns how many.
static int close_new_fds(void) {
    int n = 0;
    for (int fd = 0; fd < MAX_FD; fd++)
        if (!fd_open[fd] && fcntl(fd, F_GETFD) != -1) close(fd), n++;
    return n;
}

void fuzz_end(int died) {
    tracking = 0;
    die_hook = NULL;
    int fds = close_new_fds();
    if (!died && fds) { fprintf(stderr, "fuzz: %d file descriptor(s) leaked on success\n", fds); abort(); }
    // A descriptor left open at a die() may belong to a FILE that glibc still lists:
    // freeing it would corrupt that list, so that rare input's memory is left leaked.
    if (died && !fds && !overflow)
        for (int i = 0; i < nlive; i++) free((void *)live[i]);
    nlive = 0;
}

const char *fuzz_file(const void *data, size_t size, const char *suffix) {
    static char path[256];
    snprintf(path, sizeof path, "%s/swlstm-fuzz-%ld%s", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm",
             (long)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f)) { perror(path); abort(); }
    return path;
}

void fuzz_register(const char *name, fuzz_fn fn) { (void)name, (void)fn; }

#else  // replay in the test build: each file runs in a child; die() exits it with status 1

#include <dirent.h>
#include <sys/wait.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "test.h"

void fuzz_begin(void) {}
void fuzz_end(int died) { (void)died; }

const char *fuzz_file(const void *data, size_t size, const char *suffix) {
    char name[64];
    snprintf(name, sizeof name, "fuzz-input%s", suffix);
    return write_file(tmp_path(name), data, size);
}

static struct { const char *name; fuzz_fn fn; } targets[32];
static int ntargets;

void fuzz_register(const char *name, fuzz_fn fn) {
    if (ntargets < 32) targets[ntargets].name = name, targets[ntargets++].fn = fn;
}

// Runs fn on the file in a child: 1 if it returned, or died with a one-line "swlstm: error".
static int replay_ok(fuzz_fn fn, const char *path) {
    size_t n;
    char *data = read_text_file(path, &n, "fuzz input");
    char err[512] = "";
    int fds[2];
    if (pipe(fds)) return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
#ifdef _OPENMP
        omp_set_num_threads(1);  // the parent's OpenMP thread pool does not survive fork
#endif
        fn((const uint8_t *)data, n);
        _exit(0);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], err, sizeof err - 1);
    err[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    free(data);
    int ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || (WEXITSTATUS(st) == 1 && !strncmp(err, "swlstm: error: ", 15)));
    if (!ok) fprintf(stderr, "  %s: status %d, stderr: %s\n", path, st, err);
    return ok;
}

TEST(fuzz_inputs_replay_cleanly) {
    const char *root = getenv("SWLSTM_FUZZ_DIR") ? getenv("SWLSTM_FUZZ_DIR") : "tests/fuzz";
    int files = 0;
    for (int t = 0; t < ntargets; t++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", root, targets[t].name);
        DIR *d = opendir(dir);
        CHECK_MSG(d, "no inputs directory %s", dir);
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            files++;
            if (!replay_ok(targets[t].fn, path)) { closedir(d); CHECK_MSG(0, "%s crashed or failed uncleanly", path); }
        }
        closedir(d);
    }
    CHECK(ntargets >= 7);
    CHECK(files >= ntargets);
}
#endif
