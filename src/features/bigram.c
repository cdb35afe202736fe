// bigram.c: L2-normalised byte-bigram counts over the bigrams seen in the data.
#include "features/bigram.h"
#include <math.h>
#include <string.h>
#include "base/common.h"

void bigram_vocab_init(BigramVocab *v) {
    v->ncol = 0;
    memset(v->col_of, 0xff, sizeof v->col_of);
}

void bigram_vocab_add(BigramVocab *v, const Docs *d) {
    for (int i = 0; i < d->n; i++) {
        const uint8_t *s = doc_bytes(d, i);
        for (size_t t = 1; t < doc_len(d, i); t++) {
            int k = s[t - 1] << 8 | s[t];
            if (v->col_of[k] < 0) v->col_of[k] = v->ncol++;
        }
    }
}

float *bigram_features(const BigramVocab *v, const Docs *d) {
    size_t D = (size_t)v->ncol;
    float *X = xcalloc((size_t)d->n * D + 1, sizeof(float));
    for (int i = 0; i < d->n; i++) {
        const uint8_t *s = doc_bytes(d, i);
        float *row = X + (size_t)i * D;
        double ss = 0;
        for (size_t t = 1; t < doc_len(d, i); t++) {
            int col = v->col_of[s[t - 1] << 8 | s[t]];
            if (col < 0) die("internal: bigram outside the vocabulary");
            ss += 2 * row[col] + 1;  // (c+1)^2 - c^2: running sum of squared counts
            row[col] += 1;
        }
        float scale = ss > 0 ? (float)(1 / sqrt(ss)) : 0;
        for (size_t j = 0; j < D; j++) row[j] *= scale;
    }
    return X;
}
