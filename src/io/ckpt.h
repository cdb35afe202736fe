// ckpt.h: the checkpoint container: magic, version, then tagged sections each with a CRC32.
// Files are written to a temporary name, fsynced and renamed, so a crash never leaves a
// half-written checkpoint under the real name.
#pragma once
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define CKPT_VERSION 1
#define CKPT_PIECE_BYTES ((size_t)4 << 20)  // payloads are read in pieces of this size, in parallel

typedef struct {
    char tag[9];           // up to 8 characters, NUL-terminated here
    uint64_t len;
    uint32_t crc;
    const uint8_t *data;   // points into Ckpt.buf
    uint64_t offset;       // of the payload in the file
    int skipped;           // not read (ckpt_read_except)
} CkptSection;

typedef struct CkptWriter CkptWriter;
CkptWriter *ckpt_writer_new(void);
void ckpt_add(CkptWriter *w, const char *tag, const void *data, size_t len);  // copies data
// Writes path atomically (atomic_file.h) and frees w. Dies on failure.
void ckpt_commit(CkptWriter *w, const char *path);

typedef struct {
    uint8_t *buf;
    size_t len;
    uint32_t version;
    int nsec;
    CkptSection *sec;
    char *path;
} Ckpt;

// Reads and verifies the whole file: magic, version, section bounds and CRCs. Any problem
// is a one-line error naming the file and what is wrong (never a crash).
void ckpt_read(Ckpt *c, const char *path);
// The same without reading the payloads of the sections named in skip (NULL-terminated):
// their CRCs are taken as stored, which the file's CRC still checks; finding one dies.
// Inference skips the optimizer's sections, half of a training checkpoint.
void ckpt_read_except(Ckpt *c, const char *path, const char *const *skip);
// Checks the CRCs of the sections ckpt_read_except skipped and prints one warning line naming
// the damaged ones, if any: every verb treats a damaged section alike (it dies on one it
// reads, warns of one it does not).
void ckpt_warn_damaged(const Ckpt *c);
// Reads a section that ckpt_read_except skipped (its CRC checked; nothing if it was read).
void ckpt_read_section(Ckpt *c, const char *tag);
// Whether the file holds the section, read or not.
int ckpt_has(const Ckpt *c, const char *tag);
// Section by tag; if required and missing, dies naming the file and tag. NULL otherwise.
const CkptSection *ckpt_find(const Ckpt *c, const char *tag, int required);
void ckpt_close(Ckpt *c);

#ifdef __cplusplus
}
#endif
