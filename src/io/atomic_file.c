// atomic_file.c: temporary file, fsync, rename, directory fsync; see atomic_file.h.
#include "io/atomic_file.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/common.h"

int (*af_fault_hook)(AfCall call, size_t *len);

enum { BUF_BYTES = 1 << 16 };

struct AtomicFile {
    int fd;
    char *path, *tmp;
    const char *what;
    const char *failed;  // the step that failed first ("write", "fsync", ...), NULL if none
    int err;
    size_t nbuf;
    unsigned char buf[BUF_BYTES];
};

// Asks the fault hook about one call; an injected error sets errno and returns 1.
static int injected(AfCall call, size_t *len) {
    size_t dummy = 0;
    int e = af_fault_hook ? af_fault_hook(call, len ? len : &dummy) : 0;
    if (e) errno = e;
    return e != 0;
}

static void fail(AtomicFile *f, const char *step) {
    if (!f->failed) f->failed = step, f->err = errno;
}

AtomicFile *af_open(const char *path, const char *what) {
    AtomicFile *f = xmalloc(sizeof *f);
    size_t n = strlen(path) + 32;
    *f = (AtomicFile){.fd = -1, .path = xstrdup(path), .tmp = xmalloc(n), .what = what};
    snprintf(f->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    f->fd = injected(AF_OPEN, NULL) ? -1 : open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (f->fd < 0) die("%s '%s': cannot create '%s': %s", what, path, f->tmp, strerror(errno));
    return f;
}

// Writes all n bytes, resuming short writes; records the first error.
static void write_all(AtomicFile *f, const unsigned char *p, size_t n) {
    while (n && !f->failed) {
        size_t len = n;
        ssize_t got = injected(AF_WRITE, &len) ? -1 : write(f->fd, p, len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { if (got == 0) errno = EIO; fail(f, "write"); return; }
        p += got;
        n -= (size_t)got;
    }
}

static void flush_buf(AtomicFile *f) {
    write_all(f, f->buf, f->nbuf);
    f->nbuf = 0;
}

void af_write(AtomicFile *f, const void *p, size_t n) {
    if (n == 0) return;
    if (f->nbuf + n > BUF_BYTES) flush_buf(f);
    if (n >= BUF_BYTES) write_all(f, p, n);
    else memcpy(f->buf + f->nbuf, p, n), f->nbuf += n;
}

// fsync of the directory holding path, so that the rename itself is durable.
static int fsync_dir(const char *path) {
    if (injected(AF_DIRSYNC, NULL)) return -1;
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? -1 : fsync(fd);
    if (fd >= 0) close(fd);
    free(dir);
    return rc;
}

static void af_free(AtomicFile *f) {
    free(f->path);
    free(f->tmp);
    free(f);
}

void af_commit(AtomicFile *f) {
    flush_buf(f);
    if (!f->failed && (injected(AF_FSYNC, NULL) || fsync(f->fd))) fail(f, "fsync");
    if ((injected(AF_CLOSE, NULL) ? (close(f->fd), -1) : close(f->fd)) && !f->failed) fail(f, "close");
    if (!f->failed && (injected(AF_RENAME, NULL) || rename(f->tmp, f->path))) fail(f, "rename");
    if (f->failed) {
        unlink(f->tmp);
        die("%s '%s': %s failed: %s (any previous file there is unchanged)", f->what, f->path, f->failed, strerror(f->err));
    }
    if (fsync_dir(f->path))
        die("%s '%s': written, but the fsync of its directory failed: %s", f->what, f->path, strerror(errno));
    af_free(f);
}

// "<name>.tmp.<pid>" -> pid, else 0.
static long tmp_pid(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot - name < 4 || strncmp(dot - 4, ".tmp", 4)) return 0;
    size_t n = strlen(dot + 1);
    if (n == 0 || n > 9 || strspn(dot + 1, "0123456789") != n) return 0;
    return strtol(dot + 1, NULL, 10);
}

int af_remove_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = tmp_pid(e->d_name);
        // kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: one does).
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0) removed++;
        else warnf("cannot remove the stale temporary file '%s': %s", path, strerror(errno));
    }
    closedir(d);
    return removed;
}
