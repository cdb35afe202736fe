// run_dir.h: a run directory belongs to one run. A new run does not write over another's
// checkpoints, and a resumed run writes over only the run it continues.
#pragma once

// Before a run writes into dir: dies with one line naming dir, what it holds and the ways on
// (--resume, another --out_dir, --overwrite) when dir holds the checkpoints of a run other
// than this one (resume: the checkpoint it continues, NULL for a new run). With overwrite,
// removes that run's checkpoints and log instead, and says so.
void run_dir_claim(const char *dir, const char *resume, int overwrite);
