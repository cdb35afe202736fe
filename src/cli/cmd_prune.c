// cmd_prune.c: `swlstm prune`: a checkpoint whose block-sparse matrices keep only their
// largest blocks (model/prune.h), with the weights, moving average and Adam moments of the
// blocks that stay, for `train --resume` or `init_from` to fine-tune.
#include <stdio.h>
#include <stdlib.h>
#include "base/progress.h"
#include "cli/opts.h"
#include "cli/verbs.h"
#include "model/model_io.h"
#include "model/prune.h"
#include "model/remask.h"

static void usage(void) {
    printf("usage: swlstm prune CKPT --density D --out NEW.ckpt [--quiet | --progress]\n"
           "Keeps, in each block-sparse matrix of CKPT (the LSTM's W_h and W_x, the mLSTM's internal\n"
           "and gate matrices; the four gates share one mask), the fraction D in (0, 1] of its blocks\n"
           "with the largest norms, at least one in every block row and column. The weights, their\n"
           "moving average and, in a training checkpoint, Adam's moments, the step and the data\n"
           "position of the blocks that stay are kept: `swlstm train CONFIG --resume NEW.ckpt` (or\n"
           "init_from = NEW.ckpt) fine-tunes the pruned model, whose masks come from NEW.ckpt.\n"
           "On a terminal, progress and an ETA go to stderr unless --quiet; --progress shows them\n"
           "even when stderr is not a terminal.\n");
}

// Adam's moment `tag` of checkpoint c (laid out for `from`), moved to `to`'s layout.
static real *moment_for(const Ckpt *c, const char *tag, const Model *from, const Model *to) {
    real *old = xmalloc(sizeof(real) * from->nparams), *out = xmalloc(sizeof(real) * to->nparams);
    ckpt_get_reals(c, tag, from->be, old, from->nparams);
    model_remap(from, old, to, out);
    free(old);
    return out;
}

static void report(const Model *from, const Model *to) {
    for (int t = 0; t < to->ntensor; t++) {
        const ParamTensor *a = model_tensor(from, to->tensor[t].name), *b = &to->tensor[t];
        if (a->n != b->n) printf("  %-10s %zu -> %zu weights\n", b->name, a->n, b->n);
    }
    printf("parameters: %zu -> %zu (%.1f%%)\n", from->nparams, to->nparams, 100.0 * to->nparams / from->nparams);
}

int cmd_prune(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *dens = NULL;
    Opts o;
    if (!opts_begin(&o, "prune", argc, argv, usage)) return 0;
    while (opts_next(&o)) {
        if (opts_progress(&o)) continue;
        if (opts_is(&o, "--density")) dens = opts_value(&o);
        else if (opts_is(&o, "--out")) out = opts_value(&o);
        else if (!opts_positional(&o, &in)) opts_unknown(&o);
    }
    if (!in || !dens || !out) die("prune: usage: swlstm prune CKPT --density D --out NEW.ckpt");
    refuse_same_file("prune", in, out);
    double density = parse_double("prune --density", dens, 0, 1);
    if (!(density > 0)) die("prune: --density %s: expected a fraction of each matrix's blocks in (0, 1]", dens);
    double size = file_size(in);  // the progress line counts bytes: CKPT read, then NEW written
    Progress pr;
    progress_init(&pr, "prune", NULL, 2 * size, o.progress);
    Ckpt c;
    ckpt_read(&c, in);
    progress_show(&pr, size);
    Model *from = model_from_ckpt(&c, DEVICE_CPU, PREC_FP32);
    Mask masks[SW_MAX_MASKS];
    model_prune_masks(from, from->params, density, masks);
    Model *to = model_remask(from, masks);
    pr.total = size * (1 + (double)to->nparams / (double)from->nparams);
    int train = ckpt_find(&c, "state", 0) != NULL;
    real *m = train ? moment_for(&c, "adam_m", from, to) : NULL, *v = train ? moment_for(&c, "adam_v", from, to) : NULL;
    model_save_like(out, to, &c, m, v);
    progress_done(&pr);
    report(from, to);
    printf("wrote %s (%s)\n", out, train ? "weights and training state" : "weights");
    ckpt_close(&c);
    free(m);
    free(v);
    for (int i = 0; i < (2 + from->D) * from->L; i++) mask_free(&masks[i]);
    model_free(to);
    model_free(from);
    return 0;
}
