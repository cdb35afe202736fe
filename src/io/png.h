// png.h: a minimal PNG writer (8-bit greyscale), for mask pictures.
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

// Writes w x h row-major grey pixels (0 black .. 255 white) to path, via a temp file that is
// renamed into place. Dies with a one-line message on I/O error.
void png_write_gray(const char *path, const uint8_t *pixels, int w, int h);

#ifdef __cplusplus
}
#endif
