// dist_ticket.c: the head of rank 0's id ticket and of a rank's hello (the run they belong
// to), and the waits of the polls for them; below both exchanges, the file (dist.c) and TCP
// (dist_tcp.c, dist_hello.c).
#include "train/dist_ticket.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

uint8_t *dist_put_head(uint8_t *p, const char *magic, const DistEnv *e) {
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

void dist_head_check(const uint8_t *buf, const char *magic, const DistEnv *e, char *why, size_t cap) {
    Head h;
    *why = 0;
    if (!get_head(buf, magic, &h)) snprintf(why, cap, "not a swlstm id file");
    else if (h.world != (uint32_t)e->world) snprintf(why, cap, "it is for world size %u, this rank has %d", h.world, e->world);
    else if (strcmp(h.run_id, e->run_id)) snprintf(why, cap, "it is from another run: run id '%s', this rank has '%s'", h.run_id, e->run_id);
}

void dist_nap(double sec) {
    struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
    nanosleep(&ts, NULL);
}

double dist_backoff(double *interval) {
    double d = *interval;
    *interval = d * 2 < 0.5 ? d * 2 : 0.5;
    return d;
}
