// fuzz_data.c: corpora (raw, .gz, .zip) and split strings. Byte 0 picks the format; a split
// string follows, ended by a NUL; the rest is the file. Splits must tile the corpus.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "train/data.h"
#include "harness.h"

static Dataset d;  // static: a die() longjmps past the block, and its mapping must be undone

FUZZ_TARGET(data) {
    static const char *suffix[3] = {".txt", ".gz", ".zip"};
    const uint8_t *nul = size > 1 ? memchr(data + 1, 0, size - 1) : NULL;
    if (!nul) return 0;
    char *split = fuzz_str(data + 1, (size_t)(nul - data - 1));
    const char *path = fuzz_file(nul + 1, size - (size_t)(nul + 1 - data), suffix[data[0] % 3]);
    FUZZ_RUN {
        dataset_open(&d, path);
        dataset_split(&d, split, path);
        if (d.off[SPLIT_TEST] + d.n[SPLIT_TEST] > d.len) abort();
        Stripes s;
        stripes_init(&s, d.bytes, d.n[SPLIT_TRAIN], 2, 3);
        int in[6], tgt[6];
        stripes_next(&s, in, tgt);
        dataset_close(&d);
    }
    if (d.map) munmap(d.map, d.map_len);
    memset(&d, 0, sizeof d);
    free(split);
    return 0;
}
