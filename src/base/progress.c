// progress.c: the progress line of long verbs (progress.h).
#include "base/progress.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "base/common.h"

void fmt_eta(char *out, size_t n, double secs) {
    long s = (long)(secs + 0.5);
    if (s >= 3600) snprintf(out, n, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else snprintf(out, n, "%ldm%02lds", s / 60, s % 60);
}

void progress_init(Progress *p, const char *what, const char *unit, double total, int mode) {
    int tty = isatty(STDERR_FILENO);
    *p = (Progress){what, unit, total, now_sec(), 0, total > 0 && (mode < 0 ? tty : mode), tty};
    p->shown = p->t0;
}

// One line: "what: [done/total unit, ]share | spent | eta ETA" (or "done" at the end).
static void draw(const Progress *p, double done, double now) {
    char spent[32], eta[32] = "done", count[64] = "";
    fmt_eta(spent, sizeof spent, now - p->t0);
    if (done < p->total) {
        memcpy(eta, "eta ", 5);
        fmt_eta(eta + 4, sizeof eta - 4, (now - p->t0) / done * (p->total - done));
    }
    if (p->unit) snprintf(count, sizeof count, "%.0f/%.0f %s, ", done, p->total, p->unit);
    fprintf(stderr, "%s%s: %s%.1f%% | %s | %s%s", p->tty ? "\r" : "", p->what, count, 100 * done / p->total,
            spent, eta, p->tty ? "  " : "\n");
    fflush(stderr);
}

void progress_show(Progress *p, double done) {
    double now = now_sec();
    if (!p->on || now - p->shown < (p->tty ? 0.5 : 1) || done <= 0) return;
    p->shown = now;
    draw(p, done, now);
}

void progress_done(Progress *p) {
    if (p->on && p->tty && p->shown > p->t0) fprintf(stderr, "\r%*s\r", 72, "");
    else if (p->on && !p->tty) draw(p, p->total, now_sec());
    fflush(stderr);
}
