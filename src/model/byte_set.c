// byte_set.c: the set of byte values of a corpus, its record in checkpoints, and sampling
// restricted to it.
#include "model/byte_set.h"
#include <string.h>
#include "model/model_io.h"

void byte_set_of(const uint8_t *p, size_t n, uint8_t set[BYTE_SET_BYTES]) {
    memset(set, 0, BYTE_SET_BYTES);
    for (size_t i = 0; i < n; i++) set[p[i] >> 3] |= (uint8_t)(1u << (p[i] & 7));
}

int byte_set_has(const uint8_t set[BYTE_SET_BYTES], int b) { return set[b >> 3] >> (b & 7) & 1; }

int byte_set_count(const uint8_t set[BYTE_SET_BYTES]) {
    int n = 0;
    for (int b = 0; b < 256; b++) n += byte_set_has(set, b);
    return n;
}

int ckpt_byte_set(const char *path, uint8_t set[BYTE_SET_BYTES]) {
    static const char *const big[] = {"params", "ema", "adam_m", "adam_v", "hidden", "masks", NULL};
    Ckpt c;
    ckpt_read_except(&c, path, big);
    TrainState ts;
    int has = ckpt_train_state(&c, &ts) && ts.has_bytes;
    ckpt_close(&c);
    if (has) memcpy(set, ts.bytes, BYTE_SET_BYTES);
    else memset(set, 0xff, BYTE_SET_BYTES);
    return has;
}

void model_only_bytes(Model *m, const uint8_t set[BYTE_SET_BYTES]) {
    real bias[256];
    m->be->to_host(bias, m->params + m->off_bo, sizeof bias);
    // exp(-1e4) underflows to 0 in fp32 and bf16 alike, and any temperature keeps it last.
    for (int b = 0; b < 256; b++)
        if (!byte_set_has(set, b)) bias[b] = (real)-1e4;
    m->be->to_device(m->params + m->off_bo, bias, sizeof bias);
}
