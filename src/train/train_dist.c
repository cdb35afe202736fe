// train_dist.c: data-parallel training. Each rank reads batch_size/world stripes, the ranks
// sum their gradients with NCCL (bucketed, started while backward still runs) and apply the
// same update. docs/MULTIGPU.md has the launch recipes and the failure behaviour.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "train/trainer.h"

typedef struct {
    Trainer tr;
    void (*run)(Trainer *tr);
    int local_rank;
    const uint8_t *id;
    double timeout;
    pthread_t thread;
} Rank;

static void *rank_main(void *p) {
    Rank *r = p;
    char ctx[48];
    snprintf(ctx, sizeof ctx, "rank %d of %d", r->tr.rank, r->tr.world);
    die_context(ctx);
    dist_nccl_init(r->tr.rank, r->tr.world, r->local_rank, r->id, r->timeout);
    r->run(&r->tr);
    dist_nccl_finalize();
    return NULL;
}

static void check_gpus(const Config *cfg, const DistEnv *de, int world) {
    if (cfg->device != DEVICE_CUDA)
        die("%d ranks (%d processes from %s, gpus = %d each) need device = cuda (device = %s)", world, de->world,
            de->source, cfg->gpus, CFG_NAME(cfg, device));
    int ndev = backend_cuda_devices(), need = cfg->gpus * (de->local_rank >= 0 ? de->local_rank + 1 : 1);
    if (cfg->gpus > 1 && need > ndev)
        die("gpus = %d%s needs %d GPUs, but this machine shows %d (CUDA_VISIBLE_DEVICES may hide some)", cfg->gpus,
            de->local_rank > 0 ? " on a process of local rank > 0" : "", need, ndev);
}

void train_ranks(const Trainer *proto, void (*run)(Trainer *tr)) {
    DistEnv de = dist_env();
    if (proto->cfg.dist_init[0]) snprintf(de.init, sizeof de.init, "%s", proto->cfg.dist_init);
    if (de.world > 1 && proto->cfg.dist_token[0]) dist_token_file(&de, proto->cfg.dist_token);
    int gpus = proto->cfg.gpus, world = de.world * gpus;
    if (world == 1) {
        Trainer tr = *proto;
        tr.world = 1;
        run(&tr);
        return;
    }
    check_gpus(&proto->cfg, &de, world);
    dist_nccl_env();
    uint8_t id[DIST_ID_BYTES];
    if (de.rank == 0) dist_nccl_get_unique_id(id);
    dist_exchange_id(de.init, &de, id);
    Rank *r = xcalloc((size_t)gpus, sizeof *r);
    for (int i = 0; i < gpus; i++) {
        r[i] = (Rank){.tr = *proto, .run = run, .id = id, .timeout = de.timeout_sec,
                      .local_rank = de.local_rank >= 0 ? de.local_rank * gpus + i : -1};
        r[i].tr.rank = de.rank * gpus + i;
        r[i].tr.world = world;
    }
    if (gpus == 1) rank_main(&r[0]);
    else {
        for (int i = 0; i < gpus; i++)
            if (pthread_create(&r[i].thread, NULL, rank_main, &r[i])) die("gpus = %d: cannot start thread %d", gpus, i);
        for (int i = 0; i < gpus; i++) pthread_join(r[i].thread, NULL);
    }
    dist_watch_close();
    free(r);
}

// The backward hook: all-reduce every bucket whose gradients are now final.
static void launch_ready(void *ctx, size_t off) {
    Trainer *tr = ctx;
    for (int upto = dist_plan_ready(&tr->plan, off); tr->launched < upto; tr->launched++) {
        const DistBucket *b = &tr->plan.b[tr->launched];
        dist_allreduce_sum(tr->m->grads + b->off, b->n);
    }
}

void dist_trainer_setup(Trainer *tr) {
    if (tr->world == 1) return;
    Model *m = tr->m;
    tr->plan = dist_plan(m->tensor, m->ntensor, (size_t)(tr->cfg.dist_bucket_mb * (1 << 20)));
    m->grads_ready = launch_ready;
    m->grads_ready_ctx = tr;
    size_t bytes = (size_t)tr->cfg.batch_size * m->H * sizeof(real);
    for (int l = 0; l < m->L; l++) {
        tr->full_h[l] = m->be->alloc(bytes);
        tr->full_c[l] = m->be->alloc(bytes);
    }
}

void dist_trainer_free(Trainer *tr) {
    if (tr->world == 1) return;
    for (int l = 0; l < tr->m->L; l++) {
        tr->m->be->free(tr->full_h[l]);
        tr->m->be->free(tr->full_c[l]);
    }
    dist_plan_free(&tr->plan);
}

void dist_grads_sum(Trainer *tr) {
    if (tr->world == 1) return;
    launch_ready(tr, 0);
    dist_wait("the gradient all-reduce");
    tr->launched = 0;
}

const Acts *dist_gather_state(Trainer *tr, Acts *view) {
    if (tr->world == 1) return tr->a;
    *view = *tr->a;
    view->B = tr->cfg.batch_size;
    size_t n = (size_t)tr->a->B * tr->m->H;
    for (int l = 0; l < tr->m->L; l++) {
        dist_allgather(tr->full_h[l], tr->a->h[l], n);
        dist_allgather(tr->full_c[l], tr->a->c[l], n);
        view->h[l] = tr->full_h[l];
        view->c[l] = tr->full_c[l];
    }
    dist_wait("gathering the carried state for a checkpoint");
    return view;
}
