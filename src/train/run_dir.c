// run_dir.c: who may write into a run directory (train/run_dir.h).
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/common.h"
#include "train/run_dir.h"

static const char *const run_ckpts[] = {"latest.ckpt", "best.ckpt"};

void run_dir_claim(const char *dir, const char *resume, int overwrite) {
    char path[2][600], held[64] = "";
    int n = 0, first = -1;
    for (int i = 0; i < 2; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, run_ckpts[i]);
        struct stat st;
        if (stat(path[i], &st) || !S_ISREG(st.st_mode)) continue;
        if (resume && same_file(resume, path[i])) return;  // the run it continues
        snprintf(held + strlen(held), sizeof held - strlen(held), "%s%s", n++ ? ", " : "", run_ckpts[i]);
        if (first < 0) first = i;
    }
    if (!n) return;
    if (!overwrite) {
        if (resume) die("out_dir '%s' holds another run's checkpoints (%s; %s is not one of them): give this run "
                        "another --out_dir, or --overwrite to replace that run", dir, held, resume);
        die("out_dir '%s' holds another run's checkpoints (%s): continue it with --resume %s, give this run another "
            "--out_dir, or --overwrite to replace it", dir, held, path[first]);
    }
    char log[600];
    snprintf(log, sizeof log, "%s/log.jsonl", dir);
    for (int i = 0; i < 2; i++) unlink(path[i]);
    unlink(log);
    printf("--overwrite: removed the previous run's %s and log.jsonl from %s\n", held, dir);
}
