// shared_opts.h: options several verbs read: the feature options (features, probe, units) and
// the probe's penalty and device (probe, bench --probe).
#pragma once
#include "cli/opts.h"
#include "features/feature_extract.h"
#include "probe/probe.h"

extern const char feat_opts_usage[];   // help text of the feature options

// If the argument is a feature option (--quiet/-q/--progress among them: fo->progress), reads it
// (and its value) into fo and returns 1.
int feat_opts_read(Opts *o, FeatOpts *fo);
// "l2" | "l1" | "both" -> a bit mask of Penalty; dies otherwise.
int probe_penalties(Opts *o);
// "cpu" | "cuda" (what: the option, for the error); cuda dies on a CPU-only build.
ProbeDevice probe_device(const char *v, const char *what);
