// cmd_train.c: the `train` verb: a config file with command-line overrides, then the
// training run (train/train.c).
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/opts.h"
#include "cli/verbs.h"
#include "model/model_io.h"
#include "train/trainer.h"

static void train_usage(void) {
    printf("usage: swlstm train CONFIG [--key value ...] [--resume CKPT] [--stop-after STEP] [--overwrite]\n"
           "Trains a char-LM described by CONFIG (key = value lines). Any key can be overridden\n"
           "on the command line, as --key value or --key=value. --resume continues a run\n"
           "bit-exactly from a checkpoint's full training state, writing beside CKPT unless\n"
           "--out_dir is given; --stop-after ends early with a checkpoint. A new run refuses an\n"
           "out_dir that holds another run's checkpoints; --overwrite replaces them. Keys:\n\n");
    config_print_help();
}

// A resumed run reads the corpus its checkpoint was trained on unless --data names one: the
// config file's path may be another machine's, or the quick start's --data.
static void resume_data_path(Config *cfg, const char *ckpt_path) {
    static const char *const all_but_config[] = {"masks", "params", "ema", "adam_m", "adam_v", "state", "hidden", NULL};
    Ckpt c;
    Config ck;
    ckpt_read_except(&c, ckpt_path, all_but_config);
    ckpt_config(&c, &ck);
    ckpt_close(&c);
    if (!strcmp(ck.data, cfg->data) || access(ck.data, R_OK)) return;
    printf("--resume: data = %s (the checkpoint's corpus; --data=PATH for another)\n", ck.data);
    memcpy(cfg->data, ck.data, sizeof cfg->data);
}

// Whether option a (--name or --name=value) sets config key `key` ('-' and '_' alike).
static int sets_key(const char *a, const char *key) {
    a += 2;
    for (; *key; a++, key++)
        if (*a != *key && !(*a == '-' && *key == '_')) return 0;
    return !*a || *a == '=';
}

// A resumed run writes beside its checkpoint unless --out_dir names another folder.
static void resume_out_dir(Config *cfg, const char *ckpt_path) {
    char dir[sizeof cfg->out_dir];
    snprintf(dir, sizeof dir, "%s", ckpt_path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else slash[slash == dir] = 0;  // "/x.ckpt" is in "/"
    if (!strcmp(dir, cfg->out_dir)) return;
    printf("--resume: out_dir = %s (the checkpoint's folder; --out_dir=DIR for another)\n", dir);
    memcpy(cfg->out_dir, dir, sizeof dir);
}

int cmd_train(int argc, char **argv) {
    Trainer tr = {.stop_after = -1};
    const char *cfg_path = NULL;
    Opts o;
    if (!opts_begin(&o, "train", argc, argv, train_usage)) return 0;
    char **over = xmalloc(sizeof(char *) * (size_t)argc);
    int nover = 0, data_given = 0, out_dir_given = 0;
    while (opts_next(&o)) {
        if (opts_is(&o, "--resume")) tr.resume_path = opts_value(&o);
        else if (opts_is(&o, "--stop-after")) tr.stop_after = opts_long(&o, 1, LONG_MAX);
        else if (opts_is(&o, "--overwrite")) tr.overwrite = 1;
        else if (!strncmp(o.arg, "--", 2)) {  // a config key: config_apply_overrides checks it
            data_given |= sets_key(o.arg, "data");
            out_dir_given |= sets_key(o.arg, "out_dir");
            over[nover++] = argv[o.i];
            if (!strchr(o.arg, '=') && o.i + 1 < argc) over[nover++] = (char *)opts_value(&o);
        } else if (!opts_positional(&o, &cfg_path)) die("train: unexpected argument '%s' (one CONFIG file; keys as --key value or --key=value)", o.arg);
    }
    if (!cfg_path) die("train: missing CONFIG (usage: swlstm train CONFIG [--key value ...] [--resume CKPT])");
    config_defaults(&tr.cfg);
    config_load_file(&tr.cfg, cfg_path);
    config_apply_overrides(&tr.cfg, nover, over);
    free(over);
    if (tr.resume_path && !data_given) resume_data_path(&tr.cfg, tr.resume_path);
    if (tr.resume_path && !out_dir_given) resume_out_dir(&tr.cfg, tr.resume_path);
    if (tr.cfg.warmup_steps > tr.cfg.max_steps) {  // a short run (--max_steps=10) warms up over all its steps
        printf("warmup_steps = %ld is more than max_steps = %ld: the warm-up ends at step %ld\n", tr.cfg.warmup_steps,
               tr.cfg.max_steps, tr.cfg.max_steps);
        tr.cfg.warmup_steps = tr.cfg.max_steps;
    }
    config_validate(&tr.cfg);
    return train_run(&tr);
}
