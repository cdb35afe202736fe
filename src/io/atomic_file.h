// atomic_file.h: the one path by which outputs (checkpoints, .npy, labels, images) reach
// the disk: path.tmp.<pid>, write, fsync, close, rename over path, fsync of the directory.
// A failure at any step removes the temporary file, leaves a previous file at path as it
// was (nothing partial is ever renamed into place), and dies naming the file and the cause.
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct AtomicFile AtomicFile;
// what names the kind of file in errors: "checkpoint", "output file", "image".
AtomicFile *af_open(const char *path, const char *what);
void af_write(AtomicFile *f, const void *p, size_t n);  // buffered; an error is kept for af_commit
void af_commit(AtomicFile *f);                           // frees f; dies on any error
// Removes the temporary files in dir ("*.tmp.<pid>") whose process no longer runs: what a
// killed run left. Returns how many it removed.
int af_remove_stale(const char *dir);

// Fault injection for tests: when set, runs before each system call of a save. Returns 0 to
// let the call run, or an errno value to fail it; for AF_WRITE it may lower *len (a short
// write, which the writer must resume).
typedef enum { AF_OPEN, AF_WRITE, AF_FSYNC, AF_CLOSE, AF_RENAME, AF_DIRSYNC } AfCall;
extern int (*af_fault_hook)(AfCall call, size_t *len);

#ifdef __cplusplus
}
#endif
