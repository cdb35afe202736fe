// twins.cu: bf16 twins of fp32 activation buffers. The recurrent engine keeps bf16 copies of
// h and dz for its own step kernels (lstm_seq_host.cu); registered here, the bf16 ops that
// read those buffers next (the head's product, the input projection's backward) take the
// copy instead of converting the fp32 buffer again, and the engine need not write fp32 dz at
// all. The CPU backend has no twin (it has no bf16 mode).
#include "common.cuh"

#define TWINS_MAX 64  // engines alive at once, two twins each (train and eval acts, 8 layers)

typedef struct {
    const real *f;
    const bf16 *b;
    size_t n;
} Twin;
static thread_local Twin twins[TWINS_MAX];  // per rank thread, like g_cuda

// Replaces any twin of f (one entry per buffer, so no stale entry can shadow the new one).
void twin_register(const real *f, const bf16 *b, size_t n) {
    twin_forget(f);  // (which moves g_cuda.gen: ops recorded before read other memory now)
    for (int i = 0; i < TWINS_MAX; i++)
        if (!twins[i].f) {
            twins[i] = (Twin){f, b, n};
            return;
        }
    die("internal: more than %d bf16 activation twins registered", TWINS_MAX);
}

void twin_forget(const real *f) {
    g_cuda.gen++;
    for (int i = 0; i < TWINS_MAX; i++)
        if (twins[i].f == f) twins[i] = (Twin){NULL, NULL, 0};
}

// The fp32 side of a twin may be stale (the engine writes dz only in bf16), so a read that
// starts inside a twin must be served by it: anything else is a bug, not a copy to make.
const bf16 *acts_bf16(const real *x, size_t n, int slot) {
    for (int i = 0; i < TWINS_MAX; i++) {
        const Twin *t = &twins[i];
        if (!t->f || x < t->f || x >= t->f + t->n) continue;
        const bf16 *b = t->b + (x - t->f);
        if (x + n > t->f + t->n || (uintptr_t)b % 16)
            die("internal: a bf16 read of %zu values at %p runs past its twin or is not 16-byte aligned", n, (const void *)x);
        return b;
    }
    bf16 *b = (bf16 *)cuda_scratch(slot, n * sizeof(bf16));
    to_bf16(b, x, n);
    return b;
}
