// fuzz_docs.c: document files of `features` and `probe` (one per line, "LABEL TEXT" when
// labelled), and the byte-bigram features built from them. Byte 0 picks labelled,
// preprocessing and max_docs; the rest is the file.
#include <stdlib.h>
#include "features/bigram.h"
#include "harness.h"

static BigramVocab vocab;  // 256 KiB: static, not allocated per input

FUZZ_TARGET(docs) {
    if (size < 1) return 0;
    static const long max_docs[4] = {0, 1, 2, 7};
    const char *path = fuzz_file(data + 1, size - 1, ".txt");
    FUZZ_RUN {
        Docs d;
        docs_read(&d, path, data[0] & 1, data[0] >> 1 & 1, max_docs[data[0] >> 2 & 3]);
        for (int i = 0; i < d.n; i++)
            if (d.off[i + 1] < d.off[i]) abort();
        bigram_vocab_init(&vocab);
        bigram_vocab_add(&vocab, &d);
        free(bigram_features(&vocab, &d));
        docs_free(&d);
    }
    return 0;
}
