// safetensors.h: writing the safetensors format: a u64 little-endian header length, a JSON
// header (per tensor: dtype, shape, data_offsets; "__metadata__": string to string), padded
// with spaces to a multiple of 8 bytes, then every tensor's raw little-endian bytes.
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct SafeTensors SafeTensors;

SafeTensors *st_new(void);
// Adds a tensor of dtype "F32" or "I32" (4-byte elements). The data is read at st_write time
// and must stay valid until then; names must be unique.
void st_add(SafeTensors *st, const char *name, const char *dtype, int ndim, const int64_t *shape, const void *data);
void st_meta(SafeTensors *st, const char *key, const char *value);  // copies both
// Writes path atomically (tensors in name order, their data in the same order) and frees st.
// Returns the file size.
uint64_t st_write(SafeTensors *st, const char *path);

#ifdef __cplusplus
}
#endif
