// test_bench.c: `swlstm bench`: every row of its tables is a config that validates, the probe
// table on saved features, and its options' errors.
#ifndef SW_DOUBLE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "bench/shapes.h"
#include "io/npy.h"
#include "probe_fixture.h"
#include "test.h"

static void validate_rows(void *arg) {
    (void)arg;
    Config c;
    for (int i = 0; i < bench_n_train_shapes; i++) {
        bench_train_config(&c, &bench_train_shapes[i]);
        config_validate(&c);
    }
    for (int i = 0; i < bench_n_sample_shapes; i++) {
        const SampleShape *s = &bench_sample_shapes[i];
        bench_model_config(&c, s->H, s->mask, s->prec, s->depth);
        config_validate(&c);
    }
}

// The --train and --sample rows are configs training would accept (in a child: a bad one dies).
TEST(bench_rows_are_valid_configs) {
    int err, st;
    pid_t pid = spawn_child(validate_rows, NULL, &err);
    char *text = child_stderr(pid, err, &st);
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) test_fail(__FILE__, __LINE__, "a bench row does not validate: %s", text);
    free(text);
    CHECK(bench_n_train_shapes > 0 && bench_n_sample_shapes > 0 && bench_n_kernel_shapes > 0 && bench_n_probe_shapes > 0);
}

TEST(bench_probe_times_saved_features) {
    enum { N = 120, D = 10 };
    float X[N * D];
    int y[N];
    correlated_rows(X, y, N, D, 5);
    npy_write(tmp_path("bf.npy"), "<f4", X, 2, (size_t[]){N, D});
    npy_write(tmp_path("bl.npy"), "<i4", y, 1, (size_t[]){N});
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "bench --probe --features-file %s --labels %s --folds 3 --penalty l2", tmp_path("bf.npy"),
             tmp_path("bl.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    const char *head = "| task | train rows x d | select | pen. | wall time | target | sel. acc | chosen | non-zero | converged fits |\n"
                       "|---|---|---|---|---|---|---|---|---|---|\n";
    CHECK_MSG(strstr(out, head) && strstr(out, "| files      |   120 x   10 | 3-fold   | l2   |"), "output: %s", out);
    snprintf(cmd, sizeof cmd, "bench --probe --features-file %s --folds 3", tmp_path("bf.npy"));
    CHECK(run_swlstm(cmd, out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --probe: --features-file needs --labels"), "output: %s", out);
}

TEST(bench_options_errors) {
    char out[4096];
    CHECK(run_swlstm("bench --probe --only sst3", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --probe --only 'sst3': expected mr or sst2 (with --checkpoint), sst2-l2"), "output: %s", out);
    CHECK(run_swlstm("bench --train --dtype fp16", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --dtype = 'fp16': expected one of fp32, bf16"), "output: %s", out);
    CHECK(run_swlstm("bench --train --cell gru", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --cell = 'gru': expected one of lstm, mlstm"), "output: %s", out);
    CHECK(run_swlstm("bench --bs", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: option '--bs' needs a value"), "output: %s", out);
    CHECK(run_swlstm("bench --fast", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: unknown option '--fast'"), "output: %s", out);
#ifndef SW_CUDA
    CHECK(run_swlstm("bench --train", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: this swlstm was built without CUDA"), "output: %s", out);
#endif
}
#endif
