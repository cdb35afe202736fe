// png.c: 8-bit greyscale PNG: signature, IHDR, one zlib-compressed IDAT, IEND.
#include "io/png.h"
#include "io/atomic_file.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "base/common.h"

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

// A chunk is length, type, data, and the CRC of type and data (all big-endian).
static void write_chunk(AtomicFile *f, const char *type, const uint8_t *data, uint32_t len) {
    uint8_t head[8], tail[4];
    put_be32(head, len);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)type, 4);
    if (len) crc = crc32(crc, data, len);
    put_be32(tail, (uint32_t)crc);
    af_write(f, head, 8);
    af_write(f, data, len);
    af_write(f, tail, 4);
}

void png_write_gray(const char *path, const uint8_t *pixels, int w, int h) {
    // Each scanline is prefixed with its filter type (0 = none).
    size_t line = (size_t)w + 1, rawlen = line * (size_t)h;
    uint8_t *raw = xmalloc(rawlen);
    for (int y = 0; y < h; y++) {
        raw[y * line] = 0;
        memcpy(raw + y * line + 1, pixels + (size_t)y * w, (size_t)w);
    }
    uLongf zlen = compressBound(rawlen);
    uint8_t *z = xmalloc(zlen);
    if (compress2(z, &zlen, raw, rawlen, Z_DEFAULT_COMPRESSION) != Z_OK) die("image '%s': zlib compression failed", path);
    free(raw);

    uint8_t ihdr[13] = {0};
    put_be32(ihdr, (uint32_t)w);
    put_be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;  // bit depth; colour type 0 (grey), deflate, adaptive filtering, no interlace
    AtomicFile *f = af_open(path, "image");
    af_write(f, "\x89PNG\r\n\x1a\n", 8);
    write_chunk(f, "IHDR", ihdr, 13);
    write_chunk(f, "IDAT", z, (uint32_t)zlen);
    write_chunk(f, "IEND", NULL, 0);
    free(z);
    af_commit(f);
}
