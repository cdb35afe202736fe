// dist.c: the CPU side of data-parallel training: ranks from the launcher's environment,
// stripes per rank, the gradient bucket plan and the NCCL id exchange (file or TCP). The
// NCCL calls themselves are in cuda/train/nccl.cu; a build without CUDA gets world-size-1 stubs.
#include "train/dist.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
    return e;
}

static const char *process_getenv(const char *name) { return getenv(name); }
DistEnv dist_env(void) { return dist_env_from(process_getenv); }

// ---------------------------------------------------------------------------------------------
// stripes per rank

// A rank's stripes are adjacent in the span, so its layout is the global one moved to its
// first stripe with B/world stripes of the same length: positions and wraps stay in step.
void dist_stripes(Stripes *local, const Stripes *g, int rank, int world) {
    if (world < 1 || rank < 0 || rank >= world) die("dist_stripes: rank %d of world size %d", rank, world);
    if (g->B % world)
        die("batch_size = %d is not divisible by the world size %d: each rank reads batch_size/%d stripes (use a multiple of %d)",
            g->B, world, world, world);
    int Bl = g->B / world;
    *local = *g;
    local->base = g->base + (size_t)rank * Bl * g->stripe_len;
    local->len = (size_t)Bl * g->stripe_len;
    local->B = Bl;
}

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
// the id ticket: what rank 0 hands out, in a file or over TCP

#define TICKET_MAGIC "SWLSTID1"
#define HELLO_MAGIC "SWLSTHI1"
#define RUN_BYTES 128
#define HEAD_BYTES (8 + 4 + RUN_BYTES)               // magic, world size, run id
#define TICKET_BYTES (HEAD_BYTES + DIST_ID_BYTES)    // rank 0's answer: head, id
#define HELLO_BYTES (HEAD_BYTES + 4)                 // a rank's question over TCP: head, rank

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint32_t get_u32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

// Returns where the body (id or rank) goes.
static uint8_t *put_head(uint8_t *p, const char *magic, const DistEnv *e) {
    memcpy(p, magic, 8);
    put_u32(p + 8, (uint32_t)e->world);
    memset(p + 12, 0, RUN_BYTES);
    memcpy(p + 12, e->run_id, strnlen(e->run_id, RUN_BYTES - 1));
    return p + HEAD_BYTES;
}

typedef struct { uint32_t world; char run_id[RUN_BYTES]; } Head;

// 0 unless buf starts with magic.
static int get_head(const uint8_t *buf, const char *magic, Head *h) {
    if (memcmp(buf, magic, 8)) return 0;
    h->world = get_u32(buf + 8);
    memcpy(h->run_id, buf + 12, RUN_BYTES);
    h->run_id[RUN_BYTES - 1] = 0;
    return 1;
}

// Why a ticket or hello is not from this run ("" if it is).
static void head_check(const uint8_t *buf, const char *magic, const DistEnv *e, char *why, size_t cap) {
    Head h;
    *why = 0;
    if (!get_head(buf, magic, &h)) snprintf(why, cap, "not a swlstm id file");
    else if (h.world != (uint32_t)e->world) snprintf(why, cap, "it is for world size %u, this rank has %d", h.world, e->world);
    else if (strcmp(h.run_id, e->run_id)) snprintf(why, cap, "it is from another run: run id '%s', this rank has '%s'", h.run_id, e->run_id);
}

static double wall_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap(double sec) {
    struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
    nanosleep(&ts, NULL);
}

// Poll intervals that start short (the usual case: the id is nearly there) and stay modest.
static double backoff(double *interval) {
    double d = *interval;
    *interval = d * 2 < 0.5 ? d * 2 : 0.5;
    return d;
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
    memcpy(put_head(buf, TICKET_MAGIC, e), id, DIST_ID_BYTES);
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
    head_check(buf, TICKET_MAGIC, e, why, cap);
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
        nap(backoff(&interval));
    }
}

// ---------------------------------------------------------------------------------------------
// liveness: the id-exchange connections stay open, so a rank that exits (crash, kill, die)
// closes them and its peers need not wait for the NCCL timeout

static struct {
    struct pollfd *pf;
    int *rank, n, cap;
} watch;

static void watch_add(int fd, int rank) {
    if (watch.n == watch.cap) {
        watch.cap = watch.cap ? 2 * watch.cap : 8;
        watch.pf = xrealloc(watch.pf, (size_t)watch.cap * sizeof *watch.pf);
        watch.rank = xrealloc(watch.rank, (size_t)watch.cap * sizeof(int));
    }
    watch.pf[watch.n] = (struct pollfd){fd, POLLIN | POLLRDHUP, 0};
    watch.rank[watch.n++] = rank;
}

int dist_peer_lost(void) {
    if (watch.n == 0 || poll(watch.pf, (nfds_t)watch.n, 0) <= 0) return -1;
    for (int i = 0; i < watch.n; i++) {
        char c;
        short ev = watch.pf[i].revents;
        if ((ev & (POLLHUP | POLLERR | POLLRDHUP)) || ((ev & POLLIN) && recv(watch.pf[i].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0))
            return watch.rank[i];
    }
    return -1;
}

void dist_watch_close(void) {
    for (int i = 0; i < watch.n; i++) close(watch.pf[i].fd);
    free(watch.pf);
    free(watch.rank);
    watch.pf = NULL;
    watch.rank = NULL;
    watch.n = watch.cap = 0;
}

// ---------------------------------------------------------------------------------------------
// id exchange over TCP: each rank sends a hello, rank 0 answers with a verdict and its ticket

enum { TCP_OK, TCP_MISMATCH, TCP_RANK };
#define REPLY_BYTES (4 + TICKET_BYTES)

// Moves n bytes before the deadline; 0 on success, -1 on timeout, EOF or error.
static int io_full(int fd, uint8_t *p, size_t n, int sending, double deadline) {
    while (n) {
        double left = deadline - now_sec();
        struct pollfd pf = {fd, (short)(sending ? POLLOUT : POLLIN), 0};
        if (left <= 0) return -1;
        if (poll(&pf, 1, (int)(left * 1e3) + 1) <= 0) continue;
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static struct addrinfo *resolve(const char *host, int port, int passive, char *why, size_t cap) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0}, *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) snprintf(why, cap, "cannot resolve %s: %s", host, gai_strerror(rc));
    return rc ? NULL : res;
}

int dist_tcp_listen(const char *host, int *port) {
    char why[300] = "no address";
    struct addrinfo *res = resolve(host, *port, 1, why, sizeof why);
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        int one = 1;
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
                        bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 128))) {
            snprintf(why, sizeof why, "%s", strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    if (res) freeaddrinfo(res);
    if (fd < 0) die("dist_init tcp://%s:%d: rank 0 cannot listen there: %s (is it this machine's address, and the port free?)", host, *port, why);
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &len)) die("dist_init tcp://%s:%d: getsockname: %s", host, *port, strerror(errno));
    *port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port : ((struct sockaddr_in *)&sa)->sin_port);
    return fd;
}

// Rank 0's verdict on a hello from `rank`; why says it in words.
static int judge_hello(const uint8_t *hello, uint32_t rank, const DistEnv *e, const char *served, char *why, size_t cap) {
    char what[300];
    head_check(hello, HELLO_MAGIC, e, what, sizeof what);
    if (*what) { snprintf(why, cap, "rank %u connected, but %s", rank, what); return TCP_MISMATCH; }
    if (rank == 0 || rank >= (uint32_t)e->world || served[rank]) { snprintf(why, cap, "two processes claim rank %u: check the rank variables of the launch", rank); return TCP_RANK; }
    return TCP_OK;
}

static void die_missing(const DistEnv *e, const char *served, int left) {
    char list[200] = "";
    size_t at = 0;
    for (int r = 1, shown = 0; r < e->world && shown < 8; r++)
        if (!served[r]) at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", shown++ ? ", " : "", r);
    die("rank 0: timed out after %g s with %d rank(s) never connected (%s%s); did they start, with the same dist_init?",
        e->timeout_sec, left, list, left > 8 ? ", ..." : "");
}

void dist_tcp_serve(int fd, const DistEnv *e, const uint8_t id[DIST_ID_BYTES]) {
    double deadline = now_sec() + e->timeout_sec;
    char *served = xcalloc((size_t)e->world, 1), why[400];
    uint8_t hello[HELLO_BYTES], reply[REPLY_BYTES];
    memcpy(put_head(reply + 4, TICKET_MAGIC, e), id, DIST_ID_BYTES);
    for (int left = e->world - 1; left > 0;) {
        struct pollfd pf = {fd, POLLIN, 0};
        double wait = deadline - now_sec();
        if (wait <= 0) die_missing(e, served, left);
        if (poll(&pf, 1, (int)(wait * 1e3) + 1) <= 0) continue;
        int c = accept(fd, NULL, NULL);
        if (c < 0) continue;
        double by = now_sec() + 10 < deadline ? now_sec() + 10 : deadline;  // a silent stranger waits no longer
        if (io_full(c, hello, sizeof hello, 0, by) || memcmp(hello, HELLO_MAGIC, 8)) { close(c); continue; }
        uint32_t rank = get_u32(hello + HEAD_BYTES);
        int verdict = judge_hello(hello, rank, e, served, why, sizeof why);
        put_u32(reply, (uint32_t)verdict);
        io_full(c, reply, sizeof reply, 1, by);
        if (verdict != TCP_OK) die("rank 0: %s", why);
        watch_add(c, (int)rank);
        served[rank] = 1;
        left--;
    }
    free(served);
    close(fd);
}

// One connection attempt to any of host's addresses, bounded by the deadline; -1 if none.
static int connect_once(const char *host, int port, double deadline, char *why, size_t cap) {
    struct addrinfo *res = resolve(host, port, 0, why, cap);
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        int err = connect(fd, a->ai_addr, a->ai_addrlen) ? errno : 0;
        if (err == EINPROGRESS) {
            struct pollfd pf = {fd, POLLOUT, 0};
            double left = deadline - now_sec();
            socklen_t len = sizeof err;
            err = ETIMEDOUT;
            if (left > 0 && poll(&pf, 1, (int)(left * 1e3) + 1) > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
        if (err) {
            snprintf(why, cap, "%s", strerror(err));
            close(fd);
            fd = -1;
        }
    }
    if (res) freeaddrinfo(res);
    return fd;
}

void dist_tcp_fetch(const char *host, int port, const DistEnv *e, uint8_t id[DIST_ID_BYTES]) {
    double deadline = now_sec() + e->timeout_sec, interval = 0.02;
    char why[400] = "no attempt finished";
    uint8_t hello[HELLO_BYTES], reply[REPLY_BYTES];
    put_u32(put_head(hello, HELLO_MAGIC, e), (uint32_t)e->rank);
    for (;;) {
        int c = connect_once(host, port, deadline, why, sizeof why);
        int ok = c >= 0 && !io_full(c, hello, sizeof hello, 1, deadline) && !io_full(c, reply, sizeof reply, 0, deadline);
        if (c >= 0 && !ok) close(c);
        if (ok) {
            watch_add(c, 0);
            uint32_t verdict = get_u32(reply);
            head_check(reply + 4, TICKET_MAGIC, e, why, sizeof why);
            if (verdict == TCP_RANK) die("rank %d: rank 0 at tcp://%s:%d already served a rank %d: two processes claim it (check the rank variables of the launch)", e->rank, host, port, e->rank);
            if (verdict != TCP_OK || *why) die("rank %d: rank 0 at tcp://%s:%d does not match: %s", e->rank, host, port, why);
            memcpy(id, reply + 4 + HEAD_BYTES, DIST_ID_BYTES);
            return;
        }
        if (c >= 0) snprintf(why, sizeof why, "the peer closed the connection without sending the id");
        if (now_sec() >= deadline)
            die("rank %d: timed out after %g s connecting to rank 0 at tcp://%s:%d (%s); is rank 0 running there?", e->rank, e->timeout_sec, host, port, why);
        nap(backoff(&interval));
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

void dist_exchange_id(const char *spec, const DistEnv *e, uint8_t id[DIST_ID_BYTES]) {
    if (e->world == 1) return;
    if (!spec || !*spec)
        die("rank %d of %d (from %s): several ranks need dist_init = file:///shared/path or tcp://host:port "
            "(or SWLSTM_DIST_INIT) to pass rank 0's NCCL id", e->rank, e->world, e->source);
    DistInit d = dist_init_parse(spec);
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

int dist_gpu_count(void) { return 0; }
void dist_nccl_env(void) {}
void dist_allreduce_sum(real *buf, size_t n) { (void)buf, (void)n; }
void dist_allgather(real *full, const real *part, size_t n) { memmove(full, part, n * sizeof(real)); }
void dist_wait(const char *what) { (void)what; }
void dist_sum_doubles(double *x, int n) { (void)x, (void)n; }
void dist_nccl_finalize(void) {}
#endif
