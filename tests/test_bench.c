// test_bench.c: `swlstm bench`: every row of its tables is a config that validates, the probe
// table on saved features, and its options' errors.
#ifndef SW_DOUBLE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench/shapes.h"
#include "base/common.h"
#include "bench/table.h"
#include "io/npy.h"
#include "model/model.h"
#include "model/model_io.h"
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
    const char *head = "| task | train rows | d | select | penalties | wall s | target s | sel. acc | chosen | C | non-zero | converged fits |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    CHECK_MSG(strstr(out, head) && strstr(out, "| files      |   120 |   10 | 3-fold   | l2   |"), "output: %s", out);
    // --json: the row alone on stdout, keyed by the columns, numbers as numbers, no target as null.
    snprintf(cmd, sizeof cmd, "bench --probe --json --features-file %s --labels %s --folds 3 --penalty l2 2>/dev/null",
             tmp_path("bf.npy"), tmp_path("bl.npy"));
    CHECK_EQ(run_swlstm(cmd, out, sizeof out), 0);
    const char *start = "{\"table\":\"probe\",\"task\":\"files\",\"train_rows\":120,\"d\":10,\"select\":\"3-fold\","
                        "\"penalties\":\"l2\",\"wall_s\":";
    CHECK_MSG(!strncmp(out, start, strlen(start)) && strstr(out, ",\"target_s\":null,\"sel_acc\":0.") &&
              strstr(out, ",\"chosen\":\"l2\",\"c\":") && strstr(out, ",\"non_zero\":10,\"converged_fits\":\"") &&
              strchr(out, '\n') == out + strlen(out) - 1, "output: %s", out);
    snprintf(cmd, sizeof cmd, "bench --probe --features-file %s --folds 3", tmp_path("bf.npy"));
    CHECK(run_swlstm(cmd, out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --probe: --features-file needs --labels"), "output: %s", out);
}

// table_row's JSON for the cells every table prints: numbers (a trailing % too), "-", "n/a ...",
// empty cells and text with a quote.
TEST(bench_table_rows_as_json) {
    fflush(stdout);
    int saved = dup(1), fd = open(tmp_path("rows.json"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    table_json(1);
    table_head("t", "| bs | density | fwd, x bf16 us | fwd, x bf16 %copy | %copy | cuSPARSE BSR us | checked | note |");
    table_row("| %2d | %5.1f%% | %s | %3.0f%% | %7s | %s | a\"b |\n", 32, 10.0, "- | -", 42.0, "n/a", "");
    table_json(0);
    fflush(stdout);
    dup2(saved, 1);
    close(fd);
    close(saved);
    char *got = read_text_file(tmp_path("rows.json"), NULL, "rows");
    CHECK_MSG(!strcmp(got, "{\"table\":\"t\",\"bs\":32,\"density\":10,\"fwd_x_bf16_us\":null,\"fwd_x_bf16_pct_copy\":null,"
                           "\"pct_copy\":42,\"cusparse_bsr_us\":null,\"checked\":null,\"note\":\"a\\\"b\"}\n"), "%s", got);
    free(got);
}

static void two_columns_alike(void *arg) {
    (void)arg;
    table_head("t", "| GB/s | GB/s |");
}

static void a_cell_too_many(void *arg) {
    (void)arg;
    table_json(1);
    table_head("t", "| a | b |");
    table_row("| 1 | 2 | 3 |\n");
}

TEST(bench_table_columns_have_distinct_keys_and_rows_their_count) {
    CHECK_DIES(two_columns_alike, NULL, "bench table t: two columns named 'gb_s'");
    CHECK_DIES(a_cell_too_many, NULL, "bench table t: a row of 3 cells under 2 columns");
}

// A plain LSTM checkpoint the wgmma step does not run (blocks of 8, a batch of 4).
static const char *blocks_of_8_ckpt(void) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 32, cfg.block_size = 8, cfg.embed_size = 8, cfg.batch_size = 4, cfg.threads = 1;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_1");
    Model *m = model_create(&cfg, backend_cpu());
    const char *path = tmp_path("bench_b8.ckpt");
    model_save(path, m, NULL, NULL, NULL, NULL);
    model_free(m);
    return path;
}

TEST(bench_options_errors) {
    char out[4096], cmd[1024];
    CHECK(run_swlstm("bench --probe --only sst3", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --probe --only 'sst3': expected mr or sst2 (with --checkpoint), sst2-l2"), "output: %s", out);
    CHECK(run_swlstm("bench --train --dtype fp16", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --dtype = 'fp16': expected one of fp32, bf16"), "output: %s", out);
    CHECK(run_swlstm("bench --train --cell gru", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench --cell = 'gru': expected one of lstm, mlstm"), "output: %s", out);
    CHECK(run_swlstm("bench --bs", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: option '--bs' needs a value"), "output: %s", out);
    CHECK(run_swlstm("bench --data corpus.txt", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: --data corpus.txt: only --wgmma reads a corpus"), "output: %s", out);
    CHECK(run_swlstm("bench --wgmma --data /nonexistent/corpus.txt", out, sizeof out) != 0);  // read before the device
    CHECK_MSG(strstr(out, "data file '/nonexistent/corpus.txt': cannot open"), "output: %s", out);
    const char *b8 = blocks_of_8_ckpt();
    snprintf(cmd, sizeof cmd, "bench --wgmma --checkpoint %s", b8);  // read before the device
    CHECK(run_swlstm(cmd, out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "the wgmma step runs a plain LSTM's layer 0 with block_size = 32") &&
                  strstr(out, "this one has cell = lstm, block_size = 8, layer norm off, batch_size = 4"),
              "output: %s", out);
    snprintf(cmd, sizeof cmd, "bench --checkpoint %s", b8);
    CHECK(run_swlstm(cmd, out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "only --wgmma and --probe read a checkpoint"), "output: %s", out);
    CHECK(run_swlstm("bench --fast", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: unknown option '--fast'"), "output: %s", out);
#ifndef SW_CUDA
    CHECK(run_swlstm("bench --train", out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "bench: this swlstm was built without CUDA"), "output: %s", out);
#endif
}
#endif
