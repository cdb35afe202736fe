// common.h: the numeric type, fatal errors, checked allocation and file helpers.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#ifdef __cplusplus
extern "C" {
#endif

// `real` is the CPU reference's float type. The default build uses float; the
// gradient-check build compiles the same sources with -DSW_DOUBLE.
#ifdef SW_DOUBLE
typedef double real;
#else
typedef float real;
#endif

// Before a function: compiled for AVX2 too and picked at load time. clang (the fuzz build's
// compiler) gets one version: its sanitizer builds leave the clones' symbols unresolved.
#ifdef __clang__
#define SW_AVX2_CLONES
#else
#define SW_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#define SW_VOCAB 256
// The embedding gradient sums each row's occurrences in runs of this many, then the runs
// (both backends: src/ops/embed_cpu.c says the order).
#define SW_EMBED_RUN 64
#define SW_MAX_LAYERS 8
#define SW_MAX_DEPTH 8   // mlstm internal steps

// Prints "swlstm: error: <context: ><message>" on one line and exits with status 1 at once
// (no atexit handlers: other threads may be inside CUDA or NCCL calls).
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
// Test hook: when set, die() calls it after printing instead of exiting. The fuzz harnesses
// (tests/fuzz/) set one that longjmps back, so a clean error on bad input is not a crash.
// The hook must not return.
extern void (*die_hook)(void);
// The message of this thread's last die() (a die_hook's caller reports it).
const char *die_message(void);
// Names the calling thread in its later errors and warnings, e.g. "rank 1 of 2" ("" = none).
void die_context(const char *ctx);
// Prints "swlstm: warning: <message>".
void warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

double now_sec(void);              // monotonic seconds
FILE *xfopen(const char *path, const char *mode, const char *what);
// Reads a whole (small) file; *len gets its size. NUL-terminated.
char *read_text_file(const char *path, size_t *len, const char *what);
int ends_with(const char *s, const char *suffix);
int mkdir_p(const char *path);     // 0 on success
int same_file(const char *a, const char *b);  // both exist and are one file (links included)
// Dies when out is the file `in` (verb names the command): no verb writes over its own input.
void refuse_same_file(const char *verb, const char *in, const char *out);
double file_size(const char *path);  // bytes; 0 when it cannot be stat'ed (a progress line's total)
// Command-line numbers: die "<what> = '<s>': expected ..." unless s is a number in [lo, hi].
long parse_long(const char *what, const char *s, long lo, long hi);
double parse_double(const char *what, const char *s, double lo, double hi);

#ifdef __cplusplus
}
#endif
