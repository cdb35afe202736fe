// sha256.h: SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the rendezvous's proof of
// a shared secret (src/train/dist_hello.c), and a comparison that takes the same time
// wherever the inputs differ.
#pragma once
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define SHA256_BYTES 32
#define SHA256_BLOCK 64

typedef struct {
    uint32_t h[8];
    uint64_t len;               // bytes hashed so far
    uint8_t buf[SHA256_BLOCK];  // the open block: len % SHA256_BLOCK bytes
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t n);
void sha256_final(Sha256 *s, uint8_t out[SHA256_BYTES]);
void sha256(const void *data, size_t n, uint8_t out[SHA256_BYTES]);

typedef struct { Sha256 inner, outer; } Hmac256;

// A key longer than a block is hashed first, as RFC 2104 says.
void hmac256_init(Hmac256 *m, const void *key, size_t n);
void hmac256_update(Hmac256 *m, const void *data, size_t n);
void hmac256_final(Hmac256 *m, uint8_t out[SHA256_BYTES]);

// 1 if a[n] == b[n]; the time depends on n only.
int equal_const_time(const void *a, const void *b, size_t n);

#ifdef __cplusplus
}
#endif
