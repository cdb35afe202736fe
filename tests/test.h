// test.h: a small test framework. TEST(name) registers a test at load time; CHECK* macros
// report the first failure of a test and return from it.
#pragma once
#include <math.h>
#include <stddef.h>
#include <sys/types.h>

typedef void (*test_fn)(void);
void test_register(const char *name, const char *file, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define TEST(name)                                                                 \
    static void name(void);                                                        \
    __attribute__((constructor)) static void register_##name(void) {               \
        test_register(#name, __FILE__, name);                                      \
    }                                                                              \
    static void name(void)

#define CHECK(cond)                                                                \
    do { if (!(cond)) { test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); return; } } while (0)
#define CHECK_MSG(cond, ...)                                                       \
    do { if (!(cond)) { test_fail(__FILE__, __LINE__, __VA_ARGS__); return; } } while (0)
#define CHECK_EQ(a, b)                                                             \
    do { long long _a = (long long)(a), _b = (long long)(b);                       \
         if (_a != _b) { test_fail(__FILE__, __LINE__, "%s = %lld, expected %s = %lld", #a, _a, #b, _b); return; } } while (0)
#define CHECK_NEAR(a, b, tol)                                                      \
    do { double _a = (double)(a), _b = (double)(b), _t = (double)(tol);            \
         if (!(fabs(_a - _b) <= _t)) { test_fail(__FILE__, __LINE__, "%s = %.10g, expected %s = %.10g (tol %g)", #a, _a, #b, _b, _t); return; } } while (0)

// Runs fn(arg) in a child process. Returns 1 if the child exited non-zero and its stderr
// contains `needle` (the clear one-line error), else reports why and returns 0.
int expect_die(void (*fn)(void *), void *arg, const char *needle);
#define CHECK_DIES(fn, arg, needle) do { if (!expect_die(fn, arg, needle)) { test_fail(__FILE__, __LINE__, "expected %s to fail with '%s'", #fn, needle); return; } } while (0)
// Runs fn(arg) in a forked child (which exits 0 if fn returns) whose stderr goes to a pipe;
// returns the child's pid, and the pipe's read end in *err.
pid_t spawn_child(void (*fn)(void *), void *arg, int *err);
// Reads that pipe to its end and closes it, waits for the child (*status: its wait status);
// returns what the child wrote (caller frees).
char *child_stderr(pid_t pid, int err, int *status);

// Marks the running test skipped (shown with the reason and counted apart) when the machine
// lacks what it needs, e.g. a second GPU. Return from the test after calling it.
void test_skip(const char *why);
// Runs cmd through the shell (popen); the output (truncated to outlen-1) goes to out if
// non-NULL. Returns the exit status (128 if it did not exit normally).
int run_shell(const char *cmd, char *out, size_t outlen);
// Runs "$SWLSTM_BIN <args>" through the shell with stderr merged into stdout. Returns the
// exit status; the output (truncated to outlen-1) goes to out if non-NULL.
int run_swlstm(const char *args, char *out, size_t outlen);
// Runs "$SWLSTM_BIN VERB ARGS" as given, with --quiet and with --progress, stderr to a file (not
// a terminal). Returns NULL when the first two write nothing on stderr, the third one line
// "VERB: 100.0% | TIME | done", and all three the same stdout; else what differs.
const char *progress_off_a_terminal(const char *verb, const char *args);
// A fresh directory for this test run (removed at exit unless KEEP_TEST_TMP is set).
const char *test_tmpdir(void);
// Joins test_tmpdir() and name into a static rotating buffer.
const char *tmp_path(const char *name);
// Path of a file in ../shared/data (or $SWLSTM_SHARED_DATA). NULL if absent.
const char *shared_data(const char *name);
// Writes bytes to path; returns path.
const char *write_file(const char *path, const void *data, size_t len);
// Whether section `tag` holds the same bytes in checkpoints a and b (both must have it).
int ckpt_same_section(const char *a, const char *b, const char *tag);
// The model a checkpoint file holds, its weights and moving average, on a device (a Device
// or CKPT_CHOICE; the precision likewise): read whole, then model_from_ckpt, as export does.
struct Model;
struct Model *ckpt_model(const char *path, int device, int precision);
// Makes the repository root the working directory: tests run from it (make test, tests/run.sh);
// a run from tests/ or a build folder finds it one or two levels up. 0 if it is not found.
int chdir_repo_root(void);
// Seeded uniform numbers for tests.
double test_rand(unsigned long long *state);
