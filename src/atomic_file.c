// atomic_file.c: temporary file, fsync, rename, fsync of the directory; and the clean-up of
// the temporary files of killed runs.
#include "atomic_file.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

AtomicFile atomic_open(const char *path, const char *what) {
    size_t n = strlen(path) + 32;
    AtomicFile af = {NULL, xmalloc(n), path, what};
    snprintf(af.tmp, n, "%s.tmp.%ld", path, (long)getpid());
    af.f = fopen(af.tmp, "wb");
    if (!af.f) die("%s '%s': cannot create '%s': %s", what, path, af.tmp, strerror(errno));
    return af;
}

// fsync the directory holding path so the rename itself is durable.
static int fsync_dir(const char *path) {
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    int rc = fd < 0 ? -1 : fsync(fd);
    if (fd >= 0) close(fd);
    free(dir);
    return rc;
}

void atomic_commit(AtomicFile *af) {
    errno = 0;
    int ok = fflush(af->f) == 0 && !ferror(af->f) && fsync(fileno(af->f)) == 0;
    int err = errno ? errno : EIO;
    if (fclose(af->f) != 0 && ok) { ok = 0; err = errno; }
    if (ok && rename(af->tmp, af->path) != 0) { ok = 0; err = errno; }
    if (!ok) {
        unlink(af->tmp);
        die("%s '%s': write failed: %s", af->what, af->path, strerror(err));
    }
    if (fsync_dir(af->path) != 0) die("%s '%s': fsync of its directory failed: %s", af->what, af->path, strerror(errno));
    free(af->tmp);
    af->f = NULL;
    af->tmp = NULL;
}

// The pid of a name "<anything>.tmp.<digits>", else 0.
static long tmp_pid(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot - name < 4 || strncmp(dot - 4, ".tmp", 4)) return 0;
    size_t n = strlen(dot + 1);
    if (n == 0 || n > 9 || strspn(dot + 1, "0123456789") != n) return 0;
    return strtol(dot + 1, NULL, 10);
}

int atomic_remove_stale(const char *dir) {
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
