// bigram.h: byte-bigram baseline features. A document's vector holds the counts of its
// 65536 possible bigrams (byte a then byte b -> index a*256+b), L2-normalised to unit length.
// Columns are stored only for bigrams that occur in some document of the sets added to the
// vocabulary: every other column is zero everywhere, so a probe gives it zero weight and
// dropping it changes nothing (this is exact, not hashing).
#pragma once
#include "features/docs.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int ncol;
    int col_of[65536];   // bigram -> column, or -1
} BigramVocab;

void bigram_vocab_init(BigramVocab *v);
void bigram_vocab_add(BigramVocab *v, const Docs *d);   // gives new bigrams of d columns
// Features [d->n, v->ncol]; every bigram of d must be in v.
float *bigram_features(const BigramVocab *v, const Docs *d);

#ifdef __cplusplus
}
#endif
