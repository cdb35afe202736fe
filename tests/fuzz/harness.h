// harness.h: what every fuzz target shares. Built with -DSW_LIBFUZZER (make fuzz), a target
// is a libFuzzer entry point; in the test build it is registered for replay instead, and
// `make test` feeds it each file under tests/fuzz/<target>/ (seeds and crash reproducers).
#pragma once
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include "base/common.h"

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);
void fuzz_register(const char *name, fuzz_fn fn);

#ifdef SW_LIBFUZZER
#define FUZZ_TARGET(name) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#else
#define FUZZ_TARGET(name)                                                              \
    static int fuzz_##name(const uint8_t *data, size_t size);                          \
    __attribute__((constructor)) static void fuzz_reg_##name(void) { fuzz_register(#name, fuzz_##name); } \
    static int fuzz_##name(const uint8_t *data, size_t size)
#endif

// die() under fuzzing longjmps here instead of exiting: a clean error is not a crash.
extern jmp_buf fuzz_jmp;
// Starts one input: records the open descriptors, tracks allocations, sets the die hook.
void fuzz_begin(void);
// Ends it. died: frees what the parser left allocated and closes the descriptors it left
// open (a die() path may leak; the process would have exited). Otherwise a leaked
// descriptor is a bug and aborts.
void fuzz_end(int died);
// Writes the input to a scratch file whose name ends in suffix (".npy", ".gz", ...).
const char *fuzz_file(const void *data, size_t size, const char *suffix);
// A NUL-terminated copy (caller frees).
char *fuzz_str(const void *data, size_t size);

// Runs the block as one input: FUZZ_RUN { parse(...); } (no return inside the block).
#define FUZZ_RUN                                                                       \
    if (setjmp(fuzz_jmp)) fuzz_end(1);                                                 \
    else for (int fuzz_once_ = (fuzz_begin(), 1); fuzz_once_; fuzz_once_ = 0, fuzz_end(0))
