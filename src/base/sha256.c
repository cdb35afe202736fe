// sha256.c: SHA-256 and HMAC-SHA-256, checked against the FIPS 180-2 and RFC 4231 vectors
// (tests/test_sha256.c). Written for a few hundred bytes per handshake, not for speed.
#include "base/sha256.h"
#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

static void compress(uint32_t h[8], const uint8_t *block) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 | (uint32_t)block[4 * i + 2] << 8 | block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {  // v = a b c d e f g h
        uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + s1 + ch + K[i] + w[i];
        uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + s0 + maj;
    }
    for (int i = 0; i < 8; i++) h[i] += v[i];
}

void sha256_init(Sha256 *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
}

void sha256_update(Sha256 *s, const void *data, size_t n) {
    const uint8_t *p = data;
    while (n) {
        size_t at = s->len % SHA256_BLOCK, k = SHA256_BLOCK - at < n ? SHA256_BLOCK - at : n;
        memcpy(s->buf + at, p, k);
        s->len += k;
        p += k;
        n -= k;
        if (at + k == SHA256_BLOCK) compress(s->h, s->buf);
    }
}

// Padding: 0x80, zeros up to 56 mod 64, then the length in bits, big-endian.
void sha256_final(Sha256 *s, uint8_t out[SHA256_BYTES]) {
    uint64_t bits = s->len * 8;
    uint8_t pad[SHA256_BLOCK + 8] = {0x80}, len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, pad, 1 + (SHA256_BLOCK + 55 - s->len % SHA256_BLOCK) % SHA256_BLOCK);
    sha256_update(s, len, 8);
    for (int i = 0; i < 32; i++) out[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

void sha256(const void *data, size_t n, uint8_t out[SHA256_BYTES]) {
    Sha256 s;
    sha256_init(&s);
    sha256_update(&s, data, n);
    sha256_final(&s, out);
}

void hmac256_init(Hmac256 *m, const void *key, size_t n) {
    uint8_t k[SHA256_BLOCK] = {0}, ipad[SHA256_BLOCK], opad[SHA256_BLOCK];
    if (n > SHA256_BLOCK) sha256(key, n, k);
    else memcpy(k, key, n);
    for (int i = 0; i < SHA256_BLOCK; i++) ipad[i] = k[i] ^ 0x36, opad[i] = k[i] ^ 0x5c;
    sha256_init(&m->inner);
    sha256_update(&m->inner, ipad, sizeof ipad);
    sha256_init(&m->outer);
    sha256_update(&m->outer, opad, sizeof opad);
}

void hmac256_update(Hmac256 *m, const void *data, size_t n) { sha256_update(&m->inner, data, n); }

void hmac256_final(Hmac256 *m, uint8_t out[SHA256_BYTES]) {
    uint8_t inner[SHA256_BYTES];
    sha256_final(&m->inner, inner);
    sha256_update(&m->outer, inner, sizeof inner);
    sha256_final(&m->outer, out);
}

int equal_const_time(const void *a, const void *b, size_t n) {
    const volatile uint8_t *x = a, *y = b;  // volatile: no early exit compiled in
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++) diff |= x[i] ^ y[i];
    return diff == 0;
}
