// docs.h: documents for features and probes, one per line of a file, optionally labelled
// ("LABEL TEXT"), with the sentiment-neuron preprocessing. Bytes are never decoded.
#pragma once
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int n;
    uint8_t *bytes;   // all documents back to back
    size_t *off;      // document i is bytes[off[i], off[i+1])
    int *label;       // [n], or NULL when unlabelled
} Docs;

// Reads path: every line (split at '\n'; a final newline ends the last line) is one
// document. Labelled lines are an integer, one space (or tab), then the text; anything
// else dies naming path:line. max_docs > 0 keeps only the first max_docs lines.
void docs_read(Docs *d, const char *path, int labelled, int preprocess, long max_docs);
void docs_free(Docs *d);
static inline size_t doc_len(const Docs *d, int i) { return d->off[i + 1] - d->off[i]; }
static inline const uint8_t *doc_bytes(const Docs *d, int i) { return d->bytes + d->off[i]; }

// Preprocessing as in the sentiment-neuron work, on raw bytes: newlines become spaces,
// surrounding ASCII whitespace (space \t \n \v \f \r) is stripped, then "\n " is prepended
// and " " appended. Writes at most n + 3 bytes to out; returns the length.
size_t doc_preprocess(uint8_t *out, const uint8_t *s, size_t n);

#ifdef __cplusplus
}
#endif
