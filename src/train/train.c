// train.c: truncated-BPTT training over stripes of the train split with Adam, clipping, a
// learning-rate schedule, validation, checkpoints and JSON-lines logs (the `train` verb:
// cli/cmd_train.c). Every rank of a data-parallel run (train_dist.c) runs this; rank 0 logs
// and writes.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "io/atomic_file.h"
#include "model/byte_set.h"
#include "train/eval.h"
#include "train/optim.h"
#include "train/run_dir.h"
#include "train/trainer.h"

#define MAX_SKIPPED_IN_ROW 20

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static void ckpt_path(const Trainer *tr, const char *name, char *out, size_t n) {
    snprintf(out, n, "%s/%s", tr->cfg.out_dir, name);
}

static int lead(const Trainer *tr) { return tr->rank == 0; }

// latest.ckpt, and best.ckpt too when `best`. Every rank calls it (the carried state is
// gathered once); rank 0 writes.
static void save(Trainer *tr, int best) {
    Acts view;
    const Acts *a = dist_gather_state(tr, &view);
    if (!lead(tr)) return;
    char path[CFG_STR + 32];
    for (int i = 0; i <= best; i++) {
        ckpt_path(tr, i ? "best.ckpt" : "latest.ckpt", path, sizeof path);
        model_save(path, tr->m, &tr->ts, tr->adam_m, tr->adam_v, a);
    }
}

// Keys that fix the model or the data order: a resumed run must keep them.
static void check_resume_config(const Config *run, const Config *ck, const char *path) {
#define SAME_INT(k) if (run->k != ck->k) die("--resume %s: " #k " = %ld in this run, %ld in the checkpoint (it must match)", path, (long)run->k, (long)ck->k)
#define SAME_STR(k) if (strcmp(run->k, ck->k)) die("--resume %s: " #k " = '%s' in this run, '%s' in the checkpoint (it must match)", path, run->k, ck->k)
    SAME_INT(hidden_size); SAME_INT(num_layers); SAME_INT(embed_size); SAME_INT(block_size);
    SAME_INT(mask_seed); SAME_INT(layer_norm); SAME_INT(batch_size); SAME_INT(seq_length);
    SAME_INT(depth);
    SAME_STR(sparsity); SAME_STR(input_sparsity); SAME_STR(split); SAME_INT(cell);
#undef SAME_INT
#undef SAME_STR
}

// The corpus must be the one the checkpoint was trained on: another file, or the same file
// grown or edited, would shift the split and the stripes without any error.
static void check_resume_data(Trainer *tr, const char *path) {
    uint64_t len = tr->ts.data_len;
    uint32_t crc = tr->ts.data_crc, now = dataset_fingerprint(&tr->ds);
    if (len && (len != tr->ds.len || crc != now))
        die("--resume %s: the checkpoint was trained on %llu bytes of data (fingerprint %08x), but data '%s' "
            "has %zu bytes (fingerprint %08x): resume on the same corpus, or start a new run with init_from",
            path, (unsigned long long)len, crc, tr->cfg.data, tr->ds.len, now);
}

// The config was checked against the checkpoint's when the model was made (create_model).
static void resume(Trainer *tr, const char *path) {
    Ckpt c;
    ckpt_read(&c, path);
    model_load_weights(tr->m, &c);
    model_load_train_state(tr->m, &c, &tr->ts, tr->adam_m, tr->adam_v, tr->a, tr->rank * tr->a->B, tr->cfg.batch_size);
    check_resume_data(tr, path);
    if (tr->ts.data_pos >= tr->st.stripe_len) die("--resume %s: data position %llu is past this data's stripes (was the data file changed?)", path, (unsigned long long)tr->ts.data_pos);
    tr->st.pos = tr->ts.data_pos;
    ckpt_close(&c);
    if (!lead(tr)) return;
    printf("resumed from %s at step %ld\n", path, tr->ts.step);
    if (!isfinite(tr->ts.best_valid_bpc) && tr->cfg.eval_every > 0)
        printf("  the checkpoint holds no best valid bpc (none yet, or a swlstm prune output): this run's first evaluation sets best.ckpt\n");
}

static void init_from(Trainer *tr) {
    Ckpt c;
    ckpt_read(&c, tr->cfg.init_from);
    model_load_weights(tr->m, &c);
    ckpt_close(&c);
    if (lead(tr)) printf("init_from %s: loaded weights only (optimizer state, step, data position and the best valid bpc start fresh: this run's first evaluation sets best.ckpt)\n", tr->cfg.init_from);
}

// Bytes of the valid split that evaluation covers (eval_bytes caps it; 0 = all).
static size_t valid_len(const Trainer *tr) {
    size_t vlen = tr->ds.n[SPLIT_VALID];
    return tr->cfg.eval_bytes && (size_t)tr->cfg.eval_bytes < vlen ? (size_t)tr->cfg.eval_bytes : vlen;
}

static void setup_data(Trainer *tr) {
    const Config *cfg = &tr->cfg;
    dataset_open(&tr->ds, cfg->data);
    dataset_split(&tr->ds, cfg->split, cfg->data);
    Stripes all;
    stripes_init(&all, tr->ds.bytes + tr->ds.off[SPLIT_TRAIN], tr->ds.n[SPLIT_TRAIN], cfg->batch_size, cfg->seq_length);
    stripes_share(&tr->st, &all, tr->rank, tr->world);
    if (cfg->eval_every > 0 && valid_len(tr) < 2)
        die("data '%s': the valid split (split = %s) is empty; give it bytes or set eval_every = 0", cfg->data, cfg->split);
    size_t N = (size_t)tr->st.B * cfg->seq_length;
    tr->tok = xmalloc(N * sizeof(int));
    tr->tgt = xmalloc(N * sizeof(int));
}

// Validation stripes: as many as fit (up to batch_size), a multiple of the world size.
static void setup_eval(Trainer *tr) {
    const Config *cfg = &tr->cfg;
    int B = eval_batch_for(valid_len(tr), cfg->batch_size, cfg->seq_length);
    tr->eval_B = B - B % tr->world > 0 ? B - B % tr->world : tr->world;
    tr->ea = acts_create(tr->m, tr->eval_B / tr->world, cfg->seq_length);
}

// The model of this run: with masks drawn from the config, or where it resumes or starts from
// a checkpoint, with that checkpoint's masks (which `swlstm prune` changes).
static Model *create_model(const Trainer *tr, const Backend *be) {
    const char *path = tr->resume_path ? tr->resume_path : tr->cfg.init_from[0] ? tr->cfg.init_from : NULL;
    if (!path) return model_create(&tr->cfg, be);
    Ckpt c;
    ckpt_read(&c, path);
    if (tr->resume_path) {
        Config ck;
        ckpt_config(&c, &ck);
        check_resume_config(&tr->cfg, &ck, path);
    }
    Mask masks[SW_MAX_MASKS];
    int n = ckpt_masks_for(&c, &tr->cfg, masks);
    ckpt_close(&c);
    Model *m = model_create_with_masks(&tr->cfg, be, masks);
    for (int i = 0; i < n; i++) mask_free(&masks[i]);
    return m;
}

static void setup(Trainer *tr) {
    const Config *cfg = &tr->cfg;
#ifdef _OPENMP
    if (cfg->threads > 0) omp_set_num_threads(cfg->threads);
#endif
    const Backend *be = backend_get(cfg->device, cfg->precision);
    setup_data(tr);
    tr->m = create_model(tr, be);
    tr->a = acts_create(tr->m, tr->st.B, cfg->seq_length);
    tr->adam_m = be->alloc(tr->m->nparams * sizeof(real));
    tr->adam_v = be->alloc(tr->m->nparams * sizeof(real));
    if (tr->m->ema) tr->raw = be->alloc(tr->m->nparams * sizeof(real));
    tr->ts = (TrainState){.best_valid_bpc = INFINITY};
    tr->masks_step = -1;
    rng_seed(&tr->ts.rng, (uint64_t)cfg->seed ^ 0x5eedULL);
    if (lead(tr)) run_dir_claim(cfg->out_dir, tr->resume_path, tr->overwrite);
    if (lead(tr) && mkdir_p(cfg->out_dir)) die("out_dir '%s': cannot create the directory", cfg->out_dir);
    int stale = lead(tr) ? af_remove_stale(cfg->out_dir) : 0;
    if (stale) printf("removed %d temporary file(s) of a killed run from %s\n", stale, cfg->out_dir);
    if (tr->resume_path) resume(tr, tr->resume_path);
    else if (cfg->init_from[0]) init_from(tr);
    tr->ts.data_len = tr->ds.len;
    tr->ts.data_crc = dataset_fingerprint(&tr->ds);
    byte_set_of(tr->ds.bytes, tr->ds.len, tr->ts.bytes);
    tr->ts.has_bytes = 1;
    if (cfg->eval_every > 0) setup_eval(tr);
    dist_trainer_setup(tr);
    if (!lead(tr)) return;
    train_log_open(&tr->log, tr->m, cfg, tr->resume_path != NULL);
    char route[512];
    Route r = acts_route(tr->m, tr->a);
    printf("  recurrent path: %s\n", route_text(&r, route, sizeof route));
    if (tr->world > 1) printf("  data parallel: %d ranks, %d stripes each\n", tr->world, tr->st.B);
}

static void apply_adam(Trainer *tr, double lr, double scale) {
    const Config *cfg = &tr->cfg;
    Model *m = tr->m;
    for (int i = 0; i < m->ntensor; i++) {
        const ParamTensor *t = &m->tensor[i];
        AdamArgs a = {(real)lr, (real)cfg->beta1, (real)cfg->beta2, (real)cfg->adam_eps,
                      (real)(t->decay ? cfg->weight_decay : 0), (real)scale, tr->ts.step};
        m->be->adam(m->params + t->off, m->grads + t->off, tr->adam_m + t->off, tr->adam_v + t->off, t->n, a);
    }
    // The average's decay ramps up as (1 + step) / (10 + step) (as TensorFlow's), so that the
    // average forgets the random init within the first hundred steps.
    double ramp = (1.0 + tr->ts.step) / (10.0 + tr->ts.step);
    if (m->ema) m->be->ema(m->ema, m->params, (real)fmin(cfg->ema, ramp), m->nparams);
}

// Validation runs on the weights' moving average when there is one (on = 1); tr->raw keeps the
// trained weights meanwhile, and on = 0 puts them back.
static void use_average(Trainer *tr, int on) {
    Model *m = tr->m;
    size_t bytes = m->nparams * sizeof(real);
    if (!m->ema) return;
    if (on) m->be->copy(tr->raw, m->params, bytes);
    m->be->copy(m->params, on ? m->ema : tr->raw, bytes);
}

// One optimizer step. Returns 0 when a non-finite step was skipped.
static int train_step(Trainer *tr, StepStats *s) {
    const Config *cfg = &tr->cfg;
    int T = cfg->seq_length;
    if (stripes_next(&tr->st, tr->tok, tr->tgt)) acts_reset_state(tr->m, tr->a);
    train_masks_update(tr);  // may move the trainer onto new masks: a new model and windows
    Model *m = tr->m;
    m->be->zero(m->grads, m->nparams * sizeof(real));
    s->loss = model_forward(m, tr->a, tr->tok, tr->tgt, T);
    model_backward(m, tr->a, T);
    dist_grads_sum(tr);
    double sumsq = m->be->sumsq(m->grads, m->nparams);
    // Every rank then sees the same loss, norm and stop flag, so all skip, die or stop alike.
    double v[2] = {s->loss, stop_signal != 0};
    dist_sum_doubles(v, 2);
    s->loss = v[0] / tr->world;
    tr->stop = v[1] > 0;
    // The gradients hold the sum over ranks of each rank's mean gradient: 1/world makes it the
    // mean over the global batch, folded into the norm and Adam's scale (no extra pass).
    s->grad_norm = sqrt(sumsq) / tr->world;
    s->lr = lr_at(cfg->lr_schedule, cfg->learning_rate, cfg->min_lr, cfg->warmup_steps, cfg->max_steps, tr->ts.step + 1);
    tr->ts.data_pos = tr->st.pos;
    tr->ts.bytes_seen += (uint64_t)cfg->batch_size * T;
    if (!isfinite(s->loss) || !isfinite(s->grad_norm)) {
        if (cfg->nan_policy != NAN_SKIP)
            die("step %ld: non-finite %s (loss %g, grad norm %g). Hint: lower learning_rate, keep grad_clip > 0, "
                "or set nan_policy = skip; the last good checkpoint is in %s",
                tr->ts.step + 1, isfinite(s->loss) ? "gradient" : "loss", s->loss, s->grad_norm, cfg->out_dir);
        warnf("step %ld: non-finite loss or gradient, step skipped and state reset (nan_policy = skip)", tr->ts.step + 1);
        if (++tr->skipped_in_row >= MAX_SKIPPED_IN_ROW)
            die("%d steps in a row were non-finite: the weights are no longer usable. Hint: lower learning_rate "
                "and resume from the last good checkpoint in %s", tr->skipped_in_row, cfg->out_dir);
        acts_reset_state(m, tr->a);
        return 0;
    }
    tr->skipped_in_row = 0;
    tr->ts.step++;
    apply_adam(tr, s->lr, clip_scale(s->grad_norm, cfg->grad_clip) / tr->world);
    acts_carry_state(m, tr->a);
    return 1;
}

// Each rank evaluates its share of the validation stripes; the loss sums over ranks.
static void validate(Trainer *tr) {
    double t0 = now_sec();
    Stripes all = eval_stripes(tr->ds.bytes + tr->ds.off[SPLIT_VALID], valid_len(tr), tr->eval_B, tr->cfg.seq_length), mine;
    stripes_share(&mine, &all, tr->rank, tr->world);
    use_average(tr, 1);
    double nats = eval_nats(tr->m, tr->ea, &mine);
    use_average(tr, 0);
    dist_sum_doubles(&nats, 1);
    size_t count = eval_count(&all);
    double bpc = nats / (double)count / log(2.0);
    int best = bpc < tr->ts.best_valid_bpc;
    if (best) tr->ts.best_valid_bpc = bpc;
    if (lead(tr)) train_log_eval(&tr->log, tr->ts.step, bpc, count, tr->eval_B, now_sec() - t0, best);
    save(tr, best);
}

static int should(long every, long step) { return every > 0 && step % every == 0; }

static void train_loop(Trainer *tr) {
    const Config *cfg = &tr->cfg;
    double t_prev = now_sec();
    while (tr->ts.step < cfg->max_steps && !tr->stop) {
        StepStats s = {0};
        double t0 = now_sec();
        if (!train_step(tr, &s)) continue;
        double t1 = now_sec();
        s.ms = 1e3 * (t1 - t0);
        tr->ts.elapsed_sec += t1 - t_prev;
        t_prev = t1;
        if (lead(tr)) train_log_step(&tr->log, tr->ts.step, &s, tr->ts.elapsed_sec, should(cfg->log_every, tr->ts.step) || tr->ts.step == 1);
        if (should(cfg->eval_every, tr->ts.step) || (tr->ts.step == cfg->max_steps && cfg->eval_every > 0)) validate(tr);
        else if (should(cfg->save_every, tr->ts.step)) save(tr, 0);
        if (tr->ts.step == tr->stop_after) break;
    }
}

static void finish(Trainer *tr) {
    int evaluated_last = tr->cfg.eval_every > 0 && (tr->ts.step % tr->cfg.eval_every == 0 || tr->ts.step == tr->cfg.max_steps);
    if (!evaluated_last) save(tr, 0);
    if (lead(tr)) {
        if (tr->stop) printf("stopped by a signal at step %ld; saved %s/latest.ckpt (resume with --resume)\n", tr->ts.step, tr->cfg.out_dir);
        else {
            char best[160] = "none";  // no evaluation ran
            if (isfinite(tr->ts.best_valid_bpc))
                snprintf(best, sizeof best, "%.4f (protocol stripes over the first %zu bytes of the valid split)",
                         tr->ts.best_valid_bpc, valid_len(tr));
            printf("done: %ld steps in %.1f s; best valid bpc %s; checkpoints in %s\n", tr->ts.step, tr->ts.elapsed_sec, best, tr->cfg.out_dir);
        }
        train_log_close(&tr->log);
    }
    dist_trainer_free(tr);
    acts_free(tr->m, tr->a);
    acts_free(tr->m, tr->ea);
    tr->m->be->free(tr->adam_m);
    tr->m->be->free(tr->adam_v);
    if (tr->raw) tr->m->be->free(tr->raw);
    model_free(tr->m);
    dataset_close(&tr->ds);
    free(tr->tok);
    free(tr->tgt);
}

static void train_rank(Trainer *tr) {
    setup(tr);
    train_loop(tr);
    finish(tr);
}

int train_run(Trainer *proto) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    train_ranks(proto, train_rank);
    return stop_signal ? 128 + stop_signal : 0;  // the shell's status for a run a signal ended
}
