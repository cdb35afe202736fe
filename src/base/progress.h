// progress.h: a progress line with elapsed time and ETA on stderr for long work (eval,
// features, probe, prune), redrawn in place at most twice a second; by default only when
// stderr is a terminal (--quiet: never), so logs and pipes get none. train's log lines share
// its ETA format.
#pragma once
#include <stddef.h>

typedef struct {
    const char *what, *unit;  // e.g. "features", "docs" (unit NULL: only the share is shown)
    double total;             // units of work (a caller may refine it as it learns more)
    double t0, shown;         // start, last redraw (now_sec)
    int on, tty;
} Progress;

// mode: -1 when stderr is a terminal, 0 never (--quiet), 1 always (a line a second).
void progress_init(Progress *p, const char *what, const char *unit, double total, int mode);
// done of total units finished (callers serialise concurrent calls).
void progress_show(Progress *p, double done);
// Ends the line: erased on a terminal (the verb's result follows); elsewhere (mode 1) a last
// line with the whole time and "done".
void progress_done(Progress *p);
// secs as "1h02m" or "3m07s".
void fmt_eta(char *out, size_t n, double secs);
