// cmd_units.c: the `units` verb: one LSTM unit's value after every byte of a text, written
// as an HTML page with the text coloured by the value (the sentiment-neuron view).
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/progress.h"
#include "io/atomic_file.h"
#include "cli/shared_opts.h"
#include "features/unit_page.h"
#include "cli/verbs.h"

typedef struct {
    const char *ckpt, *input, *out;
    long unit, max_bytes;
    FeatOpts fo;
} UnitsArgs;

static void units_usage(void) {
    printf("usage: swlstm units CKPT --unit K --input FILE --out PAGE.html [--max-bytes N]\n"
           "                   [--state c|h] [--tanh] [--layer N] [--device cpu|cuda] [--precision fp32|bf16]\n"
           "                   [--quiet | --progress]\n"
           "Runs the bytes of FILE (as they are, from a zero state) through the model and writes the\n"
           "value of unit K (cell state c by default) after every byte as an HTML page: the text\n"
           "coloured green (positive) to red (negative), each character's value in its tooltip.\n"
           "On a terminal, progress and an ETA go to stderr unless --quiet; --progress shows them\n"
           "even when stderr is not a terminal.\n");
}

static int parse_units_args(int argc, char **argv, UnitsArgs *a) {
    feat_opts_default(&a->fo);
    Opts o;
    if (!opts_begin(&o, "units", argc, argv, units_usage)) return 0;
    while (opts_next(&o)) {
        if (feat_opts_read(&o, &a->fo)) continue;
        if (opts_is(&o, "--unit")) a->unit = opts_long(&o, 0, INT_MAX);
        else if (opts_is(&o, "--input")) a->input = opts_value(&o);
        else if (opts_is(&o, "--out")) a->out = opts_value(&o);
        else if (opts_is(&o, "--max-bytes")) a->max_bytes = opts_long(&o, 1, LONG_MAX);
        else if (!opts_positional(&o, &a->ckpt)) opts_unknown(&o);
    }
    if (!a->ckpt || !a->input || !a->out || a->unit < 0)
        die("units: usage: swlstm units CKPT --unit K --input FILE --out PAGE.html");
    if (a->fo.mean || a->fo.state == 'b') die("units: one state per byte: use --state c or h (not --mean or both)");
    return 1;
}

// val[t] = unit k of the chosen state after byte t, one byte at a time from a zero state.
static float *unit_values(Model *m, const FeatOpts *o, int k, const uint8_t *text, size_t n) {
    Infer *s = infer_create(m, 1, 0);
    float *row = xmalloc(m->H * sizeof(float)), *val = xmalloc((n + 1) * sizeof(float));
    Progress pr;
    progress_init(&pr, "units", "bytes", (double)n, o->progress);
    infer_reset(m, s);
    for (size_t t = 0; t < n; t++) {
        int tok = text[t];
        infer_step(m, s, &tok, 1, NULL);
        infer_get(m, s, o->layer, o->state, 1, row);
        val[t] = o->tanh_c ? tanhf(row[k]) : row[k];
        progress_show(&pr, (double)(t + 1));
    }
    progress_done(&pr);
    infer_free(m, s);
    free(row);
    return val;
}

int cmd_units(int argc, char **argv) {
    UnitsArgs a = {.unit = -1};
    if (!parse_units_args(argc, argv, &a)) return 0;
    refuse_same_file("units", a.ckpt, a.out);
    refuse_same_file("units", a.input, a.out);
    size_t n;
    uint8_t *text = (uint8_t *)read_text_file(a.input, &n, "units --input");
    if (a.max_bytes && (size_t)a.max_bytes < n) n = (size_t)a.max_bytes;
    Model *m = feat_model_load(a.ckpt, &a.fo);
    if (a.unit >= m->H) die("units --unit = '%ld': expected 0 to %d (the model's hidden size is %d)", a.unit, m->H - 1, m->H);
    float *val = unit_values(m, &a.fo, (int)a.unit, text, n);
    char title[512];
    snprintf(title, sizeof title, "unit %ld (%s%s, layer %d) over %s", a.unit, a.fo.tanh_c ? "tanh " : "",
             a.fo.state == 'h' ? "h" : "c", a.fo.layer, a.input);
    size_t len;
    char *page = unit_page_html(text, n, val, title, &len);
    AtomicFile *f = af_open(a.out, "output page");  // a reader never sees a partial page
    af_write(f, page, len);
    af_commit(f);
    model_free(m);
    free(page); free(val); free(text);
    return 0;
}
