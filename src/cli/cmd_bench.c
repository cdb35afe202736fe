// cmd_bench.c: the `bench` verb: its options, then one table of src/bench/.
#include <string.h>
#include "base/common.h"
#include "bench/bench.h"
#include "bench/bench_cuda.h"
#include "bench/table.h"
#include "cli/shared_opts.h"
#include "cli/verbs.h"
#include "model/config.h"

static void usage(void) {
    printf("usage: swlstm bench [--train | --sample | --sync | --wgmma | --probe] [--bs 8|16|32] [--density D] [--dtype fp32|bf16]\n"
           "                    [--json]\n"
           "  (default) block-sparse kernel table vs cuBLAS and cuSPARSE; --bs, --density and --dtype\n"
           "            keep only the matching rows (block 32 runs densities 1 0.5 0.25 0.1 0.05 0.02;\n"
           "            blocks 8 and 16 run 0.1)\n"
           "  --train   training throughput: dense H=2048, small-world H=4096/8192/18432, the recurrent\n"
           "            engine at B = 32/64/128 beside the per-step ops, fp32 and bf16; the mlstm (depth 4)\n"
           "            dense H=2048 and ba_7 H=8192, per-step ops issued one by one and replayed, and\n"
           "            mlstm_3min's shape (H=5120 ba_14, depth 2)\n"
           "  --hidden H, --dtype D, --cell C  with --train: only the rows of this hidden size, this\n"
           "            precision, this cell (lstm or mlstm)\n"
           "  --sample  sampling: bytes/s of the device loop (batch 1) for H=4096 at 100/50/25/10/5%% of\n"
           "            blocks and ba_4 (bf16; ba_4 also fp32 and op by op), H=8192 ba_7, H=512 (the floor);\n"
           "            the mlstm (depth 4) at H=8192 ba_7 (bf16 op by op and looped, fp32) and H=2048 ba_4;\n"
           "            batches of 8 and 64 op by op (H=4096 ba_4 and dense, the mlstm at H=8192 ba_7)\n"
           "  --sync    us per dependent step of a chain of small ops: graph, PDL, grid barrier,\n"
           "            readiness flags, clusters (mlstm_3min's W_h layout)\n"
           "  --wgmma   the floors of a plain LSTM's forward time step (math, HBM and L2 bytes over the\n"
           "            ceilings measured in the call; the read bandwidth over 8 MB to 1 GB) beside the\n"
           "            Hopper wgmma step (issue 57) at lstm_3min's and the mLSTM configs' W_h shapes, and the\n"
           "            backward's data step on the same design beside its wgmma step, the window's weight\n"
           "            gradient on wgmma against mma.sync, the rates of bulk and cp.async\n"
           "            copies into a ring of shared-memory stages and of multicast bulk copies into clusters\n"
           "            of 1-8 CTAs\n"
           "  --data F  with --wgmma: also lstm_3min's step on the input bytes of a training window of\n"
           "            corpus F (B stripes, as training reads them)\n"
           "  --checkpoint C  with --wgmma: also both steps on C's layer 0 (a plain LSTM, block_size 32, no\n"
           "            layer norm, batch_size a multiple of 128): its mask, weights, input table and bias\n"
           "  --probe   probe sweep wall time at the SST-2 and MR shapes (CPU too; --probe --help)\n"
           "  --json    each table's rows as JSON lines on stdout, one object a row keyed by the table's\n"
           "            columns (\"table\": kernels, train, train_ops, sample, sync, read_sweep, wgmma, wgmma_bwd, wgmma_dw, ring, multicast or probe; numbers as\n"
           "            numbers, \"-\" and n/a as null); the prose around the tables goes to stderr\n"
           "the tables other than --probe need a GPU build\n");
}

static void probe_usage(void) {
    printf("usage: swlstm bench --probe [--checkpoint CKPT [--data DIR]] [--only NAME] [--device cpu|cuda]\n"
           "       swlstm bench --probe --features-file F.npy --labels L.npy [--dev-features F --dev-labels L]\n"
           "                    [--folds K]\n"
           "both forms: [--penalty l2|l1|both] (replaces the task's) [--device cpu|cuda] [--json] (rows as JSON\n"
           "lines, as swlstm bench --help says)\n"
           "Times the probe's C sweep (selection only, no test set). With a checkpoint, first on its\n"
           "features of DIR's mr.all (10-fold, row mr) and sst2.train/.dev (row sst2), DIR defaulting\n"
           "to ../shared/data/sentiment; then on generated features at the SST-2 and MR shapes\n"
           "(NAME: mr sst2 sst2-l2 sst2-both mr-l2 mr256-both).\n");
}

static int cmd_bench_probe(int argc, char **argv) {
    BenchProbeOpts b = {.data = "../shared/data/sentiment", .folds = 10, .device = PROBE_CPU};
    Opts o;
    if (!opts_begin(&o, "bench --probe", argc, argv, probe_usage)) return 0;
    while (opts_next(&o)) {
        if (opts_is(&o, "--probe")) continue;
        if (opts_is(&o, "--json")) table_json(1);
        else if (opts_is(&o, "--only")) b.only = opts_value(&o);
        else if (opts_is(&o, "--features-file")) b.feat[0] = opts_value(&o);
        else if (opts_is(&o, "--labels")) b.feat[1] = opts_value(&o);
        else if (opts_is(&o, "--dev-features")) b.feat[2] = opts_value(&o);
        else if (opts_is(&o, "--dev-labels")) b.feat[3] = opts_value(&o);
        else if (opts_is(&o, "--checkpoint")) b.ckpt = opts_value(&o);
        else if (opts_is(&o, "--data")) b.data = opts_value(&o);
        else if (opts_is(&o, "--penalty")) b.penalties = probe_penalties(&o);
        else if (opts_is(&o, "--folds")) b.folds = (int)opts_long(&o, 2, 1000);
        else if (opts_is(&o, "--device")) b.device = probe_device(opts_value(&o), "bench --probe --device");
        else opts_unknown(&o);
    }
    bench_probe(&b);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--probe")) return cmd_bench_probe(argc, argv);
    int train = 0, sample = 0, sync = 0, wgmma = 0;
    const char *data = NULL, *ckpt = NULL;
    BenchFilter f = {.prec = -1, .cell = -1};
    Opts o;
    if (!opts_begin(&o, "bench", argc, argv, usage)) return 0;
    while (opts_next(&o)) {
        if (opts_is(&o, "--sync")) sync = 1;
        else if (opts_is(&o, "--json")) table_json(1);
        else if (opts_is(&o, "--train")) train = 1;
        else if (opts_is(&o, "--sample")) sample = 1;
        else if (opts_is(&o, "--wgmma")) wgmma = 1;
        else if (opts_is(&o, "--data")) data = opts_value(&o);
        else if (opts_is(&o, "--checkpoint")) ckpt = opts_value(&o);
        else if (opts_is(&o, "--hidden")) f.hidden = (int)opts_long(&o, 32, 1 << 20);
        else if (opts_is(&o, "--cell")) f.cell = opts_choice(&o, "cell");
        else if (opts_is(&o, "--bs")) f.bs = (int)opts_long(&o, 8, 32);
        else if (opts_is(&o, "--density")) f.density = opts_double(&o, 1e-6, 1);
        else if (opts_is(&o, "--dtype")) f.prec = opts_choice(&o, "precision");
        else opts_unknown(&o);
    }
    if (sync) return bench_sync();
    if (data && !wgmma) die("bench: --data %s: only --wgmma reads a corpus (bench --probe has its own --data)", data);
    if (ckpt && !wgmma) die("bench: --checkpoint %s: only --wgmma and --probe read a checkpoint", ckpt);
    if (wgmma) bench_wgmma(data, ckpt);
    else if (sample) bench_sample();
    else if (train) bench_train(&f);
    else bench_kernels(&f);
    return 0;
}
