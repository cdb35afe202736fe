// twins.cu: bf16 twins of fp32 activation buffers. The recurrent engine keeps bf16 copies of
// h and dz for its own step kernels (lstm_seq_host.cu); registered here, the bf16 ops that
// read those buffers next (the head's product, the input projection's backward) take the
// copy instead of converting the fp32 buffer again, and the engine need not write fp32 dz at
// all. The model asks for more (backend.h keep_lowp: the mlstm's step inputs, which would
// otherwise be converted before each of its ~10 products a step); those twins are this file's
// own, and every op that writes their buffer writes them too (twin_out), memory operations
// included (twin_refresh). Those of them that write whole 128-row steps also write a slab
// image of their step (base/slab.cuh) that the wgmma product reading it next takes as it is
// (cuda/wgmma/wg_mm.cu), sparing it a packing pass. The CPU backend has no twin (it has no
// bf16 mode).
#include "base/launch.cuh"
#include "base/twins.cuh"

thread_local Twin twins[TWINS_MAX];

// Replaces any twin of f (one entry per buffer, so no stale entry can shadow the new one).
static void twin_add(const real *f, bf16 *b, size_t n, int owned) {
    twin_forget(f);  // (which moves g_cuda.gen: ops recorded before read other memory now)
    for (int i = 0; i < TWINS_MAX; i++)
        if (!twins[i].f) {
            twins[i] = (Twin){f, b, n, owned, NULL, 0, NULL, 0, 0};
            return;
        }
    die("internal: more than %d bf16 activation twins registered", TWINS_MAX);
}

void twin_register(const real *f, const bf16 *b, size_t n) { twin_add(f, (bf16 *)b, n, 0); }

void twin_forget(const real *f) {
    g_cuda.gen++;
    for (int i = 0; i < TWINS_MAX; i++)
        if (twins[i].f == f) {
            if (twins[i].owned) {
                CUDA_CHECK(cudaFree(twins[i].b));
                CUDA_CHECK(cudaFree(twins[i].img));
            }
            twins[i] = (Twin){};
        }
}

// The fp32 side of a twin may be stale (the engine writes dz only in bf16), so a read that
// starts inside a twin must be served by it: anything else is a bug, not a copy to make.
const bf16 *twin_in(const real *x, size_t n) {
    for (int i = 0; i < TWINS_MAX; i++) {
        const Twin *t = &twins[i];
        if (!t->f || x < t->f || x >= t->f + t->n) continue;
        const bf16 *b = t->b + (x - t->f);
        if (x + n > t->f + t->n || (uintptr_t)b % 16)
            die("internal: a bf16 read of %zu values at %p runs past its twin or is not 16-byte aligned", n, (const void *)x);
        return b;
    }
    return NULL;
}

const bf16 *acts_bf16(const real *x, size_t n, int slot) {
    if (const bf16 *b = twin_in(x, n)) return b;
    bf16 *b = (bf16 *)cuda_scratch(slot, n * sizeof(bf16));
    to_bf16(b, x, n);
    return b;
}

void keep_lowp_cuda(real *x, size_t n) {
    bf16 *b = NULL;
    CUDA_CHECK(cudaMalloc(&b, n * sizeof(bf16)));
    twin_add(x, b, n, 1);
    twin_refresh(x, n);
}

void twin_release(const real *f) {
    for (int i = 0; i < TWINS_MAX; i++)
        if (twins[i].f == f && twins[i].owned) twin_forget(f);
}

// A write over p[0..n) that is not the image's own leaves it stale.
static void img_stale_over(Twin *t, const real *p, size_t n) {
    if (t->img_of && p < t->img_of + (size_t)t->img_rows * t->img_cols && t->img_of < p + n) t->img_of = NULL;
}

// Where a kernel writing y[0..n) also writes bf16: the twin's matching span, or NULL.
bf16 *twin_out(const real *y, size_t n) {
    for (int i = 0; i < TWINS_MAX; i++) {
        Twin *t = &twins[i];
        if (!t->f || y + n <= t->f || y >= t->f + t->n) continue;
        if (y < t->f || y + n > t->f + t->n)
            die("internal: a write of %zu values at %p covers part of a bf16 twin only", n, (const void *)y);
        img_stale_over(t, y, n);
        return t->b + (y - t->f);
    }
    return NULL;
}

void twin_none(const real *y, size_t n, const char *op) {
    if (twin_out(y, n)) die("internal: %s writes a buffer with a bf16 twin but not the twin", op);
}

// After a memory operation wrote p[0..n): the overlap with every twin of keep_lowp's, again.
// (The engine's own twins are its to keep: its fp32 dz may be address space only.)
void twin_refresh(const real *p, size_t n) {
    for (int i = 0; i < TWINS_MAX; i++) {
        Twin *t = &twins[i];
        if (!t->f || !t->owned) continue;
        img_stale_over(t, p, n);
        const real *lo = p > t->f ? p : t->f, *hi = p + n < t->f + t->n ? p + n : t->f + t->n;
        if (lo < hi) to_bf16(t->b + (lo - t->f), lo, (size_t)(hi - lo));
    }
}

// The image lives in the twin, grown to the largest write (outside a graph's recording: a
// window's first run writes what its record will).
SlabOut twin_slab_out(const real *y, int rows, int cols) {
    if (rows <= 0 || rows % SLAB_ROWS || cols % 32) return SlabOut{NULL, 0};
    for (int i = 0; i < TWINS_MAX; i++) {
        Twin *t = &twins[i];
        if (!t->owned || y < t->f || y >= t->f + t->n) continue;
        const size_t bytes = (size_t)rows * cols * sizeof(bf16);
        if (bytes > t->img_bytes) {
            CUDA_CHECK(cudaFree(t->img));
            CUDA_CHECK(cudaMalloc(&t->img, bytes));
            t->img_bytes = bytes;
            g_cuda.gen++;
        }
        t->img_of = y, t->img_rows = rows, t->img_cols = cols;
        return SlabOut{t->img, rows / SLAB_ROWS};
    }
    return SlabOut{NULL, 0};
}

const void *twin_slab_in(const real *x, int rows, int cols) {
    for (int i = 0; i < TWINS_MAX; i++) {
        const Twin *t = &twins[i];
        if (t->owned && t->img_of == x && t->img_rows == rows && t->img_cols == cols) return t->img;
    }
    return NULL;
}

void twin_slabs_drop(void) {
    for (int i = 0; i < TWINS_MAX; i++) twins[i].img_of = NULL;
}
