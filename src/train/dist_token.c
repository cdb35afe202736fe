// dist_token.c: the shared secret of a tcp:// rendezvous, from SWLSTM_DIST_TOKEN or the file
// the dist_token key names (a path, so that the secret is in no command line, log or
// checkpoint). Only its SHA-256 is kept, and no message shows it.
#include "train/dist.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/sha256.h"

#define TOKEN_MAX 4096

void dist_token_set(DistEnv *e, const char *secret, size_t n, const char *what) {
    if (n < DIST_TOKEN_MIN)
        die("%s: the shared secret has %zu bytes, expected at least %d (e.g. the output of openssl rand -hex 32)", what, n, DIST_TOKEN_MIN);
    sha256(secret, n, e->token_key);
    e->has_token = 1;
}

void dist_token_file(DistEnv *e, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("dist_token: cannot open the file it names: %s (it names a file holding the secret; the value is not shown, "
            "in case it is the secret itself)", strerror(errno));
    char buf[TOKEN_MAX + 1], what[600];
    struct stat st;
    ssize_t n = fstat(fd, &st) || !S_ISREG(st.st_mode) ? -1 : read(fd, buf, sizeof buf);
    close(fd);
    snprintf(what, sizeof what, "dist_token file %s", path);
    if (n < 0) die("%s: expected a regular file holding the shared secret", what);
    if (n > TOKEN_MAX) die("%s: longer than %d bytes, expected a short secret", what, TOKEN_MAX);
    if (st.st_mode & 077) warnf("%s can be read by other users: chmod 600 it", what);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    dist_token_set(e, buf, (size_t)n, what);
    explicit_bzero(buf, sizeof buf);
}
