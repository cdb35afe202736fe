// dist_tcp.c: the id exchange over TCP. Rank 0 listens and serves every connection at once
// (poll), so silent or hostile ones cost the real ranks nothing; each rank proves the shared
// secret before rank 0 looks at what it claims (dist_hello.c). The connections of the ranks
// that got the id stay open to tell when one exits.
#include "train/dist_hello.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define HELLO_SEC 10.0   // a connection has this long to say hello
#define MAX_PENDING 64   // connections in the handshake at once; one more closes the oldest
#define MAX_LOGGED 20    // rejected connections named in the log, so that a flood cannot fill it

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
// addresses

static struct addrinfo *resolve(const char *host, int port, int passive, char *why, size_t cap) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0}, *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) snprintf(why, cap, "cannot resolve %s: %s", host, gai_strerror(rc));
    return rc ? NULL : res;
}

static int is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
    if (sa->sa_family != AF_INET6) return 0;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

int dist_host_is_loopback(const char *host) {
    char why[300];
    struct addrinfo *res = resolve(host, 1, 0, why, sizeof why);
    int all = res != NULL;
    for (struct addrinfo *a = res; a; a = a->ai_next) all &= is_loopback(a->ai_addr);
    if (res) freeaddrinfo(res);
    return all;
}

// poll's timeout for a wait of sec seconds, capped so that SWLSTM_DIST_TIMEOUT = 1e9 fits an int
// (the callers poll again).
static int poll_ms(double sec) { return sec <= 0 ? 0 : sec > 60 ? 60000 : (int)(sec * 1e3) + 1; }

static void random_bytes(uint8_t *p, size_t n) {
    if (getrandom(p, n, 0) != (ssize_t)n) die("the TCP rendezvous cannot draw %zu random bytes: %s", n, strerror(errno));
}

// ---------------------------------------------------------------------------------------------
// rank 0

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

// A connection that has not finished its hello.
typedef struct {
    int fd;
    double by;       // closed unless its hello is complete by then
    size_t got;
    uint8_t nonce[DIST_NONCE_BYTES], hello[DIST_HELLO_BYTES];
    char peer[80];   // its address, for the log
} Pending;

typedef struct {
    const DistEnv *e;
    const uint8_t *id;
    char *served;    // [world]
    int left, logged, n;
    Pending p[MAX_PENDING];
} Server;

// Forgets pending connection i, closing it with a line in the log unless why is NULL.
static void forget(Server *s, int i, const char *why) {
    if (why) {
        close(s->p[i].fd);
        if (s->logged < MAX_LOGGED)
            warnf("rank 0: closed a connection from %s: %s%s", s->p[i].peer, why,
                  ++s->logged == MAX_LOGGED ? " (further ones are not logged)" : "");
    }
    s->p[i] = s->p[--s->n];
}

static void name_peer(const struct sockaddr_storage *sa, socklen_t len, char *out, size_t cap) {
    char host[64], port[8];  // numeric: an IPv6 address with a scope fits
    if (getnameinfo((const struct sockaddr *)sa, len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV))
        snprintf(out, cap, "an unknown address");
    else snprintf(out, cap, "%s port %s", host, port);
}

// The few bytes rank 0 sends fit a fresh socket's buffer: a peer that does not read cannot block it.
static int send_now(int fd, const uint8_t *p, size_t n) { return send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n; }

// Accepts one connection and challenges it.
static void admit(Server *s, int listen_fd) {
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    int fd = accept4(listen_fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (s->n == MAX_PENDING) {
        int oldest = 0;
        for (int i = 1; i < s->n; i++) if (s->p[i].by < s->p[oldest].by) oldest = i;
        forget(s, oldest, "closed to make room: 64 connections were waiting to say hello");
    }
    Pending *p = &s->p[s->n++];
    *p = (Pending){.fd = fd, .by = now_sec() + HELLO_SEC};
    name_peer(&sa, len, p->peer, sizeof p->peer);
    random_bytes(p->nonce, sizeof p->nonce);
    uint8_t challenge[DIST_CHALLENGE_BYTES];
    dist_challenge_make(challenge, p->nonce);
    if (!send_now(fd, challenge, sizeof challenge)) forget(s, s->n - 1, "cannot send it the challenge");
}

// Takes what arrived on pending connection i and acts on the verdict once there is one.
static void hear(Server *s, int i) {
    Pending *p = &s->p[i];
    char why[100];
    ssize_t k = recv(p->fd, p->hello + p->got, sizeof p->hello - p->got, 0);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (k <= 0) {
        snprintf(why, sizeof why, "it closed after %zu of %d hello bytes%s%s", p->got, DIST_HELLO_BYTES, k ? ": " : "", k ? strerror(errno) : "");
        forget(s, i, why);
        return;
    }
    p->got += (size_t)k;
    Hello h;
    HelloVerdict v = dist_hello_judge(p->hello, p->got, p->nonce, s->e, s->served, &h);
    if (v == HELLO_MORE) return;
    if (v == HELLO_GARBAGE) {
        forget(s, i, h.why);
        return;
    }
    uint8_t reply[DIST_REPLY_BYTES];
    dist_reply_make(reply, v, s->e, s->id, p->nonce, &h);
    int sent = send_now(p->fd, reply, sizeof reply);
    if (v == HELLO_MISMATCH || v == HELLO_RANK) die("rank 0: %s", h.why);  // a holder of the secret, misconfigured
    if (v == HELLO_FORGED || !sent) {
        forget(s, i, sent ? h.why : "cannot send it the id");
        return;
    }
    watch_add(p->fd, h.rank);
    s->served[h.rank] = 1;
    s->left--;
    forget(s, i, NULL);
}

// Closes the connections that are past their time; returns the earliest time left to wait for.
static double expire(Server *s, double now, double deadline) {
    char why[100];
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->p[i].by > now) continue;
        snprintf(why, sizeof why, "it sent %zu of %d hello bytes in %g s", s->p[i].got, DIST_HELLO_BYTES, HELLO_SEC);
        forget(s, i, why);
    }
    for (int i = 0; i < s->n; i++) if (s->p[i].by < deadline) deadline = s->p[i].by;
    return deadline;
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
    Server *s = xcalloc(1, sizeof *s);
    s->e = e, s->id = id, s->served = xcalloc((size_t)e->world, 1), s->left = e->world - 1;
    struct pollfd pf[1 + MAX_PENDING];
    if (fcntl(fd, F_SETFL, O_NONBLOCK)) die("rank 0: cannot make the listening socket non-blocking: %s", strerror(errno));
    while (s->left > 0) {
        double now = now_sec();
        if (now >= deadline) die_missing(e, s->served, s->left);
        double wake = expire(s, now, deadline);
        int n = s->n;
        pf[0] = (struct pollfd){fd, POLLIN, 0};
        for (int i = 0; i < n; i++) pf[1 + i] = (struct pollfd){s->p[i].fd, POLLIN, 0};
        if (poll(pf, (nfds_t)(1 + n), poll_ms(wake - now)) <= 0) continue;
        // downwards: forget() moves the last connection into the slot, which is then done
        for (int i = n - 1; i >= 0 && s->left > 0; i--)
            if (pf[1 + i].revents) hear(s, i);
        if (pf[0].revents && s->left > 0) admit(s, fd);
    }
    for (int i = 0; i < s->n; i++) close(s->p[i].fd);
    free(s->served);
    free(s);
    close(fd);
}

// ---------------------------------------------------------------------------------------------
// the other ranks

// Moves n bytes before the deadline; 0 on success, -1 on timeout, EOF or error.
static int io_full(int fd, uint8_t *p, size_t n, int sending, double deadline) {
    while (n) {
        double left = deadline - now_sec();
        struct pollfd pf = {fd, (short)(sending ? POLLOUT : POLLIN), 0};
        if (left <= 0) return -1;
        if (poll(&pf, 1, poll_ms(left)) <= 0) continue;
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
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
            if (left > 0 && poll(&pf, 1, poll_ms(left)) > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
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

// The handshake on connection c: 1 with the id; 0 when the connection failed (why says how:
// try again). Dies on an answer that ends the run.
static int handshake(int c, const char *host, int port, const DistEnv *e, double deadline, uint8_t id[DIST_ID_BYTES],
                     char *why, size_t cap) {
    uint8_t challenge[DIST_CHALLENGE_BYTES], nonce0[DIST_NONCE_BYTES], nonce[DIST_NONCE_BYTES];
    uint8_t hello[DIST_HELLO_BYTES], reply[DIST_REPLY_BYTES];
    if (io_full(c, challenge, sizeof challenge, 0, deadline) || !dist_challenge_read(challenge, nonce0)) {
        snprintf(why, cap, "the listener sent no swlstm challenge");
        return 0;
    }
    random_bytes(nonce, sizeof nonce);
    dist_hello_make(hello, e, nonce0, nonce);
    if (io_full(c, hello, sizeof hello, 1, deadline) || io_full(c, reply, sizeof reply, 0, deadline)) {
        snprintf(why, cap, "the peer closed the connection without sending the id");
        return 0;
    }
    uint32_t verdict = get_u32(reply);
    if (verdict == HELLO_FORGED)
        die("rank %d: rank 0 at tcp://%s:%d rejected this rank's proof of the shared secret: give every rank the same "
            "dist_token file or SWLSTM_DIST_TOKEN", e->rank, host, port);
    if (!dist_reply_open(reply, e, nonce0, nonce, id))
        die("rank %d: the listener at tcp://%s:%d answered without proving the shared secret: it is not rank 0 of this run",
            e->rank, host, port);
    if (verdict == HELLO_RANK) die("rank %d: rank 0 at tcp://%s:%d already served a rank %d: two processes claim it (check the rank variables of the launch)", e->rank, host, port, e->rank);
    dist_head_check(reply + 4, TICKET_MAGIC, e, why, cap);
    if (verdict != HELLO_OK || *why) die("rank %d: rank 0 at tcp://%s:%d does not match: %s", e->rank, host, port, why);
    return 1;
}

void dist_tcp_fetch(const char *host, int port, const DistEnv *e, uint8_t id[DIST_ID_BYTES]) {
    double deadline = now_sec() + e->timeout_sec, interval = 0.02;
    char why[400] = "no attempt finished";
    for (;;) {
        int c = connect_once(host, port, deadline, why, sizeof why);
        if (c >= 0 && handshake(c, host, port, e, deadline, id, why, sizeof why)) {
            watch_add(c, 0);
            return;
        }
        if (c >= 0) close(c);
        if (now_sec() >= deadline)
            die("rank %d: timed out after %g s connecting to rank 0 at tcp://%s:%d (%s); is rank 0 running there?", e->rank, e->timeout_sec, host, port, why);
        dist_nap(dist_backoff(&interval));
    }
}
