// test_dist.c: the CPU side of data-parallel training: ranks from the environment, stripes
// per rank against the one-rank layout, the gradient bucket plan, and the NCCL id exchange
// through a file and over loopback TCP (other ranks are forked children).
#ifndef SW_DOUBLE
#include "train/dist.h"
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// ---- a fake environment

static const char *const *fake_env;  // NAME, VALUE, ..., NULL

static const char *fake_getenv(const char *name) {
    for (const char *const *p = fake_env; p && *p; p += 2)
        if (!strcmp(*p, name)) return p[1];
    return NULL;
}

static DistEnv env_of(const char *const *vars) {
    fake_env = vars;
    return dist_env_from(fake_getenv);
}

static int env_is(const DistEnv *e, int rank, int world, int local, const char *run_id, const char *init, double timeout) {
    int ok = e->rank == rank && e->world == world && e->local_rank == local && !strcmp(e->run_id, run_id) &&
             !strcmp(e->init, init) && e->timeout_sec == timeout;
    if (!ok) fprintf(stderr, "  got rank %d world %d local %d run id '%s' init '%s' timeout %g\n", e->rank, e->world,
                     e->local_rank, e->run_id, e->init, e->timeout_sec);
    return ok;
}

TEST(dist_env_default_is_one_rank) {
    static const char *const none[] = {"HOME", "/root", NULL};
    DistEnv e = env_of(none);
    CHECK(env_is(&e, 0, 1, -1, "", "", DIST_DEFAULT_TIMEOUT));
    CHECK(!strcmp(e.source, "default"));
}

TEST(dist_env_each_launcher) {
    static const char *const vars[][9] = {
        {"SWLSTM_RANK", "3", "SWLSTM_WORLD_SIZE", "8", "SWLSTM_LOCAL_RANK", "3", NULL},
        {"RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "3", NULL},
        {"OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "3", NULL},
        {"PMI_RANK", "3", "PMI_SIZE", "8", "MPI_LOCALRANKID", "3", NULL},
        {"SLURM_PROCID", "3", "SLURM_NTASKS", "8", "SLURM_LOCALID", "3", NULL},
    };
    static const char *const names[] = {"SWLSTM_RANK", "torchrun", "Open MPI", "MPICH", "Slurm"};
    for (int i = 0; i < 5; i++) {
        DistEnv e = env_of(vars[i]);
        CHECK_MSG(e.rank == 3 && e.world == 8 && e.local_rank == 3, "family %d: rank %d world %d local %d", i, e.rank, e.world, e.local_rank);
        CHECK_MSG(strstr(e.source, names[i]), "family %d: source '%s'", i, e.source);
    }
}

TEST(dist_env_priority_and_extras) {
    // An explicit SWLSTM_* launch inside a Slurm job wins; MPICH without a local rank leaves it open.
    static const char *const both[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "16", "SLURM_JOB_ID", "4711", "SLURM_STEP_ID", "2",
                                       "SWLSTM_RANK", "1", "SWLSTM_WORLD_SIZE", "2", "SWLSTM_DIST_INIT", "tcp://n1:29500",
                                       "SWLSTM_DIST_TIMEOUT", "90", NULL};
    DistEnv e = env_of(both);
    CHECK(env_is(&e, 1, 2, -1, "4711.2", "tcp://n1:29500", 90));
    static const char *const mpich[] = {"PMI_RANK", "5", "PMI_SIZE", "6", "SWLSTM_RUN_ID", "exp7", "SLURM_JOB_ID", "1", NULL};
    e = env_of(mpich);
    CHECK(env_is(&e, 5, 6, -1, "exp7", "", DIST_DEFAULT_TIMEOUT));
    static const char *const slurm[] = {"SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_JOB_ID", "99", NULL};
    e = env_of(slurm);
    CHECK(env_is(&e, 2, 4, 0, "99", "", DIST_DEFAULT_TIMEOUT));
}

static void env_fn(void *vars) { env_of(vars); }

TEST(dist_env_bad_values_die) {
    static const char *const past[] = {"SLURM_PROCID", "4", "SLURM_NTASKS", "4", NULL};
    static const char *const junk[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "two", NULL};
    static const char *const half[] = {"RANK", "1", NULL};
    static const char *const local[] = {"SWLSTM_RANK", "1", "SWLSTM_WORLD_SIZE", "2", "SWLSTM_LOCAL_RANK", "-1", NULL};
    static const char *const tmo[] = {"SWLSTM_DIST_TIMEOUT", "soon", NULL};
    CHECK_DIES(env_fn, (void *)past, "SLURM_PROCID = 4 is not below SLURM_NTASKS = 4");
    CHECK_DIES(env_fn, (void *)junk, "environment variable OMPI_COMM_WORLD_SIZE = 'two'");
    CHECK_DIES(env_fn, (void *)half, "RANK is set but WORLD_SIZE is not");
    CHECK_DIES(env_fn, (void *)local, "SWLSTM_LOCAL_RANK = '-1'");
    CHECK_DIES(env_fn, (void *)tmo, "SWLSTM_DIST_TIMEOUT = 'soon'");
}

// ---- stripes per rank

TEST(dist_stripes_concatenate_to_the_one_rank_window) {
    static const int cases[][3] = {{4, 2, 5}, {6, 3, 7}, {8, 4, 3}, {3, 3, 2}, {5, 1, 4}};  // B, W, T
    unsigned long long seed = 11;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int B = cases[c][0], W = cases[c][1], T = cases[c][2], Bl = B / W;
        size_t len = (size_t)B * (3 * T + 2) + 1;  // 3 windows fit, the 4th wraps to the start
        uint8_t *span = malloc(len);
        for (size_t i = 0; i < len; i++) span[i] = (uint8_t)(test_rand(&seed) * 256);
        Stripes g, l[4];
        stripes_init(&g, span, len, B, T);
        for (int r = 0; r < W; r++) dist_stripes(&l[r], &g, r, W);
        int *in = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
        int *lin = malloc(sizeof(int) * Bl * T), *ltgt = malloc(sizeof(int) * Bl * T);
        int ok = 1, wrapped = 0;
        for (int step = 0; step < 7 && ok; step++) {
            int reset = stripes_next(&g, in, tgt);
            wrapped |= step > 0 && reset;
            for (int r = 0; r < W && ok; r++) {
                ok &= stripes_next(&l[r], lin, ltgt) == reset;
                for (int t = 0; t < T; t++)
                    for (int b = 0; b < Bl; b++) {
                        ok &= lin[t * Bl + b] == in[t * B + r * Bl + b];
                        ok &= ltgt[t * Bl + b] == tgt[t * B + r * Bl + b];
                    }
            }
        }
        free(span), free(in), free(tgt), free(lin), free(ltgt);
        CHECK_MSG(ok, "B %d W %d T %d: a rank's window differs from its rows of the one-rank window", B, W, T);
        CHECK_MSG(wrapped, "B %d W %d T %d: the windows never wrapped", B, W, T);
    }
}

static void stripes_6_over_4(void *unused) {
    static const uint8_t span[600];
    Stripes g, l;
    stripes_init(&g, span, sizeof span, 6, 10);
    dist_stripes(&l, &g, 1, 4);
}

TEST(dist_stripes_need_a_divisible_batch) {
    CHECK_DIES(stripes_6_over_4, NULL, "batch_size = 6 is not divisible by the world size 4");
}

// ---- gradient buckets

static ParamTensor *tensors_of(const size_t *n, int k) {
    static char names[16][16];
    ParamTensor *t = calloc((size_t)k, sizeof *t);
    for (int i = 0, off = 0; i < k; off += (int)n[i], i++) {
        snprintf(names[i], sizeof names[i], "t%d", i);
        t[i] = (ParamTensor){names[i], (size_t)off, n[i], 1};
    }
    return t;
}

// Every element once, buckets within the limit and descending, whole tensors unless too big.
static int plan_is_sound(const DistPlan *p, const ParamTensor *t, int k, size_t most) {
    size_t total = t[k - 1].off + t[k - 1].n, end = total;
    for (int i = 0; i < p->n; i++) {
        if (p->b[i].n == 0 || p->b[i].n > most || p->b[i].off + p->b[i].n != end) return 0;
        end = p->b[i].off;
        for (int j = 0; j < k; j++) {
            size_t lo = p->b[i].off, hi = lo + p->b[i].n;
            int cut = t[j].off < hi && t[j].off + t[j].n > lo && (t[j].off < lo || t[j].off + t[j].n > hi);
            if (cut && t[j].n <= most) return 0;
        }
    }
    return end == 0;
}

TEST(dist_plan_exact) {
    static const size_t n[] = {10, 3, 50, 7, 7, 1, 20};  // offsets 0 10 13 63 70 77 78, total 98
    ParamTensor *t = tensors_of(n, 7);
    DistPlan p = dist_plan(t, 7, 16 * sizeof(real));
    static const size_t want[][2] = {{88, 10}, {78, 10}, {63, 15}, {50, 13}, {37, 13}, {25, 12}, {13, 12}, {0, 13}};
    int same = p.n == 8;
    for (int i = 0; same && i < 8; i++) same = p.b[i].off == want[i][0] && p.b[i].n == want[i][1];
    CHECK(same);
    CHECK(plan_is_sound(&p, t, 7, 16));
    CHECK_EQ(dist_plan_ready(&p, 98), 0);
    CHECK_EQ(dist_plan_ready(&p, 78), 2);
    CHECK_EQ(dist_plan_ready(&p, 70), 2);  // [63, 78) still waits for t3
    CHECK_EQ(dist_plan_ready(&p, 63), 3);
    CHECK_EQ(dist_plan_ready(&p, 0), 8);
    dist_plan_free(&p);
    p = dist_plan(t, 7, DIST_BUCKET_BYTES);
    CHECK(p.n == 1 && p.b[0].off == 0 && p.b[0].n == 98);
    dist_plan_free(&p);
    free(t);
}

TEST(dist_plan_sound_on_a_model) {
    Config cfg;
    config_defaults(&cfg);
    cfg.hidden_size = 64, cfg.embed_size = 32, cfg.num_layers = 3, cfg.block_size = 16, cfg.layer_norm = 1;
    snprintf(cfg.sparsity, sizeof cfg.sparsity, "ba_2");
    Model *m = model_create(&cfg, backend_cpu());
    static const size_t bytes[] = {4, 1000, 4096, 20000, 65536, DIST_BUCKET_BYTES};
    for (int i = 0; i < 6; i++) {
        DistPlan p = dist_plan(m->tensor, m->ntensor, bytes[i]);
        int sound = plan_is_sound(&p, m->tensor, m->ntensor, bytes[i] / sizeof(real));
        int head_first = p.b[0].off + p.b[0].n == m->nparams && p.b[p.n - 1].off == 0;
        dist_plan_free(&p);
        CHECK_MSG(sound && head_first, "bucket_bytes %zu: plan not sound", bytes[i]);
    }
    model_free(m);
}

static void plan_with_gap(void *unused) {
    static const size_t n[] = {4, 4};
    ParamTensor *t = tensors_of(n, 2);
    t[1].off++;
    dist_plan(t, 2, 64);
}

TEST(dist_plan_needs_contiguous_tensors) {
    CHECK_DIES(plan_with_gap, NULL, "tensor t0 ends at 4 but t1 starts at 5");
}

// ---- dist_init

TEST(dist_init_forms) {
    DistInit d = dist_init_parse("file:///shared/run/nccl_id");
    CHECK(!d.tcp && !strcmp(d.path, "/shared/run/nccl_id"));
    d = dist_init_parse("tcp://10.0.0.1:29500");
    CHECK(d.tcp && !strcmp(d.host, "10.0.0.1") && d.port == 29500);
    d = dist_init_parse("tcp://[::1]:80");
    CHECK(d.tcp && !strcmp(d.host, "::1") && d.port == 80);
}

static void parse_fn(void *spec) { dist_init_parse(spec); }

TEST(dist_init_bad_forms_die) {
    static const char *const bad[] = {"tcp://node1", "tcp://node1:0", "tcp://node1:70000", "tcp://:29500",
                                      "tcp://[::1]29500", "http://node1:80", "file://", "tcp://h:12x"};
    for (int i = 0; i < 8; i++) CHECK_DIES(parse_fn, (void *)bad[i], "expected file:///shared/path/nccl_id or tcp://host:port");
}

static void exchange_without_init(void *unused) {
    DistEnv e = {.rank = 1, .world = 2, .source = "test", .timeout_sec = 1};
    uint8_t id[DIST_ID_BYTES];
    dist_exchange_id("", &e, id);
}

TEST(dist_exchange_needs_dist_init) {
    CHECK_DIES(exchange_without_init, NULL, "several ranks need dist_init");
}

// ---- id exchange: other ranks are forked children that send back what they received

static DistEnv rank_env(int rank, int world, const char *run_id, double timeout) {
    DistEnv e = {.rank = rank, .world = world, .local_rank = -1, .source = "test", .timeout_sec = timeout};
    snprintf(e.run_id, sizeof e.run_id, "%s", run_id);
    return e;
}

static void make_id(uint8_t *id, unsigned char salt) {
    for (int i = 0; i < DIST_ID_BYTES; i++) id[i] = (uint8_t)(i * 7 + salt);
}

typedef struct { pid_t pid; int fd; } Child;

// Runs fetch(rank) in a child that writes the id it got to a pipe.
static Child spawn_fetch(void (*fetch)(const DistEnv *, uint8_t *, const void *), const DistEnv *e, const void *arg) {
    int fds[2];
    if (pipe(fds)) exit(2);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        uint8_t id[DIST_ID_BYTES];
        fetch(e, id, arg);
        _exit(write(fds[1], id, sizeof id) == (ssize_t)sizeof id ? 0 : 3);
    }
    close(fds[1]);
    return (Child){pid, fds[0]};
}

// 1 if the child exited 0 having sent exactly `want`.
static int child_got(Child c, const uint8_t *want) {
    uint8_t got[DIST_ID_BYTES];
    ssize_t n = read(c.fd, got, sizeof got);
    close(c.fd);
    int status = 0;
    waitpid(c.pid, &status, 0);
    return n == DIST_ID_BYTES && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !memcmp(got, want, DIST_ID_BYTES);
}

static void fetch_file(const DistEnv *e, uint8_t *id, const void *path) {
    struct timeval now;
    gettimeofday(&now, NULL);
    dist_id_file_fetch(path, e, (double)now.tv_sec - DIST_ID_GRACE_SEC, id);
}

TEST(dist_id_file_skips_a_stale_file) {
    const char *path = tmp_path("run/nccl_id");
    uint8_t old[DIST_ID_BYTES], id[DIST_ID_BYTES];
    make_id(old, 1), make_id(id, 2);
    DistEnv r0_old = rank_env(0, 2, "job-41", 5), r0 = rank_env(0, 2, "job-42", 5), r1 = rank_env(1, 2, "job-42", 10);
    dist_id_file_publish(path, &r0_old, old);  // left behind by an earlier run
    Child c = spawn_fetch(fetch_file, &r1, path);
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);  // let the child poll the stale file first
    dist_id_file_publish(path, &r0, id);
    CHECK(child_got(c, id));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == 12 + 128 + DIST_ID_BYTES);
}

static void fetch_stale_run(void *path) {
    uint8_t id[DIST_ID_BYTES];
    DistEnv e = rank_env(1, 2, "job-43", 0.2);
    fetch_file(&e, id, path);
}

static void fetch_old_file(void *path) {
    uint8_t id[DIST_ID_BYTES];
    DistEnv e = rank_env(1, 2, "", 0.2);
    fetch_file(&e, id, path);
}

static void fetch_world_3(void *path) {
    uint8_t id[DIST_ID_BYTES];
    DistEnv e = rank_env(2, 3, "", 0.2);
    fetch_file(&e, id, path);
}

TEST(dist_id_file_timeouts_say_why) {
    const char *path = tmp_path("nccl_id_stale");
    uint8_t id[DIST_ID_BYTES];
    make_id(id, 3);
    DistEnv r0 = rank_env(0, 2, "job-42", 1), anon = rank_env(0, 2, "", 1);
    CHECK_DIES(fetch_stale_run, (void *)path, "no file appeared");
    dist_id_file_publish(path, &r0, id);
    CHECK_DIES(fetch_stale_run, (void *)path, "another run: run id 'job-42', this rank has 'job-43'");
    dist_id_file_publish(path, &anon, id);
    CHECK_DIES(fetch_world_3, (void *)path, "world size 2, this rank has 3");
    struct timeval hour_ago[2];
    gettimeofday(&hour_ago[0], NULL);
    hour_ago[0].tv_sec -= 3600;
    hour_ago[1] = hour_ago[0];
    CHECK(utimes(path, hour_ago) == 0);
    CHECK_DIES(fetch_old_file, (void *)path, "stale (set SWLSTM_RUN_ID");
    CHECK_DIES(fetch_old_file, (void *)path, "timed out after 0.2 s waiting for rank 0's NCCL id");
}

static void fetch_tcp(const DistEnv *e, uint8_t *id, const void *port) {
    dist_tcp_fetch("127.0.0.1", *(const int *)port, e, id);
}

TEST(dist_id_tcp_loopback) {
    int port = 0;
    int fd = dist_tcp_listen("127.0.0.1", &port);
    CHECK(port > 0);
    uint8_t id[DIST_ID_BYTES];
    make_id(id, 4);
    DistEnv r0 = rank_env(0, 3, "job-9", 10), r1 = rank_env(1, 3, "job-9", 10), r2 = rank_env(2, 3, "job-9", 10);
    Child c1 = spawn_fetch(fetch_tcp, &r1, &port), c2 = spawn_fetch(fetch_tcp, &r2, &port);
    dist_tcp_serve(fd, &r0, id);
    CHECK(child_got(c1, id));
    CHECK(child_got(c2, id));
    dist_watch_close();
}

// The child fetches the id, then lives until the parent closes its end of `hold`.
static int hold[2];
static void fetch_and_hold(const DistEnv *e, uint8_t *id, const void *port) {
    close(hold[1]);
    dist_tcp_fetch("127.0.0.1", *(const int *)port, e, id);
    char c;
    if (read(hold[0], &c, 1)) {}  // 0 at EOF
}

TEST(dist_tcp_sees_a_peer_exit) {
    int port = 0, fd = dist_tcp_listen("127.0.0.1", &port);
    uint8_t id[DIST_ID_BYTES];
    make_id(id, 6);
    DistEnv r0 = rank_env(0, 2, "job-7", 10), r1 = rank_env(1, 2, "job-7", 10);
    CHECK(pipe(hold) == 0);
    Child c = spawn_fetch(fetch_and_hold, &r1, &port);
    close(hold[0]);
    dist_tcp_serve(fd, &r0, id);
    CHECK_EQ(dist_peer_lost(), -1);
    close(hold[1]);
    CHECK(child_got(c, id));
    CHECK_EQ(dist_peer_lost(), 1);
    dist_watch_close();
    CHECK_EQ(dist_peer_lost(), -1);
}

// Rank 0 of 3 while two children both claim rank 1.
static void serve_duplicate_rank(void *unused) {
    int port = 0, fd = dist_tcp_listen("127.0.0.1", &port);
    uint8_t id[DIST_ID_BYTES];
    make_id(id, 5);
    DistEnv r0 = rank_env(0, 3, "", 10), r1 = rank_env(1, 3, "", 10);
    spawn_fetch(fetch_tcp, &r1, &port);
    spawn_fetch(fetch_tcp, &r1, &port);
    dist_tcp_serve(fd, &r0, id);
}

// Rank 1 of 3 against a rank 0 of 2 (a forked server).
static void fetch_from_other_world(void *unused) {
    int port = 0, fd = dist_tcp_listen("127.0.0.1", &port);
    uint8_t id[DIST_ID_BYTES];
    DistEnv r0 = rank_env(0, 2, "", 2), r1 = rank_env(1, 3, "", 2);
    fflush(stderr);
    if (fork() == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(2);
        dist_tcp_serve(fd, &r0, id);
        _exit(0);
    }
    close(fd);
    dist_tcp_fetch("127.0.0.1", port, &r1, id);
}

// Nobody listens on a port that was just free.
static void fetch_nobody(void *unused) {
    int port = 0;
    close(dist_tcp_listen("127.0.0.1", &port));
    uint8_t id[DIST_ID_BYTES];
    DistEnv r1 = rank_env(1, 2, "", 0.3);
    dist_tcp_fetch("127.0.0.1", port, &r1, id);
}

static void serve_alone(void *unused) {
    int port = 0, fd = dist_tcp_listen("127.0.0.1", &port);
    uint8_t id[DIST_ID_BYTES] = {0};
    DistEnv r0 = rank_env(0, 4, "", 0.2);
    dist_tcp_serve(fd, &r0, id);
}

TEST(dist_id_tcp_errors_say_why) {
    CHECK_DIES(serve_duplicate_rank, NULL, "two processes claim rank 1");
    CHECK_DIES(fetch_from_other_world, NULL, "it is for world size 2, this rank has 3");
    CHECK_DIES(fetch_nobody, NULL, "timed out after 0.3 s connecting to rank 0 at tcp://127.0.0.1:");
    CHECK_DIES(serve_alone, NULL, "3 rank(s) never connected (1, 2, 3)");
}

#ifndef SW_CUDA
static void init_two_ranks(void *unused) {
    uint8_t id[DIST_ID_BYTES] = {0};
    dist_nccl_init(1, 2, 1, id, 1);
}

TEST(dist_without_cuda_is_one_rank) {
    uint8_t id[DIST_ID_BYTES] = {0};
    dist_nccl_init(0, 1, -1, id, 1);
    double v[2] = {2.5, 1};
    dist_sum_doubles(v, 2);
    CHECK(v[0] == 2.5 && v[1] == 1);
    real part[3] = {1, 2, 3}, full[3] = {0};
    dist_allgather(full, part, 3);
    CHECK(full[0] == 1 && full[2] == 3);
    CHECK_DIES(init_two_ranks, NULL, "built without CUDA");
}
#endif
#endif
