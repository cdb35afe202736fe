// dist_ticket.h: what the id exchanges share (dist.c: the file; dist_tcp.c and dist_hello.c:
// TCP), below all of them: the head that names a run (magic, world size, run id) at the start
// of rank 0's ticket and of a rank's hello, and the waits of their polls.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "train/dist.h"

#define TICKET_MAGIC "SWLSTID1"
#define RUN_BYTES 128
#define HEAD_BYTES (8 + 4 + RUN_BYTES)               // magic, world size, run id
#define TICKET_BYTES (HEAD_BYTES + DIST_ID_BYTES)    // rank 0's answer: head, id

static inline void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static inline uint32_t get_u32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

// Writes magic, world size and run id; returns where the body (id, or rank) goes.
uint8_t *dist_put_head(uint8_t *p, const char *magic, const DistEnv *e);
// Why a head is not from this run ("" if it is).
void dist_head_check(const uint8_t *buf, const char *magic, const DistEnv *e, char *why, size_t cap);

void dist_nap(double sec);
// Poll intervals that start short (the usual case: the id is nearly there) and stay modest.
double dist_backoff(double *interval);
