#!/usr/bin/env bash
# contest.sh: the wall-clock contest of docs/QUALITY.md: each swlstm config and each cuDNN dense
# LSTM (tools/cudnn_lm.py) trains on one GPU for the same SECONDS, then its valid and test bpc
# are scored (swlstm with --protocol stripes over 128 stripes, as cudnn_lm.py scores, whatever
# the config's batch); one table row per run, and the mean of a run given several seeds.
#   bash tools/contest.sh [SECONDS] [DATA]     (178 and /usr/share/dictd/gcide.dict.dz by default)
# CONFIGS (default configs/mlstm_3min.cfg) and HIDDEN (cuDNN widths, default "2048 4096") pick
# the runs; CFG:SEED or H:SEED runs another seed than the config's or 1, e.g. CONFIGS="c.cfg
# c.cfg:2" HIDDEN="4096 4096:2" (a test bpc moves about 0.01 between seeds, on both sides), and
# H@LR a cuDNN width at another peak learning rate than 1e-3 (H@LR:SEED with both), and
# CFG+KEY=VALUE a config with keys overridden, for screens without a config file, e.g.
# CONFIGS="configs/lstm_3min.cfg+sparsity=ba_12+learning_rate=3e-3:2". SPLIT
# (default 0.98,0.01,0.01, GCIDE's) cuts DATA for both sides: 0.9,0.05,0.05 for the stand-in.
# OUT (default checkpoints/contest) keeps their logs and checkpoints. GPUS (default "0") lists
# the GPUs: the runs go to them in turn, one run a GPU at a time, so on a machine of
# several GPUs the runs of one call train side by side for the same seconds. A swlstm run is
# stopped by SIGTERM at SECONDS (it saves latest.ckpt), so its config's max_steps should end its
# schedule just before. cuDNN's schedule ends at SECONDS at the steps/s cudnn_lm.py measures
# on the GPU after its warmup; CUDNN_RATE_<H> (steps/s) sizes it instead, to repeat a run.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-178}
DATA=${2:-/usr/share/dictd/gcide.dict.dz}
CONFIGS=${CONFIGS:-configs/mlstm_3min.cfg}
HIDDEN=${HIDDEN:-2048 4096}
SPLIT=${SPLIT:-0.98,0.01,0.01}
OUT=${OUT:-checkpoints/contest}
read -r -a GPU_LIST <<< "${GPUS:-0}"
[ -f "$DATA" ] || { echo "contest.sh: error: data file '$DATA' not found" >&2; exit 1; }
[ -x ./swlstm ] || { echo "contest.sh: error: ./swlstm not built (run make)" >&2; exit 1; }
[ ${#GPU_LIST[@]} -gt 0 ] || { echo "contest.sh: error: GPUS is empty (expected GPU indices, e.g. \"0 1\")" >&2; exit 1; }
mkdir -p "$OUT"

# A checkpoint's bpc on a split over 128 stripes, as cudnn_lm.py scores, whatever its config's batch.
split_bpc() {
    ./swlstm eval "$1" --split "$2" --data "$DATA" --protocol stripes --batch-size 128 | sed -n 's/.* bpc \([0-9.]*\) over.*/\1/p'
}

# A swlstm run's name: the config's, then its overrides (CFG+KEY=VALUE...).
swlstm_name() { local run=${1%%:*}; local cfg=${run%%+*}; echo "$(basename "$cfg" .cfg)${run#"$cfg"}"; }
# A swlstm run's directory (its log and row beside it), CFG or CFG:SEED; a cuDNN run's log (H or H:SEED).
swlstm_dir() { local n; n=$(swlstm_name "$1" | tr '+=' '-_'); [[ $1 == *:* ]] && echo "$OUT/$n-s${1#*:}-${SECONDS_}s" || echo "$OUT/$n-${SECONDS_}s"; }
cudnn_log() { local h=${1//@/-lr}; [[ $h == *:* ]] && echo "$OUT/cudnn-${h%%:*}-s${h#*:}-${SECONDS_}s.log" || echo "$OUT/cudnn-$h-${SECONDS_}s.log"; }

# One swlstm run, CFG[+KEY=VALUE...][:SEED], on the GPU of CUDA_VISIBLE_DEVICES: its row beside
# its directory.
swlstm_run() {
    local run=${1%%:*} seed=() over=() kv label dir steps v t
    local cfg=${run%%+*}
    IFS=+ read -r -a kv <<< "${run#"$cfg"}"
    for k in "${kv[@]}"; do [ -n "$k" ] && over+=("--$k"); done
    label=$(swlstm_name "$1")
    [[ $1 == *:* ]] && seed=(--seed "${1#*:}") && label+=", seed ${1#*:}"
    dir=$(swlstm_dir "$1")
    rm -rf "$dir"
    timeout -s TERM "$SECONDS_" ./swlstm train "$cfg" "${over[@]}" "${seed[@]}" --data "$DATA" --split "$SPLIT" --out_dir "$dir" > "$dir.log" 2>&1 || true
    [ -f "$dir/latest.ckpt" ] || { echo "contest.sh: error: $cfg left no checkpoint (see $dir.log)" >&2; return 1; }
    steps=$(sed -n 's/.* at step \([0-9]*\);.*/\1/p; s/^done: \([0-9]*\) steps.*/\1/p' "$dir.log")
    v=$(split_bpc "$dir/latest.ckpt" valid)
    t=$(split_bpc "$dir/latest.ckpt" test)
    echo "| swlstm $label | $SECONDS_ | $steps | $v | $t |" > "$dir.row"
}

# One cuDNN run, H[@LR][:SEED], on the GPU of CUDA_VISIBLE_DEVICES: its row beside its log.
cudnn_run() {
    local h=${1%%[:@]*} seed=1 lr=1e-3 rate_var rate log line steps v t label
    [[ $1 == *:* ]] && seed=${1#*:}
    [[ $1 == *@* ]] && lr=${1#*@} && lr=${lr%%:*}
    rate_var=CUDNN_RATE_$h
    rate=${!rate_var:-0}
    log=$(cudnn_log "$1")
    python3 tools/cudnn_lm.py "$DATA" --split "$SPLIT" --hidden "$h" --lr "$lr" --min-lr "$(awk -v l="$lr" 'BEGIN { print l / 10 }')" --seed "$seed" --seconds "$SECONDS_" --max-steps $((SECONDS_ * rate)) \
        > "$log" 2>&1
    line=$(tail -1 "$log")
    steps=$(echo "$line" | sed -n 's/.*: \([0-9]*\) steps of.*/\1/p')
    v=$(echo "$line" | sed -n 's/.*valid bpc \([0-9.]*\).*/\1/p')
    t=$(echo "$line" | sed -n 's/.*test bpc \([0-9.]*\).*/\1/p')
    label="H=$h"
    [ "$lr" = 1e-3 ] || label+=", lr $lr"
    [ "$seed" = 1 ] || label+=", seed $seed"
    echo "| cuDNN dense LSTM $label | $SECONDS_ | $steps | $v | $t |" > "${log%.log}.row"
}

jobs_=() rows=()
for cfg in $CONFIGS; do jobs_+=("swlstm_run $cfg"); rows+=("$(swlstm_dir "$cfg").row"); done
for h in $HIDDEN; do jobs_+=("cudnn_run $h"); log=$(cudnn_log "$h"); rows+=("${log%.log}.row"); done
rm -f "${rows[@]}"

# Up to one run a GPU at once; a batch ends before the next starts, so no run shares a GPU.
fail=0
for ((i = 0; i < ${#jobs_[@]}; i += ${#GPU_LIST[@]})); do
    pids=()
    for ((g = 0; g < ${#GPU_LIST[@]} && i + g < ${#jobs_[@]}; g++)); do
        CUDA_VISIBLE_DEVICES=${GPU_LIST[g]} ${jobs_[i + g]} & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
done

echo "| run | seconds | steps | valid bpc | test bpc |"
echo "|---|---|---|---|---|"
# Each row, then the mean of the rows of a run given several seeds.
for r in "${rows[@]}"; do [ -f "$r" ] && cat "$r"; done | awk -F' [|] ' '
    { print; name = $1; sub(/^[|] /, "", name); sub(/, seed [0-9]+$/, "", name)
      if (!(name in n)) order[++k] = name
      n[name]++; v[name] += $4; t[name] += $5 }
    END { for (i = 1; i <= k; i++) { m = order[i]
              if (n[m] > 1) printf "| %s, mean of %d | %s | | %.4f | %.4f |\n", m, n[m], '"$SECONDS_"', v[m] / n[m], t[m] / n[m] } }'
exit $fail
