// verbs_pending.c: TEMPORARY during parallel development; weak fallbacks replaced by each
// verb's own file. Delete before release.
#include "common.h"
#include "verbs.h"
#define PENDING(fn) __attribute__((weak)) int fn(int argc, char **argv) { (void)argc; die("verb %s is not built yet", argv[0]); }
PENDING(cmd_train) PENDING(cmd_eval) PENDING(cmd_sample) PENDING(cmd_info) PENDING(cmd_mask)
PENDING(cmd_bench) PENDING(cmd_features) PENDING(cmd_probe)
