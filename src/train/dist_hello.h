// dist_hello.h: the bytes of the tcp:// rendezvous's handshake, apart from the sockets
// (dist_tcp.c), so that tests and tests/fuzz/fuzz_hello.c drive rank 0's side directly.
//
//   rank 0 -> rank r   challenge  "SWLSTCH1", nonce0
//   rank r -> rank 0   hello      "SWLSTHI2", world size, run id, rank, nonce_r,
//                                 HMAC(key, nonce0 . the hello so far)
//   rank 0 -> rank r   reply      verdict, "SWLSTID1", world size, run id,
//                                 id XOR HMAC(key, "SWLSTPD1" . i . nonce0 . nonce_r) for i = 0..3,
//                                 HMAC(key, nonce_r . the reply so far)
//
// key = DistEnv.token_key. Each side proves the secret over the other's fresh random nonce, so
// a recorded hello or reply is of no use again, and the id is readable to secret holders only.
#pragma once
#include "train/dist_ticket.h"

#define DIST_NONCE_BYTES 32
#define DIST_MAC_BYTES 32
#define DIST_CHALLENGE_BYTES (8 + DIST_NONCE_BYTES)
#define DIST_HELLO_BYTES (HEAD_BYTES + 4 + DIST_NONCE_BYTES + DIST_MAC_BYTES)
#define DIST_REPLY_BYTES (4 + TICKET_BYTES + DIST_MAC_BYTES)

// Rank 0's verdict on a hello; the first three are also the reply's verdict on the wire.
typedef enum {
    HELLO_OK,        // a rank of this run: it gets the id
    HELLO_MISMATCH,  // holds the secret, but another world size or run id: the run ends
    HELLO_RANK,      // holds the secret, but claims rank 0, a rank past the world or one served: the run ends
    HELLO_FORGED,    // failed the proof: closed (after a reply that says so), the run goes on
    HELLO_GARBAGE,   // not a hello: closed, the run goes on
    HELLO_MORE,      // the bytes so far begin a hello: wait for the rest
} HelloVerdict;

typedef struct {
    int rank;                           // the rank it claims (once proved; else -1)
    uint8_t nonce[DIST_NONCE_BYTES];    // its nonce, over which rank 0 proves the secret
    char why[400];                      // the verdict in words (never the secret)
} Hello;

void dist_challenge_make(uint8_t out[DIST_CHALLENGE_BYTES], const uint8_t nonce0[DIST_NONCE_BYTES]);
// 0 unless `in` is a challenge; nonce0 gets its nonce.
int dist_challenge_read(const uint8_t in[DIST_CHALLENGE_BYTES], uint8_t nonce0[DIST_NONCE_BYTES]);
// Rank e->rank's hello, answering nonce0 with its own nonce.
void dist_hello_make(uint8_t out[DIST_HELLO_BYTES], const DistEnv *e, const uint8_t nonce0[DIST_NONCE_BYTES],
                     const uint8_t nonce[DIST_NONCE_BYTES]);
// Rank 0's verdict on the first n bytes received on a connection it challenged with nonce0;
// served[r] says rank r has its id. The proof is checked before anything the hello claims.
HelloVerdict dist_hello_judge(const uint8_t *in, size_t n, const uint8_t nonce0[DIST_NONCE_BYTES], const DistEnv *e,
                              const char *served, Hello *h);
// Rank 0's reply to a hello judged v (not GARBAGE or MORE). To a forged one it is the verdict
// and zeros; the id goes only with HELLO_OK.
void dist_reply_make(uint8_t out[DIST_REPLY_BYTES], HelloVerdict v, const DistEnv *e, const uint8_t id[DIST_ID_BYTES],
                     const uint8_t nonce0[DIST_NONCE_BYTES], const Hello *h);
// Rank r: 1 if the reply proves the secret over its nonce, and then id = the id it carries.
int dist_reply_open(const uint8_t in[DIST_REPLY_BYTES], const DistEnv *e, const uint8_t nonce0[DIST_NONCE_BYTES],
                    const uint8_t nonce[DIST_NONCE_BYTES], uint8_t id[DIST_ID_BYTES]);
