// fuzz_ckpt.c: a checkpoint file through everything that reads one: the container, the
// config, masks and weights (model_from_ckpt, model_load_infer), the training state and carried
// state (--resume) and the mask statistics of `info`. Mutations almost never keep the CRCs
// right, which would stop nearly every input at the first check: each input also runs with
// its section and file CRCs recomputed, so that the parsers behind the CRCs see the mutated
// bytes.
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "ops/backend.h"
#include "harness.h"
#include "model/model_io.h"

static uint64_t le(const uint8_t *p, int n) {
    uint64_t x = 0;
    for (int i = n - 1; i >= 0; i--) x = x << 8 | p[i];
    return x;
}

static void put32(uint8_t *p, uint32_t x) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(x >> 8 * i);
}

// Rewrites the CRCs of b (ckpt.c's layout) where the section headers allow; 0 if b has none.
static int fix_crcs(uint8_t *b, size_t n) {
    if (n < 28 || memcmp(b, "SWLSTMCK", 8)) return 0;
    size_t end = n - 12, off = 16;
    for (uint64_t i = 0, nsec = le(b + 12, 4); i < nsec && end - off >= 20; i++) {
        uint64_t len = le(b + off + 8, 8);
        if (len > end - off - 20) break;
        put32(b + off + 16, (uint32_t)crc32_z(0, b + off + 20, len));
        off += 20 + len;
    }
    memcpy(b + end, "SWLSTMEN", 8);
    put32(b + end + 8, (uint32_t)crc32_z(0, b, end));
    return 1;
}

static void load_state(Model *m, const Ckpt *c) {
    TrainState ts;
    if (!ckpt_train_state(c, &ts)) return;
    real *am = m->be->alloc(m->nparams * sizeof(real)), *av = m->be->alloc(m->nparams * sizeof(real));
    Acts *a = acts_create(m, 1, 1);
    model_load_train_state(m, c, &ts, am, av, a, 0, m->cfg.batch_size);
    acts_free(m, a);
    m->be->free(am);
    m->be->free(av);
}

static void read_ckpt(const char *path) {
    FUZZ_RUN {
        Ckpt c;
        ckpt_read(&c, path);
        Model *m = model_from_ckpt(&c, DEVICE_CPU, CKPT_CHOICE);
        load_state(m, &c);
        Mask masks[2 * SW_MAX_LAYERS];
        int n = ckpt_masks(&c, masks, 2 * SW_MAX_LAYERS);
        for (int i = 0; i < n; i++) {
            if (masks[i].nr) mask_stats(&masks[i]);
            mask_free(&masks[i]);
        }
        ckpt_close(&c);
        model_free(m);
        model_free(model_load_infer(path, DEVICE_CPU, CKPT_CHOICE, 0));  // the inference path reads other sections
    }
}

FUZZ_TARGET(ckpt) {
    read_ckpt(fuzz_file(data, size, ".ckpt"));
    uint8_t *fixed = malloc(size ? size : 1);
    memcpy(fixed, data, size);
    if (fix_crcs(fixed, size) && memcmp(fixed, data, size)) read_ckpt(fuzz_file(fixed, size, ".ckpt"));
    free(fixed);
    return 0;
}
