// npy.h: NumPy .npy files (format 1.0 written; 1.0-3.0 read), C order, little-endian.
// Writers go through a temporary file and a rename, so a crash never leaves a partial file.
#pragma once
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char descr[16];      // e.g. "<f4"
    int ndim;            // 1 or 2
    size_t shape[2];     // shape[1] = 1 for 1-D arrays
    size_t data_off;     // bytes before the data
} NpyHeader;

// Writes data [shape[0]] (ndim 1) or [shape[0], shape[1]] (ndim 2); descr "<f4" or "<i4".
void npy_write(const char *path, const char *descr, const void *data, int ndim, const size_t *shape);
// Parses the header at the start of buf; dies naming `path` on a malformed or unsupported one.
void npy_parse_header(NpyHeader *h, const uint8_t *buf, size_t len, const char *path);
// A 1-D or 2-D numeric array (<f4 <f8 <i4 <i8 |i1 |u1 |b1) as floats [rows, cols].
float *npy_read_matrix(const char *path, size_t *rows, size_t *cols);
// Integer labels from a .npy (1-D or one column, integral values) or, when the name ends
// in .txt, a text file of one integer per line.
int *labels_read(const char *path, size_t *n);
// Writes labels as int32 .npy, or as text (one per line) when the name ends in .txt.
void labels_write(const char *path, const int *labels, size_t n);

#ifdef __cplusplus
}
#endif
