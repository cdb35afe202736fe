// cmd_bench.c: the `bench` verb: its options, then one table of src/bench/.
#include <string.h>
#include "base/common.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "cli/verbs.h"
#include "model/config.h"

static void usage(void) {
    printf("usage: swlstm bench [--train | --sample] [--bs 8|16|32] [--density D] [--dtype fp32|bf16]\n"
           "  (default) block-sparse kernel table vs cuBLAS and cuSPARSE; --bs, --density and --dtype\n"
           "            keep only the matching rows (block 32 runs densities 1 0.5 0.25 0.1 0.05 0.02;\n"
           "            blocks 8 and 16 run 0.1)\n"
           "  --train   training throughput: dense H=2048, small-world H=4096/8192/18432, the recurrent\n"
           "            engine at B = 32/64/128 beside the per-step ops, fp32 and bf16; the mlstm (depth 4)\n"
           "            dense H=2048 and ba_7 H=8192, per-step ops issued one by one and replayed\n"
           "  --hidden H, --dtype D, --cell C  with --train: only the rows of this hidden size, this\n"
           "            precision, this cell (lstm or mlstm)\n"
           "  --sample  sampling: bytes/s of the device loop (batch 1) for H=4096 at 100/50/25/10/5%% of\n"
           "            blocks and ba_4 (bf16; ba_4 also fp32 and op by op), H=8192 ba_7, H=512 (the floor);\n"
           "            the mlstm (depth 4) at H=8192 ba_7 (bf16 op by op and looped, fp32) and H=2048 ba_4;\n"
           "            batches of 8 and 64 op by op (H=4096 ba_4 and dense, the mlstm at H=8192 ba_7)\n"
           "  --sync    us per dependent step of a chain of small ops: graph, PDL, grid barrier,\n"
           "            readiness flags, clusters (mlstm_3min's W_h layout)\n"
           "  --probe   probe sweep wall time at the SST-2 and MR shapes (CPU too; --probe --help)\n"
           "the tables other than --probe need a GPU build\n");
}

static void probe_usage(void) {
    printf("usage: swlstm bench --probe [--checkpoint CKPT [--data DIR]] [--only NAME] [--device cpu|cuda]\n"
           "       swlstm bench --probe --features-file F.npy --labels L.npy [--dev-features F --dev-labels L]\n"
           "                    [--folds K]\n"
           "both forms: [--penalty l2|l1|both] (replaces the task's) [--device cpu|cuda]\n"
           "Times the probe's C sweep (selection only, no test set). With a checkpoint, first on its\n"
           "features of DIR's mr.all (10-fold, row mr) and sst2.train/.dev (row sst2), DIR defaulting\n"
           "to ../shared/data/sentiment; then on generated features at the SST-2 and MR shapes\n"
           "(NAME: mr sst2 sst2-l2 sst2-both mr-l2 mr256-both).\n");
}

static int cmd_bench_probe(int argc, char **argv) {
    BenchProbeOpts o = {.data = "../shared/data/sentiment", .folds = 10, .device = PROBE_CPU};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--probe")) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            probe_usage();
            return 0;
        }
        if (!v) die("bench --probe: unknown option '%s' or missing value (see swlstm bench --probe --help)", a);
        i++;
        if (!strcmp(a, "--only")) o.only = v;
        else if (!strcmp(a, "--features-file")) o.feat[0] = v;
        else if (!strcmp(a, "--labels")) o.feat[1] = v;
        else if (!strcmp(a, "--dev-features")) o.feat[2] = v;
        else if (!strcmp(a, "--dev-labels")) o.feat[3] = v;
        else if (!strcmp(a, "--checkpoint")) o.ckpt = v;
        else if (!strcmp(a, "--data")) o.data = v;
        else if (!strcmp(a, "--penalty")) o.penalty = v;
        else if (!strcmp(a, "--folds")) o.folds = (int)parse_long("bench --folds", v, 2, 1000);
        else if (!strcmp(a, "--device")) o.device = probe_parse_device(v);
        else die("bench --probe: unknown option '%s' (see swlstm bench --probe --help)", a);
    }
    bench_probe(&o);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--probe")) return cmd_bench_probe(argc, argv);
    int train = 0, sample = 0;
    BenchFilter f = {.prec = -1, .cell = -1};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--sync")) return cb_sync();
        else if (!strcmp(o, "--train")) train = 1;
        else if (!strcmp(o, "--sample")) sample = 1;
        else if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage();
            return 0;
        } else if (!strcmp(o, "--hidden") || !strcmp(o, "--cell") || !strcmp(o, "--bs") || !strcmp(o, "--density") ||
                   !strcmp(o, "--dtype")) {
            if (!v) die("bench: option '%s' needs a value (see swlstm bench --help)", o);
            i++;
            if (!strcmp(o, "--hidden")) f.hidden = (int)parse_long("bench --hidden", v, 32, 1 << 20);
            else if (!strcmp(o, "--cell")) f.cell = config_parse_choice("cell", v, "bench --cell");
            else if (!strcmp(o, "--bs")) f.bs = (int)parse_long("bench --bs", v, 8, 32);
            else if (!strcmp(o, "--density")) f.density = parse_double("bench --density", v, 1e-6, 1);
            else f.prec = config_parse_choice("precision", v, "bench --dtype");
        } else die("bench: unknown option '%s' (see swlstm bench --help)", o);
    }
    if (sample) bench_sample();
    else if (train) bench_train(&f);
    else bench_kernels(&f);
    return 0;
}
