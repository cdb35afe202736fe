// train_log.c: progress lines and JSON-lines records of training.
#include "train/train_log.h"
#include "base/progress.h"
#include <math.h>
#include <string.h>

static void print_model_summary(const Model *m, const Config *cfg) {
    printf("swlstm train: device %s (%s), %d %s layer(s) of %d units, block %d, sparsity %s, embed %d\n",
           CFG_NAME(cfg, device), CFG_NAME(cfg, precision), m->L, CFG_NAME(cfg, cell), m->H, m->bs, cfg->sparsity, m->E);
    for (int l = 0; l < m->L; l++) {
        const Layer *L = &m->layer[l];
        long nb = (long)L->mask_h.nr * L->mask_h.nc;
        printf("  layer %d: W_h %d x %d, %ld of %ld blocks (%.2f%%)", l, L->wh.rows, L->wh.cols,
               (long)mask_count(&L->mask_h), nb, 100.0 * mask_count(&L->mask_h) / nb);
        if (L->sparse_x) printf(", W_x %ld blocks (%.2f%%)", mask_count(&L->mask_x), 100.0 * mask_count(&L->mask_x) / nb);
        else printf(", W_x dense %d x %d", m->mlstm ? 2 * m->H : 4 * m->H, L->in);
        for (int j = 0; j < m->D; j++) printf("%s W_h%d %ld", j ? "," : "; mlstm steps:", j, mask_count(&L->mask_s[j]));
        if (m->mlstm) printf(" blocks");
        printf("\n");
    }
    printf("  parameters: %zu stored and trained (%.3fM); a dense model of this shape has %.0f (%.3fM)\n",
           m->nparams, m->nparams / 1e6, m->dense_equiv, m->dense_equiv / 1e6);
    printf("  batch %d x %d chars, %ld steps, lr %g (%s, warmup %ld), grad_clip %g\n", cfg->batch_size,
           cfg->seq_length, cfg->max_steps, cfg->learning_rate, CFG_NAME(cfg, lr_schedule), cfg->warmup_steps, cfg->grad_clip);
}

void train_log_open(TrainLog *log, const Model *m, const Config *cfg, int append) {
    char path[CFG_STR + 16];
    snprintf(path, sizeof path, "%s/log.jsonl", cfg->out_dir);
    log->jsonl = xfopen(path, append ? "a" : "w", "training log");
    log->max_steps = cfg->max_steps;
    log->chars_per_step = (long)cfg->batch_size * cfg->seq_length;
    log->t_last = 0;
    print_model_summary(m, cfg);
    fprintf(log->jsonl, "{\"type\":\"start\",\"params\":%zu,\"dense_params\":%.0f,\"device\":\"%s\",\"resumed\":%s}\n",
            m->nparams, m->dense_equiv, CFG_NAME(cfg, device), append ? "true" : "false");
    fflush(stdout);
}

void train_log_step(TrainLog *log, long step, const StepStats *s, double elapsed, int print) {
    double bpc = s->loss / M_LN2, cps = log->chars_per_step / (s->ms / 1e3);
    fprintf(log->jsonl, "{\"type\":\"step\",\"step\":%ld,\"loss\":%.6f,\"bpc\":%.6f,\"lr\":%.6g,\"grad_norm\":%.6g,\"ms\":%.3f,\"chars_per_sec\":%.1f}\n",
            step, s->loss, bpc, s->lr, s->grad_norm, s->ms, cps);
    if (!print) return;
    char eta[32];
    fmt_eta(eta, sizeof eta, elapsed / step * (double)(log->max_steps - step));
    printf("step %ld/%ld | loss %.4f | bpc %.4f | lr %.2e | norm %.3f | %.1f ms | %.1fk chars/s | eta %s\n",
           step, log->max_steps, s->loss, bpc, s->lr, s->grad_norm, s->ms, cps / 1e3, eta);
    fflush(stdout);
    fflush(log->jsonl);
}

void train_log_eval(TrainLog *log, long step, double bpc, size_t bytes, int stripes, double secs, int best) {
    printf("eval step %ld | valid bpc %.4f over %zu bytes (protocol stripes: %d from zero states) | %.1f s%s\n",
           step, bpc, bytes, stripes, secs, best ? " | best" : "");
    fprintf(log->jsonl, "{\"type\":\"eval\",\"step\":%ld,\"valid_bpc\":%.6f,\"bytes\":%zu,\"seconds\":%.3f,\"best\":%s}\n",
            step, bpc, bytes, secs, best ? "true" : "false");
    fflush(stdout);
    fflush(log->jsonl);
}

void train_log_close(TrainLog *log) {
    if (log->jsonl) fclose(log->jsonl);
    log->jsonl = NULL;
}
