// test_config.c: defaults, file and command-line parsing, errors, canonical text round trip.
#ifndef SW_DOUBLE
#include "base/common.h"
#include "model/config.h"
#include "cli/opts.h"
#include "test.h"
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static Config loaded(const char *name, const char *text) {
    Config c;
    config_defaults(&c);
    config_load_file(&c, write_file(tmp_path(name), text, strlen(text)));
    return c;
}

static void load_and_validate(void *path) {
    Config c;
    config_defaults(&c);
    config_load_file(&c, path);
    config_validate(&c);
}

// Every config the project ships loads and validates (each in a child: a bad one dies).
TEST(shipped_configs_load_and_validate) {
    DIR *d = opendir("configs");
    CHECK_MSG(d != NULL, "configs/ not found: run the tests from the repository's root");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".cfg")) continue;
        char path[600];
        snprintf(path, sizeof path, "configs/%s", e->d_name);
        int err, st;
        pid_t pid = spawn_child(load_and_validate, path, &err);
        char *text = child_stderr(pid, err, &st);
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok) test_fail(__FILE__, __LINE__, "%s: %s", path, text);
        free(text);
        if (!ok) return (void)closedir(d);
        n++;
    }
    closedir(d);
    CHECK_MSG(n >= 10, "only %d configs found in configs/", n);
}

TEST(config_defaults_values) {
    Config c;
    config_defaults(&c);
    CHECK(!strcmp(c.data, "data/corpus.txt"));
    CHECK(!strcmp(c.split, "0.9,0.05,0.05"));
    CHECK(c.device == DEVICE_CPU && c.precision == PREC_FP32 && c.lr_schedule == LR_COSINE);
    CHECK(!strcmp(c.sparsity, "dense") && c.input_sparsity[0] == 0 && c.init_from[0] == 0);
    CHECK_EQ(c.seed, 1337); CHECK_EQ(c.hidden_size, 256); CHECK_EQ(c.block_size, 16);
    CHECK_EQ(c.num_layers, 1); CHECK_EQ(c.embed_size, 64); CHECK_EQ(c.layer_norm, 0);
    CHECK_EQ(c.batch_size, 32); CHECK_EQ(c.seq_length, 64); CHECK_EQ(c.max_steps, 1000);
    CHECK(c.learning_rate == 2e-3 && c.beta1 == 0.9 && c.beta2 == 0.999 && c.adam_eps == 1e-8);
    CHECK(c.grad_clip == 1.0 && c.min_lr == 0 && c.weight_decay == 0);
    CHECK_EQ(c.eval_every, 200); CHECK_EQ(c.log_every, 10); CHECK_EQ(c.save_every, 0); CHECK_EQ(c.eval_bytes, 0);
    CHECK_EQ(c.gpus, 1); CHECK(c.dist_init[0] == 0 && c.dist_token[0] == 0 && c.dist_bucket_mb == 25);
    CHECK(c.cell == CELL_LSTM && c.init == INIT_UNIFORM && c.ema == 0);
    CHECK_EQ(c.depth, 4);
    CHECK(c.prune_to == 1 && c.prune_start == 0 && c.prune_end == 0 && c.prune_every == 100);
    CHECK(c.mask_update == MASK_UPDATE_NONE && c.mask_update_every == 100 && c.mask_update_frac == 0.3 && c.mask_update_end == 0);
    config_validate(&c);
    // one line per Config field
    char *text = config_to_text(&c);
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    CHECK_EQ(lines, 50);
    for (char *line = text; *line; line = strchr(line, '\n') + 1) {  // no key twice
        int klen = (int)strcspn(line, " ");
        for (char *o = strchr(line, '\n') + 1; *o; o = strchr(o, '\n') + 1)
            CHECK_MSG(strncmp(o, line, klen) || o[klen] != ' ', "key '%.*s' written twice", klen, line);
    }
    CHECK(strstr(text, "data = \"data/corpus.txt\"\n") != NULL);
    CHECK(strstr(text, "learning_rate = 0.002\n") != NULL);
    free(text);
}

TEST(config_file_syntax) {
    Config c = loaded("syntax.cfg",
                      "# a run\n"
                      "\n"
                      "  hidden_size = 512   # trailing comment\n"
                      "block_size=32\r\n"
                      "\tlayer_norm = yes\n"
                      "data = \"/tmp/a # b/enwik8.zip\"  # the quotes keep the '#'\n"
                      "out_dir = runs/x y\n"
                      "sparsity = \"ba_2\"\n"
                      "init_from = \"\"\n"
                      "learning_rate = 1e-3\n"
                      "split = \"say \\\"hi\\\" \\\\ ok\"\n"
                      "device = cuda");  // no final newline
    CHECK_EQ(c.hidden_size, 512);
    CHECK_EQ(c.block_size, 32);
    CHECK_EQ(c.layer_norm, 1);
    CHECK(!strcmp(c.data, "/tmp/a # b/enwik8.zip"));
    CHECK(!strcmp(c.out_dir, "runs/x y"));
    CHECK(!strcmp(c.sparsity, "ba_2"));
    CHECK(c.init_from[0] == 0);
    CHECK(c.learning_rate == 1e-3);
    CHECK(!strcmp(c.split, "say \"hi\" \\ ok"));
    CHECK(c.device == DEVICE_CUDA);
    CHECK_EQ(c.embed_size, 64);  // untouched keys keep their defaults
    const char *bools[] = {"true", "1", "yes", "TRUE", "false", "0", "no", "No"};
    for (int i = 0; i < 8; i++) {
        config_set(&c, "layer_norm", bools[i], "test");
        CHECK_EQ(c.layer_norm, i < 4);
    }
}

TEST(config_overrides) {
    Config c;
    config_defaults(&c);
    char *args[] = {"--hidden-size=512", "--sparsity=ws_4_0.1", "--learning_rate=0.01", "--init_from="};
    config_apply_overrides(&c, 4, args);
    CHECK_EQ(c.hidden_size, 512);
    CHECK(!strcmp(c.sparsity, "ws_4_0.1"));
    CHECK(c.learning_rate == 0.01);
    CHECK(c.init_from[0] == 0);
    // The same keys as "--key value" pairs, mixed with "--key=value"; a value may start with '-'.
    char *pairs[] = {"--hidden-size", "256", "--sparsity=ba_3", "--init_from", "-x.ckpt", "--data", ""};
    config_apply_overrides(&c, 7, pairs);
    CHECK_EQ(c.hidden_size, 256);
    CHECK(!strcmp(c.sparsity, "ba_3"));
    CHECK(!strcmp(c.init_from, "-x.ckpt"));
    CHECK(c.data[0] == 0);
}

// main() hands every verb "--opt=value" as "--opt" "value"; anything else passes unchanged.
TEST(opts_split_rewrites_opt_eq_value) {
    char *in[] = {"eval", "x.ckpt", "--data=/a=b/c.txt", "--json", "-n=3", "--=x", "--split", "valid", "--prime=", "--"};
    int n = 0;
    char **out = opts_split(10, in, &n);
    const char *want[] = {"eval", "x.ckpt", "--data", "/a=b/c.txt", "--json", "-n=3", "--=x", "--split", "valid",
                          "--prime", "", "--"};
    CHECK_EQ(n, 12);
    for (int i = 0; i < n; i++) CHECK_MSG(!strcmp(out[i], want[i]), "argument %d is '%s', expected '%s'", i, out[i], want[i]);
    CHECK(out[n] == NULL);
    CHECK(!strcmp(in[2], "--data=/a=b/c.txt"));  // the caller's strings are left alone
    free(out);
}

static void load_text(void *text) {
    Config c;
    config_defaults(&c);
    config_load_file(&c, write_file(tmp_path("x.cfg"), text, strlen(text)));
}

static Config with_override(char *arg) {
    Config c;
    config_defaults(&c);
    config_apply_overrides(&c, 1, &arg);
    return c;
}

static void override(void *arg) { with_override(arg); }

TEST(config_file_errors) {
    static const char *cases[][2] = {  // config text, the error it must give
        {"seed = 1\nhiden_size = 5\n", "x.cfg:2: unknown key 'hiden_size' (did you mean 'hidden_size'?)"},
        {"zzzzzzzz = 5\n", "x.cfg:1: unknown key 'zzzzzzzz' (swlstm train --help lists the keys)"},
        {"batch_size = abc\n", "x.cfg:1: key 'batch_size' = 'abc': expected a positive integer"},
        {"batch_size = 0\n", "key 'batch_size' = '0': expected a positive integer"},
        {"batch_size = 12x\n", "key 'batch_size' = '12x': expected a positive integer"},
        {"batch_size = 3000000000\n", "key 'batch_size' = '3000000000'"},
        {"max_steps = 99999999999999999999\n", "key 'max_steps' = '99999999999999999999'"},
        {"warmup_steps = -1\n", "expected a non-negative integer"},
        {"device = tpu\n", "x.cfg:1: key 'device' = 'tpu': expected one of cpu, cuda"},
        {"learning_rate = 0\n", "key 'learning_rate' = '0': expected a number > 0"},
        {"learning_rate = nan\n", "expected a number > 0"},
        {"beta2 = 1\n", "key 'beta2' = '1': expected a number in [0, 1)"},
        {"layer_norm = maybe\n", "key 'layer_norm' = 'maybe': expected true or false"},
        {"cell = gru\n", "x.cfg:1: key 'cell' = 'gru': expected one of lstm, mlstm"},
        {"init = orthogonal\n", "key 'init' = 'orthogonal': expected one of uniform, identity"},
        {"ema = 1\n", "key 'ema' = '1': expected a number in [0, 1)"},
        {"depth = 0\n", "key 'depth' = '0': expected a positive integer"},
        {"\n\nhidden_size 512\n", "x.cfg:3: expected 'key = value', got 'hidden_size 512'"},
        {"data = \"abc\n", "x.cfg:1: key 'data': bad quoted string"},
        {"data = \"a\" b\n", "x.cfg:1: key 'data': bad quoted string"},
        {"= 5\n", "x.cfg:1: expected 'key = value', got an empty key"},
        {"prune_to = 0\n", "key 'prune_to' = '0': expected a fraction in (0, 1]"},
        {"prune_to = 1.5\n", "key 'prune_to' = '1.5': expected a fraction in (0, 1]"},
        {"mask_update = magic\n", "key 'mask_update' = 'magic': expected one of none, set, rigl"},
        {"mask_update_frac = 1\n", "key 'mask_update_frac' = '1': expected a number in [0, 1)"},
        {"prune_every = 0\n", "key 'prune_every' = '0': expected a positive integer"},
        {"engine = on\n", "x.cfg:1: key 'engine' = 'on': expected one of auto, steps"},
        {"engine = persistent\n", "key 'engine' = 'persistent': expected one of auto, steps"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_DIES(load_text, (void *)cases[i][0], cases[i][1]);
}

TEST(config_override_errors) {
    static const char *cases[][2] = {  // --key=value, the error it must give
        {"--hidden_size", "command line: option '--hidden_size' needs a value"},
        {"hidden_size=5", "command line: expected --key=value or --key value, got 'hidden_size=5'"},
        {"--=5", "command line: expected --key=value or --key value, got '--=5'"},
        {"--hiden-size=5", "command line: unknown key 'hiden_size' (did you mean 'hidden_size'?)"},
        {"--precision=fp8", "command line: key 'precision' = 'fp8': expected one of fp32, bf16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_DIES(override, (void *)cases[i][0], cases[i][1]);
}

// Every choice key is an enum from here down; its names round-trip through the table.
TEST(config_choices_are_enums) {
    Config c;
    config_defaults(&c);
    config_set(&c, "cell", "mlstm", "test");
    config_set(&c, "lr_schedule", "linear", "test");
    config_set(&c, "mask_update", "rigl", "test");
    config_set(&c, "nan_policy", "skip", "test");
    config_set(&c, "engine", "steps", "test");
    CHECK(c.cell == CELL_MLSTM && c.lr_schedule == LR_LINEAR && c.mask_update == MASK_UPDATE_RIGL);
    CHECK(c.nan_policy == NAN_SKIP && c.engine == ENGINE_STEPS);
    CHECK(!strcmp(CFG_NAME(&c, cell), "mlstm") && !strcmp(CFG_NAME(&c, lr_schedule), "linear"));
    CHECK_EQ(config_parse_choice("precision", "bf16", "test"), PREC_BF16);
    char *text = config_to_text(&c);
    CHECK(strstr(text, "cell = mlstm\n") && strstr(text, "engine = steps\n") && strstr(text, "mask_update = rigl\n"));
    free(text);
    config_set(&c, "engine", "wgmma", "test");
    text = config_to_text(&c);
    CHECK(c.engine == ENGINE_WGMMA && strstr(text, "engine = wgmma\n"));
    free(text);
}

// A checkpoint written before engine = on and persistent were retired still loads, as auto.
TEST(config_saved_text_maps_retired_values) {
    Config c;
    config_defaults(&c);
    config_from_saved_text(&c, "engine = persistent\ncell = mlstm\n", "old.ckpt");
    CHECK(c.engine == ENGINE_AUTO && c.cell == CELL_MLSTM);
    config_set(&c, "engine", "steps", "test");
    config_from_saved_text(&c, "engine = on\n", "old.ckpt");
    CHECK(c.engine == ENGINE_AUTO);
}

static void parse_device(void *v) { config_parse_choice("device", v, "sample --device"); }

TEST(config_parse_choice_errors) {
    CHECK_DIES(parse_device, (void *)"gpu", "sample --device = 'gpu': expected one of cpu, cuda");
}

// Every key once, typed: doubles with a point (a JSON reader gets a float), choices and strings
// quoted (escapes as JSON's).
TEST(config_json_types_every_key) {
    Config c;
    config_defaults(&c);
    snprintf(c.out_dir, sizeof c.out_dir, "a\"b");
    c.learning_rate = 1;
    char *j = config_to_json(&c), *t = config_to_text(&c);
    const char *head = "{\"data\": \"data/corpus.txt\", \"split\": \"0.9,0.05,0.05\", ";
    CHECK_MSG(!strncmp(j, head, strlen(head)) &&
              j[strlen(j) - 1] == '}', "%s", j);
    CHECK_MSG(strstr(j, ", \"out_dir\": \"a\\\"b\", \"device\": \"cpu\", ") && strstr(j, ", \"learning_rate\": 1.0, ") &&
              strstr(j, ", \"layer_norm\": false, ") && strstr(j, ", \"hidden_size\": 256, "), "%s", j);
    int keys = 0, lines = 0;
    for (const char *p = j; (p = strstr(p, "\": ")); p++) keys++;
    for (const char *p = t; (p = strchr(p, '\n')); p++) lines++;
    CHECK_EQ(keys, lines);
    free(j);
    free(t);
}

TEST(config_text_round_trip) {
    Config a, b;
    config_defaults(&a);
    config_defaults(&b);
    char *args[] = {"--data=/d/\"q\" #x\\y", "--split=100,10,10", "--device=cuda", "--precision=bf16",
                    "--seed=0", "--threads=3", "--hidden_size=1024", "--num_layers=4", "--embed_size=7",
                    "--block_size=32", "--sparsity=ba_3", "--input_sparsity=random_0.25", "--mask_seed=9",
                    "--layer_norm=1", "--learning_rate=0.1", "--min_lr=1e-300", "--lr_schedule=linear",
                    "--warmup_steps=5", "--max_steps=123456789012", "--beta1=0.30000000000000004",
                    "--beta2=0", "--adam_eps=3.3e-7", "--weight_decay=0.1", "--grad_clip=0",
                    "--nan_policy=skip", "--log_every=1", "--eval_every=7", "--eval_bytes=5000000",
                    "--save_every=100", "--out_dir=r", "--init_from=x.ckpt", "--batch_size=5", "--seq_length=9",
                    "--prune_to=0.25", "--prune_start=10", "--prune_end=90", "--prune_every=7", "--mask_update=rigl",
                    "--mask_update_every=3", "--mask_update_frac=0.1", "--mask_update_end=77"};
    config_apply_overrides(&a, (int)(sizeof args / sizeof args[0]), args);
    char *text = config_to_text(&a);
    config_from_text(&b, text, "round trip");
    CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "configs differ after a round trip:\n%s", text);
    char *again = config_to_text(&b);
    CHECK(!strcmp(text, again));
    free(text);
    free(again);
    Config d;
    config_defaults(&d);
    CHECK(memcmp(&a, &d, sizeof a) != 0);  // the overrides really changed the config
}

// arg: overrides separated by spaces.
static void validate_with(void *arg) {
    char *buf = strdup(arg), *args[8];
    int n = 0;
    for (char *t = strtok(buf, " "); t && n < 8; t = strtok(NULL, " ")) args[n++] = t;
    Config c;
    config_defaults(&c);
    config_apply_overrides(&c, n, args);
    config_validate(&c);
}

TEST(config_validate_errors) {
    static const char *cases[][2] = {  // override, the error config_validate must give
        {"--hidden_size=100", "hidden_size = 100 is not a multiple of block_size = 16"},
        {"--block_size=12", "block_size = 12: expected 8, 16 or 32"},
        {"--num_layers=9", "num_layers = 9: expected 1 to 8"},
        {"--sparsity=bogus", "swlstm: error: sparsity: sparsity 'bogus'"},
        {"--input_sparsity=ba_99", "input_sparsity: sparsity 'ba_99'"},
        {"--precision=bf16", "precision = bf16 needs device = cuda"},
        {"--min_lr=0.1", "min_lr = 0.1 is above learning_rate = 0.002"},
        {"--warmup_steps=2000", "warmup_steps = 2000 is more than max_steps = 1000"},
        {"--data=", "data: empty path"},
        {"--depth=1", "depth = 1: expected 2 to 8 (the mlstm's internal steps)"},
        {"--depth=9", "depth = 9: expected 2 to 8"},
        {"--prune_to=0.5 --prune_start=100 --prune_end=100", "prune_end = 100: expected a step after prune_start = 100"},
        {"--prune_to=0.5", "prune_end = 0: expected a step after prune_start = 0"},
        {"--mask_update=rigl", "mask_update = rigl: sparsity = dense leaves no block to regrow"},
        {"--mask_update=set --sparsity=ba_2 --mask_update_end=50", "mask_update_end = 50: expected at least mask_update_every = 100"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_DIES(validate_with, (void *)cases[i][0], cases[i][1]);
}

// Every key on its own "  key ..." line, with its default.
TEST(config_help_lists_every_key) {
    fflush(stdout);
    int saved = dup(1), fd = open(tmp_path("help.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    config_print_help();
    fflush(stdout);
    dup2(saved, 1);
    close(fd);
    close(saved);
    char *help = read_text_file(tmp_path("help.txt"), NULL, "help");
    int keys = 0;
    for (char *p = strstr(help, "\n  "); p; p = strstr(p + 1, "\n  ")) keys++;
    CHECK_EQ(keys, 50);
    CHECK(strstr(help, "\n  cell ") && strstr(help, "(default lstm; one of lstm, mlstm)") && strstr(help, "\n  depth "));
    CHECK(strstr(help, "\n  init ") && strstr(help, "\n  ema ") && strstr(help, "(default uniform; one of uniform, identity)"));
    CHECK(strstr(help, "\n  hidden_size ") && strstr(help, "(default 256)"));
    CHECK(strstr(help, "(default cpu; one of cpu, cuda)"));
    free(help);
}
#endif
