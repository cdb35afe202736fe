// test_dist.c: the CPU side of data-parallel training: ranks from the environment, stripes
// per rank against the one-rank layout, the gradient bucket plan, and the NCCL id exchange
// through a file and over loopback TCP (other ranks are forked children), with its shared
// secret, its handshake as bytes, and strangers at rank 0's port.
#ifndef SW_DOUBLE
#include "train/data.h"
#include "train/dist.h"
#include "train/dist_hello.h"
#include "base/sha256.h"
#include "test.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

TEST(stripes_shares_concatenate_to_the_one_rank_window) {
    static const int cases[][3] = {{4, 2, 5}, {6, 3, 7}, {8, 4, 3}, {3, 3, 2}, {5, 1, 4}};  // B, W, T
    unsigned long long seed = 11;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int B = cases[c][0], W = cases[c][1], T = cases[c][2], Bl = B / W;
        size_t len = (size_t)B * (3 * T + 2) + 1;  // 3 windows fit, the 4th wraps to the start
        uint8_t *span = malloc(len);
        for (size_t i = 0; i < len; i++) span[i] = (uint8_t)(test_rand(&seed) * 256);
        Stripes g, l[4];
        stripes_init(&g, span, len, B, T);
        for (int r = 0; r < W; r++) stripes_share(&l[r], &g, r, W);
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
    stripes_share(&l, &g, 1, 4);
}

TEST(stripes_shares_need_a_divisible_batch) {
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

typedef struct { pid_t pid; int fd; } Child;  // a forked child and its stderr

static Child spawn(void (*fn)(void *), void *arg) {
    Child c;
    c.pid = spawn_child(fn, arg, &c.fd);
    return c;
}

typedef struct {
    void (*fetch)(const DistEnv *, uint8_t *, const void *);
    const DistEnv *e;
    const void *arg;
} Fetch;

// A rank in a child: the id it got goes to its stderr, like the reason it died.
static void fetch_fn(void *p) {
    const Fetch *f = p;
    uint8_t id[DIST_ID_BYTES];
    f->fetch(f->e, id, f->arg);
    if (write(2, id, sizeof id) != (ssize_t)sizeof id) _exit(3);
}

static Child spawn_fetch(void (*fetch)(const DistEnv *, uint8_t *, const void *), const DistEnv *e, const void *arg) {
    Fetch f = {fetch, e, arg};
    return spawn(fetch_fn, &f);
}

// 1 if the child exited 0 having sent exactly `want`.
static int child_got(Child c, const uint8_t *want) {
    int status;
    char *got = child_stderr(c.pid, c.fd, &status);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !memcmp(got, want, DIST_ID_BYTES);
    if (!ok) fprintf(stderr, "  a rank failed (status %d): %s\n", status, got);
    free(got);
    return ok;
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

// ---- the shared secret (tcp:// beyond this machine)

#define SECRET "correct horse battery staple"  // 28 bytes

static DistEnv with_token(DistEnv e, const char *secret) {
    dist_token_set(&e, secret, strlen(secret), "test");
    return e;
}

// Waits for the child; returns its exit status (128 if it did not exit), its stderr in out.
static int child_ended(Child c, char *out, size_t cap) {
    int status;
    char *text = child_stderr(c.pid, c.fd, &status);
    snprintf(out, cap, "%s", text);
    free(text);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void token_file_fn(void *path) {
    DistEnv e = rank_env(1, 2, "", 1);
    dist_token_file(&e, path);
}

TEST(dist_token_from_the_environment_or_a_file) {
    static const char *const two[] = {"SWLSTM_RANK", "1", "SWLSTM_WORLD_SIZE", "2", "SWLSTM_DIST_TOKEN", SECRET, NULL};
    static const char *const one[] = {"SWLSTM_DIST_TOKEN", SECRET, NULL};
    static const char *const none[] = {"SWLSTM_RANK", "1", "SWLSTM_WORLD_SIZE", "2", NULL};
    uint8_t want[SHA256_BYTES], zero[SHA256_BYTES] = {0};
    sha256(SECRET, strlen(SECRET), want);
    DistEnv e = env_of(two);
    CHECK(e.has_token && !memcmp(e.token_key, want, sizeof want));
    e = env_of(one);  // one process: no exchange, the variable is not read
    CHECK(!e.has_token && !memcmp(e.token_key, zero, sizeof zero));
    e = env_of(none);
    CHECK(!e.has_token);
    // the file: a final newline (or CRLF) is not part of the secret; it replaces the variable's
    const char *path = write_file(tmp_path("token"), SECRET "\r\n", strlen(SECRET) + 2);
    CHECK(chmod(path, 0600) == 0);
    e = with_token(env_of(two), "another secret, not this one");
    dist_token_file(&e, path);
    CHECK(e.has_token && !memcmp(e.token_key, want, sizeof want));
}

static void short_env_token(void *unused) {
    static const char *const vars[] = {"SWLSTM_RANK", "0", "SWLSTM_WORLD_SIZE", "2", "SWLSTM_DIST_TOKEN", "hunter2", NULL};
    env_of(vars);
}

TEST(dist_token_errors_never_show_it) {
    char out[2048];
    CHECK_EQ(child_ended(spawn(short_env_token, NULL), out, sizeof out), 1);
    CHECK(strstr(out, "environment variable SWLSTM_DIST_TOKEN: the shared secret has 7 bytes, expected at least 16"));
    CHECK(!strstr(out, "hunter2"));
    // a secret put where the file's path belongs
    CHECK_EQ(child_ended(spawn(token_file_fn, SECRET), out, sizeof out), 1);
    CHECK(strstr(out, "dist_token: cannot open the file it names: No such file or directory"));
    CHECK(!strstr(out, SECRET));
    CHECK_DIES(token_file_fn, (void *)test_tmpdir(), "expected a regular file holding the shared secret");
    const char *path = write_file(tmp_path("short_token"), "hunter2\n", 8);
    CHECK_EQ(child_ended(spawn(token_file_fn, (void *)path), out, sizeof out), 1);
    CHECK(strstr(out, "the shared secret has 7 bytes") && !strstr(out, "hunter2"));
}

TEST(dist_host_is_loopback_only_for_this_machine) {
    static const char *const local[] = {"127.0.0.1", "127.3.2.1", "::1", "localhost", "::ffff:127.0.0.1"};
    static const char *const other[] = {"10.0.0.1", "0.0.0.0", "192.0.2.7", "::", "2001:db8::1", "no.such.host.invalid"};
    for (int i = 0; i < 5; i++) CHECK_MSG(dist_host_is_loopback(local[i]), "%s", local[i]);
    for (int i = 0; i < 6; i++) CHECK_MSG(!dist_host_is_loopback(other[i]), "%s", other[i]);
}

static void exchange_beyond_loopback(void *rank) {
    DistEnv e = rank_env(*(int *)rank, 2, "", 1);
    uint8_t id[DIST_ID_BYTES] = {0};
    dist_exchange_id("tcp://192.0.2.7:29500", &e, id);
}

TEST(dist_tcp_beyond_this_machine_needs_a_token) {
    static int ranks[] = {0, 1};
    for (int i = 0; i < 2; i++)
        CHECK_DIES(exchange_beyond_loopback, &ranks[i], "dist_init = tcp://192.0.2.7:29500 reaches beyond this machine, so the ranks need a shared secret");
}

// ---- the handshake as bytes (rank 0's side; tests/fuzz/fuzz_hello.c feeds it at random)

static const uint8_t NONCE0[DIST_NONCE_BYTES] = {1, 2, 3}, NONCE[DIST_NONCE_BYTES] = {4, 5, 6};

static HelloVerdict judged(const DistEnv *as, const uint8_t *nonce0, const DistEnv *r0, Hello *h) {
    static const char served[4] = {0, 0, 1, 0};  // rank 2 has its id
    uint8_t hello[DIST_HELLO_BYTES];
    dist_hello_make(hello, as, nonce0, NONCE);
    return dist_hello_judge(hello, sizeof hello, NONCE0, r0, served, h);
}

TEST(dist_hello_proof_comes_first) {
    DistEnv r0 = with_token(rank_env(0, 4, "job-1", 1), SECRET), r1 = with_token(rank_env(1, 4, "job-1", 1), SECRET);
    Hello h;
    CHECK_EQ(judged(&r1, NONCE0, &r0, &h), HELLO_OK);
    CHECK(h.rank == 1 && !memcmp(h.nonce, NONCE, sizeof NONCE));
    // without the secret, with another, or a recorded hello under a new challenge: whatever it claims
    DistEnv plain = rank_env(1, 4, "job-1", 1), other = with_token(rank_env(2, 9, "x", 1), "not the secret, though long");
    uint8_t nonce0b[DIST_NONCE_BYTES] = {7};
    CHECK_EQ(judged(&plain, NONCE0, &r0, &h), HELLO_FORGED);
    CHECK(h.rank == -1 && strstr(h.why, "failed the proof of the shared secret"));
    CHECK_EQ(judged(&other, NONCE0, &r0, &h), HELLO_FORGED);
    CHECK_EQ(judged(&r1, nonce0b, &r0, &h), HELLO_FORGED);
    // holders of the secret whose launch differs end the run
    DistEnv w3 = with_token(rank_env(1, 3, "job-1", 1), SECRET), run = with_token(rank_env(1, 4, "job-2", 1), SECRET);
    CHECK_EQ(judged(&w3, NONCE0, &r0, &h), HELLO_MISMATCH);
    CHECK(!strcmp(h.why, "rank 1 connected, but it is for world size 3, this rank has 4"));
    CHECK_EQ(judged(&run, NONCE0, &r0, &h), HELLO_MISMATCH);
    CHECK(!strcmp(h.why, "rank 1 connected, but it is from another run: run id 'job-2', this rank has 'job-1'"));
    static const int claims[] = {2, 0};  // served, rank 0
    for (int i = 0; i < 2; i++) {
        DistEnv r = with_token(rank_env(claims[i], 4, "job-1", 1), SECRET);
        CHECK_EQ(judged(&r, NONCE0, &r0, &h), HELLO_RANK);
    }
    CHECK(!strcmp(h.why, "two processes claim rank 0: check the rank variables of the launch"));
}

TEST(dist_hello_bytes_arrive_in_pieces) {
    DistEnv r0 = with_token(rank_env(0, 4, "job-1", 1), SECRET), r1 = with_token(rank_env(1, 4, "job-1", 1), SECRET);
    static const char served[4] = {0};
    uint8_t hello[DIST_HELLO_BYTES + 1] = {0};
    Hello h;
    dist_hello_make(hello, &r1, NONCE0, NONCE);
    for (size_t n = 0; n < DIST_HELLO_BYTES; n++) CHECK_EQ(dist_hello_judge(hello, n, NONCE0, &r0, served, &h), HELLO_MORE);
    CHECK_EQ(dist_hello_judge(hello, DIST_HELLO_BYTES + 1, NONCE0, &r0, served, &h), HELLO_GARBAGE);
    hello[4] ^= 1;  // a flipped bit of the magic shows at once
    CHECK_EQ(dist_hello_judge(hello, 4, NONCE0, &r0, served, &h), HELLO_MORE);
    CHECK_EQ(dist_hello_judge(hello, 5, NONCE0, &r0, served, &h), HELLO_GARBAGE);
    CHECK(!strcmp(h.why, "it sent bytes that are not a swlstm hello"));
    hello[4] ^= 1;
    hello[HEAD_BYTES] ^= 1;  // of the rank: the proof covers every byte
    CHECK_EQ(dist_hello_judge(hello, DIST_HELLO_BYTES, NONCE0, &r0, served, &h), HELLO_FORGED);
}

TEST(dist_reply_proves_and_hides_the_id) {
    DistEnv r0 = with_token(rank_env(0, 2, "job-1", 1), SECRET), r1 = with_token(rank_env(1, 2, "job-1", 1), SECRET);
    DistEnv impostor = with_token(rank_env(0, 2, "job-1", 1), "a guess at the secret, wrong");
    uint8_t id[DIST_ID_BYTES], got[DIST_ID_BYTES], reply[DIST_REPLY_BYTES];
    make_id(id, 8);
    Hello h = {.rank = 1};
    memcpy(h.nonce, NONCE, sizeof NONCE);
    dist_reply_make(reply, HELLO_OK, &r0, id, NONCE0, &h);
    CHECK(dist_reply_open(reply, &r1, NONCE0, NONCE, got) && !memcmp(got, id, sizeof id));
    CHECK(!memmem(reply, sizeof reply, id, 8));  // not in the clear
    uint8_t other[DIST_NONCE_BYTES] = {9};
    CHECK(!dist_reply_open(reply, &r1, NONCE0, other, got));  // recorded for another hello
    reply[40] ^= 1;
    CHECK(!dist_reply_open(reply, &r1, NONCE0, NONCE, got));
    dist_reply_make(reply, HELLO_OK, &impostor, id, NONCE0, &h);
    CHECK(!dist_reply_open(reply, &r1, NONCE0, NONCE, got));
    dist_reply_make(reply, HELLO_FORGED, &r0, id, NONCE0, &h);
    uint8_t zeros[DIST_REPLY_BYTES - 4] = {0};
    CHECK(reply[0] == HELLO_FORGED && !memcmp(reply + 4, zeros, sizeof zeros));
}

// ---- strangers at rank 0's port (this process plays them)

// A connection to the loopback port (-1 if refused: every use of it then fails); reads give
// up after 30 s, so a rank 0 that hangs fails the test.
static int connect_to(int port) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval limit = {30, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && (connect(fd, (struct sockaddr *)&sa, sizeof sa) || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int read_all(int fd, uint8_t *p, size_t n) {
    for (ssize_t k; n; p += k, n -= (size_t)k)
        if ((k = recv(fd, p, n, 0)) <= 0) return 0;
    return 1;
}

// 1 when rank 0 closes the connection without sending more (then so does this side).
static int closed_by_peer(int fd) {
    char c;
    ssize_t k = recv(fd, &c, 1, 0);
    int closed = k == 0 || (k < 0 && errno == ECONNRESET);  // a reset: it closed with our bytes unread
    close(fd);
    return closed;
}

// 1 if rank 0 challenges a new connection, takes `bytes` and closes it.
static int garbage_closed(int port, const void *bytes, size_t n, int then_shut) {
    uint8_t challenge[DIST_CHALLENGE_BYTES];
    int fd = connect_to(port);
    if (!read_all(fd, challenge, sizeof challenge) || write(fd, bytes, n) != (ssize_t)n) return close(fd), 0;
    if (then_shut) shutdown(fd, SHUT_WR);
    return closed_by_peer(fd);
}

// The verdict of rank 0's reply to a hello made as `as`, if it then closes the connection; else -1.
static int hello_as(int port, const DistEnv *as) {
    uint8_t challenge[DIST_CHALLENGE_BYTES], nonce0[DIST_NONCE_BYTES], hello[DIST_HELLO_BYTES], reply[DIST_REPLY_BYTES];
    int fd = connect_to(port), verdict = -1;
    if (read_all(fd, challenge, sizeof challenge) && dist_challenge_read(challenge, nonce0)) {
        dist_hello_make(hello, as, nonce0, NONCE);
        if (write(fd, hello, sizeof hello) == (ssize_t)sizeof hello && read_all(fd, reply, sizeof reply)) verdict = (int)get_u32(reply);
    }
    return closed_by_peer(fd) ? verdict : -1;
}

// Garbage, a wrong secret, no secret claiming rank 1: 1 if rank 0 dropped each as it should.
static int strangers(int port) {
    static const char http[] = "GET / HTTP/1.0\r\n\r\n";
    DistEnv wrong = with_token(rank_env(1, 3, "job-5", 1), "a guess at the secret, wrong"), none = rank_env(1, 3, "job-5", 1);
    return garbage_closed(port, http, sizeof http - 1, 0) && hello_as(port, &wrong) == HELLO_FORGED &&
           hello_as(port, &none) == HELLO_FORGED;
}

typedef struct { int fd; DistEnv e; uint8_t id[DIST_ID_BYTES]; } Serving;

static void serve_fn(void *arg) {
    Serving *s = arg;
    dist_tcp_serve(s->fd, &s->e, s->id);
}

static void fetch_wrong_token(void *port) {
    uint8_t id[DIST_ID_BYTES];
    DistEnv e = with_token(rank_env(2, 3, "job-5", 10), "a guess at the secret, wrong");
    fetch_tcp(&e, id, port);
}

// The ranks of a run of 3 with strangers before, between and after them; 1 if each stranger
// was turned away and each rank got the id.
static int crowd(int port, const uint8_t *id, int *silent) {
    DistEnv r1 = with_token(rank_env(1, 3, "job-5", 30), SECRET), r2 = with_token(rank_env(2, 3, "job-5", 30), SECRET);
    DistEnv claim = with_token(rank_env(1, 3, "job-5", 1), "a guess at the secret, wrong");
    uint8_t half[DIST_HELLO_BYTES];
    dist_hello_make(half, &r1, NONCE0, NONCE);
    for (int i = 0; i < 20; i++) silent[i] = connect_to(port);
    int ok = strangers(port) && expect_die(fetch_wrong_token, &port, "rejected this rank's proof of the shared secret");
    ok = ok && child_got(spawn_fetch(fetch_tcp, &r1, &port), id);
    ok = ok && hello_as(port, &claim) == HELLO_FORGED && garbage_closed(port, half, 100, 1);
    return ok && child_got(spawn_fetch(fetch_tcp, &r2, &port), id);
}

// 1 if rank 0 closed each connection (after its challenge).
static int all_closed(int *fd, int n) {
    int closed = 0;
    for (int i = 0; i < n; i++) {
        uint8_t challenge[DIST_CHALLENGE_BYTES];
        closed += read_all(fd[i], challenge, sizeof challenge) && closed_by_peer(fd[i]);
    }
    return closed == n;
}

TEST(dist_tcp_strangers_cannot_stop_a_run) {
    Serving s = {.e = with_token(rank_env(0, 3, "job-5", 60), SECRET)};
    int port = 0, silent[20];
    s.fd = dist_tcp_listen("127.0.0.1", &port);
    make_id(s.id, 12);
    Child r0 = spawn(serve_fn, &s);
    close(s.fd);
    int ok = crowd(port, s.id, silent);
    char out[8192];
    int status = child_ended(r0, out, sizeof out);
    CHECK_MSG(ok, "a stranger was not turned away, or a rank did not get the id; rank 0 said: %s", out);
    CHECK_MSG(status == 0, "rank 0 failed: %s", out);
    CHECK_EQ(count_of(out, "rank 0: closed a connection from 127.0.0.1 port "), 6);
    CHECK_EQ(count_of(out, "not a swlstm hello"), 1);
    CHECK_EQ(count_of(out, "failed the proof of the shared secret"), 4);
    CHECK_EQ(count_of(out, "it closed after 100 of 208 hello bytes"), 1);
    CHECK(!strstr(out, SECRET));
    CHECK_MSG(all_closed(silent, 20), "the silent connections stayed open after the ranks joined");
}

TEST(dist_tcp_without_its_ranks_rank_0_ends_by_its_timeout) {
    Serving s = {.e = with_token(rank_env(0, 2, "job-5", 2), SECRET)};
    int port = 0, silent[20];
    s.fd = dist_tcp_listen("127.0.0.1", &port);
    Child r0 = spawn(serve_fn, &s);
    close(s.fd);
    for (int i = 0; i < 20; i++) silent[i] = connect_to(port);
    int ok = strangers(port);
    char out[8192];
    int status = child_ended(r0, out, sizeof out);
    CHECK_MSG(ok, "a stranger was not turned away; rank 0 said: %s", out);
    CHECK_EQ(status, 1);
    CHECK(strstr(out, "swlstm: error: rank 0: timed out after 2 s with 1 rank(s) never connected (1)"));
    CHECK_EQ(count_of(out, "rank 0: closed a connection from 127.0.0.1 port "), 3);
    CHECK(!strstr(out, SECRET));
    CHECK(all_closed(silent, 20));
}

// A listener that challenges like rank 0 but does not hold the secret.
static void impostor_fn(void *arg) {
    Serving *s = arg;
    uint8_t challenge[DIST_CHALLENGE_BYTES], hello[DIST_HELLO_BYTES], reply[DIST_REPLY_BYTES];
    int c = accept(s->fd, NULL, NULL);
    Hello h = {.rank = 1};
    dist_challenge_make(challenge, NONCE0);
    if (write(c, challenge, sizeof challenge) != (ssize_t)sizeof challenge || !read_all(c, hello, sizeof hello)) _exit(2);
    memcpy(h.nonce, hello + HEAD_BYTES + 4, DIST_NONCE_BYTES);
    dist_reply_make(reply, HELLO_OK, &s->e, s->id, NONCE0, &h);
    if (write(c, reply, sizeof reply) != (ssize_t)sizeof reply) _exit(2);
    char x;
    if (read(c, &x, 1)) {}  // until the rank hangs up
}

static void fetch_from_impostor(void *port) {
    uint8_t id[DIST_ID_BYTES];
    DistEnv e = with_token(rank_env(1, 2, "job-5", 10), SECRET);
    fetch_tcp(&e, id, port);
}

TEST(dist_tcp_rank_takes_no_id_from_an_impostor) {
    Serving s = {.e = with_token(rank_env(0, 2, "job-5", 10), "a guess at the secret, wrong")};
    int port = 0;
    s.fd = dist_tcp_listen("127.0.0.1", &port);
    Child fake = spawn(impostor_fn, &s);
    close(s.fd);
    char want[200];
    snprintf(want, sizeof want, "rank 1: the listener at tcp://127.0.0.1:%d answered without proving the shared secret: it is not rank 0 of this run", port);
    CHECK_DIES(fetch_from_impostor, &port, want);
    char out[256];
    child_ended(fake, out, sizeof out);
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
