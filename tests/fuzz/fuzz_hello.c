// fuzz_hello.c: rank 0's side of the tcp:// handshake (src/train/dist_hello.c), on the bytes a
// connection sends after its challenge: judged as they arrive and whole. An odd first byte
// makes the rest a hello signed with the secret (its world size, run id, rank and nonce taken
// from the input), so that inputs get past the proof to what a hello claims.
// Checks: fewer bytes than a hello are never judged whole; a signed hello is never forged; an
// accepted one's reply gives that rank the id back.
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "train/dist_hello.h"

#define SECRET "fuzzing secret, at least 16 bytes"

// The input's bytes as a hello of rank 0's secret (signed with it).
static size_t signed_hello(uint8_t *out, const uint8_t *in, size_t n, const DistEnv *r0, const uint8_t *nonce0) {
    uint8_t claims[DIST_HELLO_BYTES] = {0};
    memcpy(claims, in, n < sizeof claims ? n : sizeof claims);
    DistEnv as = *r0;
    as.world = (int)get_u32(claims + 8);
    memcpy(as.run_id, claims + 12, RUN_BYTES - 1);
    as.rank = (int)get_u32(claims + HEAD_BYTES);
    dist_hello_make(out, &as, nonce0, claims + HEAD_BYTES + 4);
    return DIST_HELLO_BYTES;
}

FUZZ_TARGET(hello) {
    static const uint8_t nonce0[DIST_NONCE_BYTES] = {0x5a, 0xa5};
    static const char served[4] = {0, 0, 1, 0};
    if (size == 0) return 0;
    FUZZ_RUN {
        DistEnv r0 = {.rank = 0, .world = 4, .local_rank = -1, .source = "fuzz", .timeout_sec = 1, .run_id = "job-1"};
        dist_token_set(&r0, SECRET, strlen(SECRET), "fuzz");
        uint8_t in[DIST_HELLO_BYTES + 1];
        size_t n = size - 1 < sizeof in ? size - 1 : sizeof in;
        int sign = data[0] & 1;
        if (sign) n = signed_hello(in, data + 1, size - 1, &r0, nonce0);
        else memcpy(in, data + 1, n);
        Hello h;
        for (size_t k = 0; k < n && k < DIST_HELLO_BYTES; k++) {
            HelloVerdict part = dist_hello_judge(in, k, nonce0, &r0, served, &h);
            if (part != HELLO_MORE && part != HELLO_GARBAGE) abort();
        }
        HelloVerdict v = dist_hello_judge(in, n, nonce0, &r0, served, &h);
        if (sign && v == HELLO_FORGED) abort();
        if (v == HELLO_OK) {
            uint8_t id[DIST_ID_BYTES], got[DIST_ID_BYTES], reply[DIST_REPLY_BYTES];
            for (int i = 0; i < DIST_ID_BYTES; i++) id[i] = (uint8_t)(i * 13);
            dist_reply_make(reply, v, &r0, id, nonce0, &h);
            if (h.rank < 1 || h.rank > 3 || served[h.rank] || !dist_reply_open(reply, &r0, nonce0, h.nonce, got) || memcmp(got, id, sizeof id))
                abort();
        }
    }
    return 0;
}
