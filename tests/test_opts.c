// test_opts.c: every verb reads its arguments one way (src/cli/opts.h): --help, the spellings
// of --quiet and --progress, "--opt=value" and "--opt_name", and an unknown option's one line
// with the closest option ("did you mean").
#ifndef SW_DOUBLE
#include <stdlib.h>
#include <string.h>
#include "cli/opts.h"
#include "test.h"

// The verbs `swlstm help` lists (each line "  VERB  summary"), "help" itself left out.
static int listed_verbs(char names[][16], int max) {
    char out[8192];
    if (run_swlstm("help", out, sizeof out)) return 0;
    int n = 0;
    for (char *line = strstr(out, "verbs:\n"); line && (line = strchr(line, '\n')) && n < max; line++)
        if (sscanf(line + 1, "  %15s", names[n]) == 1 && line[1] == ' ' && strcmp(names[n], "help")) n++;
    return n;
}

TEST(every_verb_prints_its_help) {
    char names[32][16], cmd[256], out[16384], head[64];
    int n = listed_verbs(names, 32);
    CHECK_EQ(n, 11);
    for (int v = 0; v < n; v++) {
        snprintf(head, sizeof head, "usage: swlstm %.15s", names[v]);
        const char *forms[] = {"%s --help", "%s -h", "%s --no-such-option --help", "help %s"};
        for (int f = 0; f < 4; f++) {
            snprintf(cmd, sizeof cmd, forms[f], names[v]);
            int rc = run_swlstm(cmd, out, sizeof out);
            CHECK_MSG(rc == 0 && !strncmp(out, head, strlen(head)), "swlstm %s: rc %d: %.200s", cmd, rc, out);
        }
    }
}

// One line on stderr, status 1, naming the option the user meant.
TEST(an_unknown_option_gets_did_you_mean) {
    static const struct { const char *args, *line; } cases[] = {
        {"sample m.ckpt --temprature 0.5", "sample: unknown option '--temprature' (did you mean '--temperature'?)"},
        {"sample m.ckpt --top_kk 3", "sample: unknown option '--top-kk' (did you mean '--top-k'?)"},
        {"eval m.ckpt --max-byte 100", "eval: unknown option '--max-byte' (did you mean '--max-bytes'?)"},
        {"mask --hiden 64", "mask: unknown option '--hiden' (did you mean '--hidden'?)"},
        {"features m.ckpt --sate c", "features: unknown option '--sate' (did you mean '--state'?)"},
        {"probe --features-file f.npy --penalti l1", "probe: unknown option '--penalti' (did you mean '--penalty'?)"},
        {"probe --dev-label l.npy", "probe: unknown option '--dev-label' (did you mean '--dev-labels'?)"},
        {"export m.ckpt --ot x", "export: unknown option '--ot' (did you mean '--out'?)"},
        {"prune m.ckpt --densty 0.5", "prune: unknown option '--densty' (did you mean '--density'?)"},
        {"units m.ckpt --unt 3", "units: unknown option '--unt' (did you mean '--unit'?)"},
        {"units m.ckpt --quite", "units: unknown option '--quite' (did you mean '--quiet'?)"},
        {"bench --trian", "bench: unknown option '--trian' (did you mean '--train'?)"},
        {"bench --probe --fold 3", "bench --probe: unknown option '--fold' (did you mean '--folds'?)"},
        {"train configs/tiny.cfg --lerning_rate 1", "unknown key 'lerning_rate' (did you mean 'learning_rate'?)"},
        {"sample m.ckpt --zzzzzzzzzz", "sample: unknown option '--zzzzzzzzzz' (see swlstm sample --help)"},
        {"info a.ckpt b.ckpt", "info: unexpected argument 'b.ckpt' (see swlstm info --help)"},
        {"sample m.ckpt --seed", "sample: option '--seed' needs a value (see swlstm sample --help)"},
    };
    char out[4096];
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        int rc = run_swlstm(cases[t].args, out, sizeof out);
        char *nl = strchr(out, '\n');
        CHECK_MSG(rc == 1 && !strncmp(out, "swlstm: error: ", 15) && strstr(out, cases[t].line) && nl && !nl[1],
                  "swlstm %s: rc %d: %s", cases[t].args, rc, out);
    }
}

// Walks argv as a verb would: progress mode, the value of --seed, and the positional argument.
static void walk(char **argv, int argc, int *progress, long *seed, const char **pos) {
    int n;
    char **args = opts_split(argc, argv, &n);
    Opts o;
    *progress = -2, *seed = -1, *pos = NULL;
    if (opts_begin(&o, "test", n, args, NULL)) {
        while (opts_next(&o)) {
            if (opts_progress(&o)) *progress = o.progress;
            else if (opts_is(&o, "--mask-seed")) *seed = opts_long(&o, 0, 100);
            else if (!opts_positional(&o, pos)) opts_unknown(&o);
        }
    }
    *pos = *pos ? (*pos[0] == 'c' ? "ckpt" : "other") : NULL;  // args is freed below
    free(args);
}

TEST(opts_spellings) {
    int progress;
    long seed;
    const char *pos;
    char *forms[][4] = {{"v", "c.ckpt", "-q", "--mask-seed=7"}, {"v", "--quiet", "--mask_seed", "7"},
                        {"v", "--mask-seed", "7", "--progress"}, {"v", "--progress", "c.ckpt", "--quiet"}};
    walk(forms[0], 4, &progress, &seed, &pos);
    CHECK(progress == 0 && seed == 7 && pos && !strcmp(pos, "ckpt"));
    walk(forms[1], 4, &progress, &seed, &pos);
    CHECK(progress == 0 && seed == 7 && !pos);
    walk(forms[2], 4, &progress, &seed, &pos);
    CHECK(progress == 1 && seed == 7 && !pos);
    walk(forms[3], 4, &progress, &seed, &pos);  // the last of the two wins
    CHECK(progress == 0 && seed == -1 && pos && !strcmp(pos, "ckpt"));
}
#endif
