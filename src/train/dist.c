// dist.c: the CPU side of data-parallel training: ranks from the launcher's environment,
// the gradient bucket plan and the NCCL id exchange through a file or over TCP (dist_tcp.c;
// both on dist_ticket.c). A rank's stripes are data.c's (stripes_share). The NCCL calls
// themselves are in cuda/train/nccl.cu; a build without CUDA gets world-size-1 stubs.
#include "train/dist.h"
#include "train/dist_ticket.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// ---------------------------------------------------------------------------------------------
// ranks from the environment

typedef struct { const char *name, *rank, *size, *local; } Family;

static const Family FAMILIES[] = {
    {"SWLSTM_RANK/SWLSTM_WORLD_SIZE", "SWLSTM_RANK", "SWLSTM_WORLD_SIZE", "SWLSTM_LOCAL_RANK"},
    {"torchrun (RANK/WORLD_SIZE)", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Open MPI (OMPI_COMM_WORLD_*)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"MPICH/Hydra (PMI_RANK/PMI_SIZE)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"Slurm (SLURM_PROCID/SLURM_NTASKS)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

static const char *env_get(DistGetenv g, const char *name) {
    const char *v = g(name);
    return v && *v ? v : NULL;
}

static int env_int(const char *name, const char *v, long lo, long hi) {
    char what[96];
    snprintf(what, sizeof what, "environment variable %s", name);
    return (int)parse_long(what, v, lo, hi);
}

static void copy_str(char *dst, size_t cap, const char *src, const char *what) {
    if (strlen(src) >= cap) die("%s = '%.40s...': longer than %zu characters", what, src, cap - 1);
    strcpy(dst, src);
}

// Tells this run's peers from a stale id file or a neighbour job on the same port.
static void run_id_from(DistEnv *e, DistGetenv g) {
    const char *v;
    if ((v = env_get(g, "SWLSTM_RUN_ID")) || (v = env_get(g, "TORCHELASTIC_RUN_ID")) ||
        (v = env_get(g, "PMIX_NAMESPACE")))
        copy_str(e->run_id, sizeof e->run_id, v, "run id");
    else if ((v = env_get(g, "SLURM_JOB_ID"))) {
        const char *step = env_get(g, "SLURM_STEP_ID");
        if (snprintf(e->run_id, sizeof e->run_id, "%s%s%s", v, step ? "." : "", step ? step : "") >= (int)sizeof e->run_id)
            die("environment variable SLURM_JOB_ID = '%.40s...': too long for a run id", v);
    }
}

DistEnv dist_env_from(DistGetenv g) {
    DistEnv e = {.rank = 0, .world = 1, .local_rank = -1, .source = "default", .timeout_sec = DIST_DEFAULT_TIMEOUT};
    for (size_t i = 0; i < sizeof FAMILIES / sizeof *FAMILIES; i++) {
        const Family *f = &FAMILIES[i];
        const char *r = env_get(g, f->rank), *w = env_get(g, f->size), *l = env_get(g, f->local);
        if (!r && !w) continue;
        if (!r || !w) die("environment: %s is set but %s is not (a launch needs both)", r ? f->rank : f->size, r ? f->size : f->rank);
        e.world = env_int(f->size, w, 1, 1 << 20);
        e.rank = env_int(f->rank, r, 0, INT_MAX);
        if (e.rank >= e.world) die("environment: %s = %d is not below %s = %d", f->rank, e.rank, f->size, e.world);
        if (l) e.local_rank = env_int(f->local, l, 0, e.world - 1);
        e.source = f->name;
        break;
    }
    run_id_from(&e, g);
    const char *v;
    if ((v = env_get(g, "SWLSTM_DIST_INIT"))) copy_str(e.init, sizeof e.init, v, "environment variable SWLSTM_DIST_INIT");
    if ((v = env_get(g, "SWLSTM_DIST_TIMEOUT"))) e.timeout_sec = parse_double("environment variable SWLSTM_DIST_TIMEOUT", v, 0.001, 1e9);
    if (e.world > 1 && (v = env_get(g, "SWLSTM_DIST_TOKEN"))) dist_token_set(&e, v, strlen(v), "environment variable SWLSTM_DIST_TOKEN");
    return e;
}

static const char *process_getenv(const char *name) { return getenv(name); }
DistEnv dist_env(void) { return dist_env_from(process_getenv); }

// ---------------------------------------------------------------------------------------------
// gradient buckets

static void plan_push(DistPlan *p, int *cap, size_t off, size_t n) {
    if (p->n == *cap) p->b = xrealloc(p->b, (size_t)(*cap = *cap ? 2 * *cap : 16) * sizeof *p->b);
    p->b[p->n++] = (DistBucket){off, n};
}

// A tensor above the limit: k equal contiguous chunks, highest offsets first.
static void plan_split(DistPlan *p, int *cap, const ParamTensor *t, size_t most) {
    size_t k = (t->n + most - 1) / most, end = t->off + t->n;
    for (size_t j = 0; j < k; j++) {
        size_t n = t->n / k + (j < t->n % k);
        plan_push(p, cap, end - n, n);
        end -= n;
    }
}

DistPlan dist_plan(const ParamTensor *t, int ntensor, size_t bucket_bytes) {
    size_t most = bucket_bytes / sizeof(real);
    if (most == 0) die("gradient bucket size %zu bytes: expected at least %zu", bucket_bytes, sizeof(real));
    DistPlan p = {0};
    int cap = 0;
    size_t lo = 0, n = 0;  // the open bucket [lo, lo+n)
    for (int i = ntensor - 1; i >= 0; i--) {
        if (i + 1 < ntensor && t[i].off + t[i].n != t[i + 1].off)
            die("gradient buckets: tensor %s ends at %zu but %s starts at %zu (the flat buffer must be contiguous)",
                t[i].name, t[i].off + t[i].n, t[i + 1].name, t[i + 1].off);
        if (n && n + t[i].n > most) {
            plan_push(&p, &cap, lo, n);
            n = 0;
        }
        if (t[i].n > most) {
            plan_split(&p, &cap, &t[i], most);
            continue;
        }
        lo = t[i].off;
        n += t[i].n;
    }
    if (n) plan_push(&p, &cap, lo, n);
    return p;
}

void dist_plan_free(DistPlan *p) {
    free(p->b);
    *p = (DistPlan){0};
}

int dist_plan_ready(const DistPlan *p, size_t ready_off) {
    int k = 0;
    while (k < p->n && p->b[k].off >= ready_off) k++;
    return k;
}

// ---------------------------------------------------------------------------------------------
// id exchange through a file on a shared path

static void write_all_fd(int fd, const uint8_t *p, size_t n, const char *path) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("dist_init file %s: cannot write: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

static void make_parent_dir(const char *path) {
    char dir[sizeof ((DistInit *)0)->path];
    copy_str(dir, sizeof dir, path, "dist_init file path");
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return;
    *slash = 0;
    if (mkdir_p(dir)) die("dist_init file %s: cannot create the directory %s: %s", path, dir, strerror(errno));
}

// Written under a temporary name and renamed: a reader sees no file or the whole file.
void dist_id_file_publish(const char *path, const DistEnv *e, const uint8_t id[DIST_ID_BYTES]) {
    uint8_t buf[TICKET_BYTES];
    memcpy(dist_put_head(buf, TICKET_MAGIC, e), id, DIST_ID_BYTES);
    make_parent_dir(path);
    if (unlink(path) && errno != ENOENT) die("dist_init file %s: cannot remove the old id file: %s", path, strerror(errno));
    char tmp[sizeof ((DistInit *)0)->path + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) die("dist_init file %s: cannot create %s: %s", path, tmp, strerror(errno));
    write_all_fd(fd, buf, sizeof buf, path);
    if (fsync(fd) || close(fd)) die("dist_init file %s: cannot flush %s: %s", path, tmp, strerror(errno));
    if (rename(tmp, path)) die("dist_init file %s: cannot rename %s to it: %s", path, tmp, strerror(errno));
}

// 1 and the id when the file holds this run's ticket; else 0 and why not.
static int try_read_ticket(const char *path, const DistEnv *e, double not_before, uint8_t *id, char *why, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, cap, errno == ENOENT ? "no file appeared" : "cannot open it: %s", strerror(errno));
        return 0;
    }
    uint8_t buf[TICKET_BYTES + 1];
    struct stat st;
    ssize_t got = fstat(fd, &st) ? -1 : read(fd, buf, sizeof buf);
    close(fd);
    if (got != TICKET_BYTES) {
        snprintf(why, cap, "the file has %zd bytes, expected %d", got, TICKET_BYTES);
        return 0;
    }
    dist_head_check(buf, TICKET_MAGIC, e, why, cap);
    double mtime = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
    if (!*why && !e->run_id[0] && mtime < not_before)
        snprintf(why, cap, "the file is more than %g s older than this rank's start, so stale (set SWLSTM_RUN_ID to tell runs apart)", DIST_ID_GRACE_SEC);
    if (*why) return 0;
    memcpy(id, buf + HEAD_BYTES, DIST_ID_BYTES);
    return 1;
}

void dist_id_file_fetch(const char *path, const DistEnv *e, double not_before, uint8_t id[DIST_ID_BYTES]) {
    double deadline = now_sec() + e->timeout_sec, interval = 0.01;
    char why[400];
    while (!try_read_ticket(path, e, not_before, id, why, sizeof why)) {
        if (now_sec() >= deadline)
            die("rank %d: timed out after %g s waiting for rank 0's NCCL id in %s (%s); is rank 0 running, and do all ranks share this path?",
                e->rank, e->timeout_sec, path, why);
        dist_nap(dist_backoff(&interval));
    }
}

// ---------------------------------------------------------------------------------------------
// dist_init

static void die_spec(const char *spec) {
    die("dist_init = '%s': expected file:///shared/path/nccl_id or tcp://host:port (port 1-65535)", spec);
}

DistInit dist_init_parse(const char *spec) {
    DistInit d = {0};
    if (!strncmp(spec, "file://", 7)) {
        if (!spec[7]) die_spec(spec);
        copy_str(d.path, sizeof d.path, spec + 7, "dist_init file path");
        return d;
    }
    if (strncmp(spec, "tcp://", 6)) die_spec(spec);
    const char *h = spec + 6, *colon;
    size_t hlen;
    if (*h == '[') {  // [IPv6]:port
        const char *close_br = strchr(h, ']');
        if (!close_br || close_br[1] != ':') die_spec(spec);
        h++;
        hlen = (size_t)(close_br - h);
        colon = close_br + 1;
    } else {
        colon = strrchr(h, ':');
        if (!colon) die_spec(spec);
        hlen = (size_t)(colon - h);
    }
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!hlen || hlen >= sizeof d.host || !colon[1] || *end || errno || port < 1 || port > 65535) die_spec(spec);
    d.tcp = 1;
    memcpy(d.host, h, hlen);
    d.port = (int)port;
    return d;
}

static double wall_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void dist_exchange_id(const char *spec, const DistEnv *e, uint8_t id[DIST_ID_BYTES]) {
    if (e->world == 1) return;
    if (!spec || !*spec)
        die("rank %d of %d (from %s): several ranks need dist_init = file:///shared/path or tcp://host:port "
            "(or SWLSTM_DIST_INIT) to pass rank 0's NCCL id", e->rank, e->world, e->source);
    DistInit d = dist_init_parse(spec);
    if (d.tcp && !e->has_token && !dist_host_is_loopback(d.host))
        die("dist_init = %s reaches beyond this machine, so the ranks need a shared secret: every rank the same "
            "file named by dist_token (e.g. openssl rand -hex 32 > FILE; chmod 600 FILE) or SWLSTM_DIST_TOKEN "
            "(docs/MULTIGPU.md, \"Who may join\")", spec);
    if (d.tcp && e->rank == 0) {
        int port = d.port;
        dist_tcp_serve(dist_tcp_listen(d.host, &port), e, id);
    } else if (d.tcp) dist_tcp_fetch(d.host, d.port, e, id);
    else if (e->rank == 0) dist_id_file_publish(d.path, e, id);
    else dist_id_file_fetch(d.path, e, wall_sec() - DIST_ID_GRACE_SEC, id);
}

// ---------------------------------------------------------------------------------------------
// without CUDA: one rank, and the collectives are identities

#ifndef SW_CUDA
void dist_nccl_get_unique_id(uint8_t id[DIST_ID_BYTES]) {
    (void)id;
    die("several ranks need NCCL: this swlstm was built without CUDA (nvcc was not found by make)");
}

void dist_nccl_init(int rank, int world, int local_rank, const uint8_t id[DIST_ID_BYTES], double timeout_sec) {
    (void)local_rank, (void)id, (void)timeout_sec;
    if (world > 1)
        die("rank %d of %d: several ranks need NCCL, but this swlstm was built without CUDA (nvcc was not found by make)", rank, world);
}

void dist_nccl_env(void) {}
void dist_allreduce_sum(real *buf, size_t n) { (void)buf, (void)n; }
void dist_allgather(real *full, const real *part, size_t n) { memmove(full, part, n * sizeof(real)); }
void dist_wait(const char *what) { (void)what; }
void dist_sum_doubles(double *x, int n) { (void)x, (void)n; }
void dist_nccl_finalize(void) {}
#endif
