// dist_hello.c: the handshake's messages (dist_hello.h has their layout): made, judged and
// opened as bytes in, bytes or a verdict out.
#include "train/dist_hello.h"
#include <stdio.h>
#include <string.h>
#include "base/sha256.h"

#define CHALLENGE_MAGIC "SWLSTCH1"
#define HELLO_MAGIC "SWLSTHI2"
#define PAD_MAGIC "SWLSTPD1"
#define HELLO_MAC_AT (DIST_HELLO_BYTES - DIST_MAC_BYTES)
#define REPLY_MAC_AT (DIST_REPLY_BYTES - DIST_MAC_BYTES)

// HMAC(key, nonce . msg[n]): the proof that whoever made msg holds the secret, fresh for nonce.
static void prove(uint8_t out[DIST_MAC_BYTES], const DistEnv *e, const uint8_t *nonce, const uint8_t *msg, size_t n) {
    Hmac256 m;
    hmac256_init(&m, e->token_key, sizeof e->token_key);
    hmac256_update(&m, nonce, DIST_NONCE_BYTES);
    hmac256_update(&m, msg, n);
    hmac256_final(&m, out);
}

// XORs the id with pads only secret holders can make: applied twice, it is undone.
static void mask_id(uint8_t *id, const DistEnv *e, const uint8_t *nonce0, const uint8_t *nonce) {
    for (uint32_t i = 0; i < DIST_ID_BYTES / SHA256_BYTES; i++) {
        uint8_t pad[SHA256_BYTES], at[4];
        Hmac256 m;
        put_u32(at, i);
        hmac256_init(&m, e->token_key, sizeof e->token_key);
        hmac256_update(&m, PAD_MAGIC, 8);
        hmac256_update(&m, at, 4);
        hmac256_update(&m, nonce0, DIST_NONCE_BYTES);
        hmac256_update(&m, nonce, DIST_NONCE_BYTES);
        hmac256_final(&m, pad);
        for (int j = 0; j < SHA256_BYTES; j++) id[i * SHA256_BYTES + j] ^= pad[j];
    }
}

void dist_challenge_make(uint8_t out[DIST_CHALLENGE_BYTES], const uint8_t nonce0[DIST_NONCE_BYTES]) {
    memcpy(out, CHALLENGE_MAGIC, 8);
    memcpy(out + 8, nonce0, DIST_NONCE_BYTES);
}

int dist_challenge_read(const uint8_t in[DIST_CHALLENGE_BYTES], uint8_t nonce0[DIST_NONCE_BYTES]) {
    memcpy(nonce0, in + 8, DIST_NONCE_BYTES);
    return !memcmp(in, CHALLENGE_MAGIC, 8);
}

void dist_hello_make(uint8_t out[DIST_HELLO_BYTES], const DistEnv *e, const uint8_t nonce0[DIST_NONCE_BYTES],
                     const uint8_t nonce[DIST_NONCE_BYTES]) {
    uint8_t *p = dist_put_head(out, HELLO_MAGIC, e);
    put_u32(p, (uint32_t)e->rank);
    memcpy(p + 4, nonce, DIST_NONCE_BYTES);
    prove(out + HELLO_MAC_AT, e, nonce0, out, HELLO_MAC_AT);
}

HelloVerdict dist_hello_judge(const uint8_t *in, size_t n, const uint8_t nonce0[DIST_NONCE_BYTES], const DistEnv *e,
                              const char *served, Hello *h) {
    size_t k = n < 8 ? n : 8;
    h->rank = -1;
    *h->why = 0;
    if (n > DIST_HELLO_BYTES || (k && memcmp(in, HELLO_MAGIC, k))) {
        snprintf(h->why, sizeof h->why, "it sent bytes that are not a swlstm hello");
        return HELLO_GARBAGE;
    }
    if (n < DIST_HELLO_BYTES) return HELLO_MORE;
    uint8_t want[DIST_MAC_BYTES];
    prove(want, e, nonce0, in, HELLO_MAC_AT);
    if (!equal_const_time(want, in + HELLO_MAC_AT, DIST_MAC_BYTES)) {
        snprintf(h->why, sizeof h->why, "it failed the proof of the shared secret (not a rank of this run, or another dist_token)");
        return HELLO_FORGED;
    }
    uint32_t rank = get_u32(in + HEAD_BYTES);
    memcpy(h->nonce, in + HEAD_BYTES + 4, DIST_NONCE_BYTES);
    char what[300];
    dist_head_check(in, HELLO_MAGIC, e, what, sizeof what);
    if (*what) {
        snprintf(h->why, sizeof h->why, "rank %u connected, but %s", rank, what);
        return HELLO_MISMATCH;
    }
    if (rank == 0 || rank >= (uint32_t)e->world || served[rank]) {
        snprintf(h->why, sizeof h->why, "two processes claim rank %u: check the rank variables of the launch", rank);
        return HELLO_RANK;
    }
    h->rank = (int)rank;
    return HELLO_OK;
}

void dist_reply_make(uint8_t out[DIST_REPLY_BYTES], HelloVerdict v, const DistEnv *e, const uint8_t id[DIST_ID_BYTES],
                     const uint8_t nonce0[DIST_NONCE_BYTES], const Hello *h) {
    memset(out, 0, DIST_REPLY_BYTES);
    put_u32(out, (uint32_t)v);
    if (v == HELLO_FORGED) return;  // it could not check a proof made with this secret
    uint8_t *body = dist_put_head(out + 4, TICKET_MAGIC, e);
    if (v == HELLO_OK) {
        memcpy(body, id, DIST_ID_BYTES);
        mask_id(body, e, nonce0, h->nonce);
    }
    prove(out + REPLY_MAC_AT, e, h->nonce, out, REPLY_MAC_AT);
}

int dist_reply_open(const uint8_t in[DIST_REPLY_BYTES], const DistEnv *e, const uint8_t nonce0[DIST_NONCE_BYTES],
                    const uint8_t nonce[DIST_NONCE_BYTES], uint8_t id[DIST_ID_BYTES]) {
    uint8_t want[DIST_MAC_BYTES];
    prove(want, e, nonce, in, REPLY_MAC_AT);
    if (!equal_const_time(want, in + REPLY_MAC_AT, DIST_MAC_BYTES)) return 0;
    memcpy(id, in + 4 + HEAD_BYTES, DIST_ID_BYTES);
    mask_id(id, e, nonce0, nonce);
    return 1;
}
