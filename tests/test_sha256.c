// test_sha256.c: SHA-256 against the FIPS 180-2 examples, HMAC-SHA-256 against the seven
// test cases of RFC 4231, hashing in pieces, and the constant-time comparison.
#ifndef SW_DOUBLE
#include "base/sha256.h"
#include "test.h"
#include <stdio.h>
#include <string.h>

static const char *hex(const uint8_t *p, size_t n) {
    static char s[2 * SHA256_BYTES + 1];
    for (size_t i = 0; i < n; i++) snprintf(s + 2 * i, 3, "%02x", p[i]);
    return s;
}

static int sha_is(const void *msg, size_t n, const char *want) {
    uint8_t out[SHA256_BYTES];
    sha256(msg, n, out);
    if (!strcmp(hex(out, sizeof out), want)) return 1;
    fprintf(stderr, "  sha256 of %zu bytes = %s, expected %s\n", n, hex(out, sizeof out), want);
    return 0;
}

#define ABC56 "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"

TEST(sha256_fips_180_2_vectors) {
    CHECK(sha_is("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    CHECK(sha_is(ABC56, 56, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    CHECK(sha_is("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    // a million 'a', fed in pieces of 997 bytes (no piece boundary on a block's)
    static char a[997];
    memset(a, 'a', sizeof a);
    Sha256 s;
    sha256_init(&s);
    for (size_t left = 1000000; left; left -= left < sizeof a ? left : sizeof a) sha256_update(&s, a, left < sizeof a ? left : sizeof a);
    uint8_t out[SHA256_BYTES];
    sha256_final(&s, out);
    CHECK(!strcmp(hex(out, sizeof out), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

TEST(sha256_in_two_pieces_at_every_cut) {
    for (size_t cut = 0; cut <= 56; cut++) {
        Sha256 s;
        uint8_t out[SHA256_BYTES];
        sha256_init(&s);
        sha256_update(&s, ABC56, cut);
        sha256_update(&s, ABC56 + cut, 56 - cut);
        sha256_final(&s, out);
        CHECK_MSG(!strcmp(hex(out, sizeof out), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "cut at %zu", cut);
    }
}

static int hmac_is(const uint8_t *key, size_t kn, const void *msg, size_t n, const char *want) {
    Hmac256 m;
    uint8_t out[SHA256_BYTES];
    hmac256_init(&m, key, kn);
    hmac256_update(&m, msg, n);
    hmac256_final(&m, out);
    const char *got = hex(out, strlen(want) / 2);  // case 5 keeps 128 bits
    if (!strcmp(got, want)) return 1;
    fprintf(stderr, "  hmac = %s, expected %s\n", got, want);
    return 0;
}

TEST(hmac_sha256_rfc_4231_vectors) {
    uint8_t k0b[20], kaa[131], k25[25], k0c[20], dd[50], cd[50];
    memset(k0b, 0x0b, 20), memset(kaa, 0xaa, 131), memset(k0c, 0x0c, 20), memset(dd, 0xdd, 50), memset(cd, 0xcd, 50);
    for (int i = 0; i < 25; i++) k25[i] = (uint8_t)(i + 1);
    const char *big = "This is a test using a larger than block-size key and a larger than block-size data. "
                      "The key needs to be hashed before being used by the HMAC algorithm.";
    CHECK(hmac_is(k0b, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    CHECK(hmac_is((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    CHECK(hmac_is(kaa, 20, dd, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"));
    CHECK(hmac_is(k25, 25, cd, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"));
    CHECK(hmac_is(k0c, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b"));
    CHECK(hmac_is(kaa, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    CHECK(hmac_is(kaa, 131, big, strlen(big), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"));
}

TEST(equal_const_time_compares_every_byte) {
    uint8_t a[32], b[32];
    memset(a, 7, sizeof a), memset(b, 7, sizeof b);
    CHECK_EQ(equal_const_time(a, b, 32), 1);
    b[31] = 6;
    CHECK_EQ(equal_const_time(a, b, 32), 0);
    CHECK_EQ(equal_const_time(a, b, 31), 1);
    b[0] = 0x87;
    CHECK_EQ(equal_const_time(a, b, 1), 0);
    CHECK_EQ(equal_const_time(a, b, 0), 1);
}
#endif
