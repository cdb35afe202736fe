// main.c: ./swlstm VERB ... dispatch and help.
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "base/common.h"
#include "cli/opts.h"
#include "cli/verbs.h"
#include "io/ckpt.h"

#define SWLSTM_VERSION "1.0"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} Verb;

static const Verb verbs[] = {
    {"train", cmd_train, "train a char-LM from a config file (CONFIG [--key=value ...] [--resume CKPT])"},
    {"eval", cmd_eval, "bits per character of a checkpoint on a split"},
    {"sample", cmd_sample, "stream bytes sampled from a checkpoint"},
    {"info", cmd_info, "describe a checkpoint: format, shapes, masks, step, config"},
    {"mask", cmd_mask, "build a sparsity mask and print its graph statistics"},
    {"features", cmd_features, "extract per-document features from a checkpoint to .npy"},
    {"probe", cmd_probe, "fit and score logistic-regression probes on features"},
    {"export", cmd_export, "write a checkpoint's weights as a safetensors file (for PyTorch)"},
    {"prune", cmd_prune, "keep the largest blocks of each block-sparse matrix of a checkpoint"},
    {"units", cmd_units, "one unit's value at every byte of a text, as a coloured HTML page"},
    {"bench", cmd_bench, "benchmark kernels and training throughput (GPU)"},
};
#define NVERBS (int)(sizeof verbs / sizeof verbs[0])

static void usage(FILE *f) {
    fprintf(f, "usage: swlstm VERB [options]    (swlstm VERB --help for a verb's options;\n"
               "                                 every option reads --opt value or --opt=value,\n"
               "                                 and --opt_name as --opt-name)\n\nverbs:\n");
    for (int i = 0; i < NVERBS; i++) fprintf(f, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "  %-9s %s\n", "help", "this text");
    fprintf(f, "\nswlstm --version prints the version; usage errors exit with status 1, a run stopped\n"
               "by Ctrl-C (after its checkpoint) with 130.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        if (argc >= 3 && strcmp(argv[1], "help") == 0) {
            for (int i = 0; i < NVERBS; i++)
                if (!strcmp(verbs[i].name, argv[2])) {
                    char *args[] = {argv[2], "--help", NULL};
                    return verbs[i].fn(2, args);
                }
        }
        usage(argc < 2 ? stderr : stdout);
        return argc < 2;  // a usage error: stderr and status 1, as every verb's
    }
    if (!strcmp(argv[1], "--version")) {
        printf("swlstm %s (checkpoint format %d, %s)\n", SWLSTM_VERSION, CKPT_VERSION,
#ifdef SW_CUDA
               "CPU and CUDA backends"
#else
               "CPU backend only: built without nvcc"
#endif
        );
        return 0;
    }
    for (int i = 0; i < NVERBS; i++)
        if (!strcmp(verbs[i].name, argv[1])) {
            int n;
            char **args = opts_split(argc - 1, argv + 1, &n);
            int rc = verbs[i].fn(n, args);
            free(args);
            return rc;
        }
    die("unknown verb '%s' (expected one of: train eval sample info mask features probe export prune units bench help; or --version)", argv[1]);
}
