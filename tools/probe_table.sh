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
timeout -s TERM "$secs" ./swlstm train configs/probe_lm.cfg --data="$data/gcide.dict.dz" --out_dir="$run" --overwrite \
    | tee "$res/train.log" | grep -E "^(eval|stopped|done)|parameters" || true
./swlstm info "$ck" | head -6 | tee "$res/info.txt"
./swlstm eval "$ck" --split test --max-bytes 2000000 --json | tee "$res/eval.json"
# Features once on the GPU, then L2 probes on the CPU (L1 sweeps over 4096 dense features take
# far longer than the L2 ones; see docs/PROBES.md).
feats() { ./swlstm features "$ck" --input "$1" --labels "$2.labels.npy" --out "$2.npy" --device cuda --precision fp32; }
for f in sst2.train sst2.dev sst2.test mr.all; do feats "$data/$f" "$run/$f"; done
./swlstm probe --features-file "$run/sst2.train.npy" --labels "$run/sst2.train.labels.npy" \
    --dev-features "$run/sst2.dev.npy" --dev-labels "$run/sst2.dev.labels.npy" \
    --test-features "$run/sst2.test.npy" --test-labels "$run/sst2.test.labels.npy" --penalty l2 --json | tee "$res/sst2.json"
./swlstm probe --features-file "$run/mr.all.npy" --labels "$run/mr.all.labels.npy" --folds 10 --penalty l2 --json \
    | tee "$res/mr.json"
