// data.h: byte corpora (raw, .gz, .zip), train/valid/test splits and batch stripes.
#pragma once
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const uint8_t *bytes;  // the whole corpus
    size_t len;
    size_t off[3], n[3];   // train, valid, test: offset and length in bytes
    // ownership: a raw file is mmapped, compressed ones are inflated into a buffer
    void *map;
    size_t map_len;
    uint8_t *owned;
} Dataset;

enum { SPLIT_TRAIN = 0, SPLIT_VALID = 1, SPLIT_TEST = 2 };

// Opens path: .gz via zlib, .zip (single entry, stored or deflated), anything else raw.
// Dies with a message naming the file on missing, empty or corrupt input.
void dataset_open(Dataset *d, const char *path);
// "a,b,c" as fractions (sum <= 1) or as byte counts (integers); dies on a bad value.
// Fractions round down; for a 100e6-byte file "0.9,0.05,0.05" gives exactly 90e6/5e6/5e6.
void dataset_split(Dataset *d, const char *split, const char *path_for_errors);
// The arithmetic of dataset_split: sizes n[train, valid, test] of a len-byte corpus.
// Fractions are written with '.' or an exponent; plain integers are byte counts.
void split_sizes(const char *split, size_t len, size_t n[3], const char *path_for_errors);
void dataset_close(Dataset *d);
// A cheap fingerprint of the corpus: CRC32 of its length and of 16 evenly spaced 4 KiB
// chunks (the whole corpus up to 64 KiB). Checkpoints keep it so that --resume can refuse
// a different or changed file instead of silently training on a shifted split.
uint32_t dataset_fingerprint(const Dataset *d);
int split_from_name(const char *name);  // "train"|"valid"|"test" -> index, -1 otherwise

// B contiguous stripes over a span; windows of T steps read T+1 bytes (inputs and targets).
// Stripe b reads span bytes from b * stripe_len: its own, or (eval's warm-up) more.
typedef struct {
    const uint8_t *base;
    size_t len;          // span length
    int B, T;
    size_t stripe_len;   // len / B: where stripe b starts is b * stripe_len
    size_t pos;          // offset of the next window inside every stripe
    size_t span;         // bytes each stripe reads: stripe_len, or warm + stripe_len + 1
    size_t warm;         // leading steps of stripes 1..B-1 that run unscored (eval.h)
} Stripes;

// Dies if the span cannot hold B stripes of at least T+1 bytes.
void stripes_init(Stripes *s, const uint8_t *base, size_t len, int B, int T);
// Window at stripe offset pos with T steps: in[t*B+b] = stripe_b[pos+t], tgt = stripe_b[pos+t+1].
void stripes_fill(const Stripes *s, size_t pos, int T, int *in, int *tgt);
// Fills the current window and advances pos by T, wrapping to 0 when the next window would
// not fit. Returns 1 when this window starts a stripe (pos was 0): carried state must be reset.
int stripes_next(Stripes *s, int *in, int *tgt);
// The share of rank `rank` of `world` (data-parallel training): global stripes
// [rank*B/world, (rank+1)*B/world) of `global`. Row t*(B/world)+b of its window is row
// t*B + rank*B/world + b of the global window, at every position (the same pos and wrap as
// the global layout). Dies unless world divides B.
void stripes_share(Stripes *local, const Stripes *global, int rank, int world);

#ifdef __cplusplus
}
#endif
