#!/usr/bin/env bash
# probe_table.sh: the recipe behind docs/PROBES.md. Trains a small-world char-LM on Debian's
# GCIDE dictionary text for a fixed wall time on one GPU (SIGTERM at the end: the trainer saves
# and exits cleanly), then fits sentiment probes on its final cell states.
# Usage: tools/probe_table.sh DATA_DIR RUN_DIR SECONDS [RESULTS_DIR]
# DATA_DIR holds gcide.dict.dz, mr.all and sst2.{train,dev,test}. The bigram baseline rows of
# docs/PROBES.md come from `swlstm probe --features bigram` with the same files.
set -euo pipefail
data=$1 run=$2 secs=$3 res=${4:-$2}
ck=$run/latest.ckpt
mkdir -p "$res"
timeout -s TERM "$secs" ./swlstm train configs/probe_lm.cfg --data="$data/gcide.dict.dz" --out_dir="$run" \
    | tee "$res/train.log" | grep -E "^(eval|stopped|done)|parameters" || true
./swlstm info "$ck" | head -6 | tee "$res/info.txt"
./swlstm eval "$ck" --split test --max-bytes 2000000 --json | tee "$res/eval.json"
# L1 sweeps on 4096 dense features are slow: both penalties on SST-2 (dev selection), L2 on MR.
./swlstm probe "$ck" --train "$data/sst2.train" --dev "$data/sst2.dev" --test "$data/sst2.test" \
    --device cuda --precision fp32 --json | tee "$res/sst2.json"
./swlstm probe "$ck" --train "$data/mr.all" --folds 10 --penalty l2 --device cuda --precision fp32 --json \
    | tee "$res/mr.json"
