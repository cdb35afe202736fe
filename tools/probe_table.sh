#!/usr/bin/env bash
# probe_table.sh: the recipe behind docs/PROBES.md. Trains a small-world char-LM on Debian's
# GCIDE dictionary text for a fixed wall time on one GPU (SIGTERM at the end: the trainer saves
# and exits), then fits sentiment probes on its features and on the byte-bigram baseline.
# Usage: tools/probe_table.sh DATA_DIR RUN_DIR SECONDS   (DATA_DIR holds gcide.dict.dz, mr.all, sst2.*)
set -euo pipefail
data=$1 run=$2 secs=$3
ck=$run/latest.ckpt
timeout -s TERM "$secs" ./swlstm train configs/probe_lm.cfg --data="$data/gcide.dict.dz" --out_dir="$run" || true
./swlstm info "$ck" | head -8
./swlstm eval "$ck" --split test --max-bytes 2000000 --json
for feat in "$ck" "--features bigram"; do
    ./swlstm probe $feat --train "$data/sst2.train" --dev "$data/sst2.dev" --test "$data/sst2.test" --json --device cuda 2>/dev/null \
        || ./swlstm probe $feat --train "$data/sst2.train" --dev "$data/sst2.dev" --test "$data/sst2.test" --json
    ./swlstm probe $feat --train "$data/mr.all" --folds 10 --json --device cuda 2>/dev/null \
        || ./swlstm probe $feat --train "$data/mr.all" --folds 10 --json
done
