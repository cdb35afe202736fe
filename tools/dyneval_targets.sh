#!/usr/bin/env bash
# dyneval_targets.sh: issue 59's targets for `eval --dynamic`'s default on one corpus (one GPU).
#   bash tools/dyneval_targets.sh CORPUS [SPLIT]     (SPLIT default 0.98,0.01,0.01; the stand-in 0.9,0.05,0.05)
# Trains configs/mlstm_3min.cfg and configs/lstm_3min.cfg for TRAIN_SECONDS (default 178) each on
# CORPUS (a run whose training ended is not trained again, so that a long call can be cut in
# several; one the cut interrupted is), then scores each one's test split (its first MAX_BYTES, default the
# whole split) three ways, each command timed whole (static reference, statistics, choice,
# dynamic pass):
#   default   `eval --dynamic` as shipped: eta and lambda chosen on the valid split
#   fixed     `eval --dynamic --eta E` with the cell's fixed eta before issue 59 (3e-5 mLSTM, 3e-6
#             LSTM): the cost the default is held to (<= 1.5x)
#   tune      `eval --dynamic --dyn-tune`: the full grid of 15 pairs on the valid split
# and prints one table: static and dynamic bpc, the pairs, the seconds, and whether the default
# is below static and within 0.005 of the grid's. CONFIGS picks the configs, RUNS the scorings
# (default "default fixed tune"; without fixed, its seconds are the default's less the choice's,
# marked *), GPU the device (CUDA_VISIBLE_DEVICES), OUT_DIR (default checkpoints/dyneval_targets/<corpus name>) keeps the
# logs, checkpoints and each eval's JSON; an eval whose JSON is there is not run again either.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "dyneval_targets.sh: error: $*" >&2; exit 1; }
DATA=${1:-}
SPLIT=${2:-0.98,0.01,0.01}
SECONDS_=${TRAIN_SECONDS:-178}
CONFIGS=${CONFIGS:-configs/mlstm_3min.cfg configs/lstm_3min.cfg}
RUNS=${RUNS:-default fixed tune}
[ -n "$DATA" ] || fail "usage: bash tools/dyneval_targets.sh CORPUS [SPLIT]"
[ -f "$DATA" ] || fail "corpus '$DATA' not found"
[ -x ./swlstm ] || fail "./swlstm not built (run make)"
OUT=${OUT_DIR:-checkpoints/dyneval_targets/$(basename "$DATA")}
MAXB=()
[ -n "${MAX_BYTES:-}" ] && MAXB=(--max-bytes "$MAX_BYTES")
export CUDA_VISIBLE_DEVICES=${GPU:-${CUDA_VISIBLE_DEVICES:-0}}
mkdir -p "$OUT"

# eval NAME CKPT OPTIONS...: the JSON of `eval --dynamic` on the test split into $OUT/NAME.json,
# with the command's whole seconds added as "wall".
run_eval() {
    local name=$1 ckpt=$2
    shift 2
    [ -f "$OUT/$name.json" ] && return
    local t0 t1
    t0=$(date +%s.%N)
    ./swlstm eval "$ckpt" --data "$DATA" --split test "${MAXB[@]}" --dynamic --json --quiet "$@" > "$OUT/$name.raw"
    t1=$(date +%s.%N)
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["wall"] = float(sys.argv[3]) - float(sys.argv[2]); print(json.dumps(d))' \
        "$OUT/$name.raw" "$t0" "$t1" > "$OUT/$name.json"
}

for cfg in $CONFIGS; do
    name=$(basename "$cfg" .cfg)
    dir=$OUT/$name
    if [ ! -f "$dir.trained" ]; then  # a run that this script's own end cut short is trained again
        echo "training $name for $SECONDS_ s on $DATA" >&2
        rm -rf "$dir"
        timeout -s TERM "$SECONDS_" ./swlstm train "$cfg" --data "$DATA" --split "$SPLIT" --out_dir "$dir" > "$dir.log" 2>&1 || true
        [ -f "$dir/latest.ckpt" ] || fail "training $name left no checkpoint (see $dir.log)"
        touch "$dir.trained"
    fi
    case $name in mlstm*) eta=3e-5 ;; *) eta=3e-6 ;; esac
    echo "scoring $name: $RUNS (fixed: eta $eta)" >&2
    for r in $RUNS; do
        case $r in
        default) run_eval "$name.default" "$dir/latest.ckpt" ;;
        fixed) run_eval "$name.fixed" "$dir/latest.ckpt" --eta "$eta" ;;
        tune) run_eval "$name.tune" "$dir/latest.ckpt" --dyn-tune ;;
        *) fail "RUNS: '$r' is not default, fixed or tune" ;;
        esac
    done
done

python3 - "$OUT" "$(basename "$DATA")" "$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2> /dev/null || echo unknown)" \
    $CONFIGS << 'EOF'
import json, os, sys
out, corpus, card, cfgs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
print(f"{corpus}, test split, {card}")
print("| config | static | default (choice: eta, lambda) | fixed eta | dyn-tune (eta, lambda) | s default / fixed | below static | within 0.005 of grid | cost <= 1.5x |")
print("|---|---|---|---|---|---|---|---|---|")
def load(n, k):
    f = os.path.join(out, f"{n}.{k}.json")
    return json.load(open(f)) if os.path.exists(f) else None

derived = False
for cfg in cfgs:
    n = os.path.basename(cfg)[:-4]
    d, f, t = (load(n, k) for k in ("default", "fixed", "tune"))
    if not d:
        print(f"| {n} | not scored |")
        continue
    fb = f"{f['bpc']:.4f}" if f else "-"
    tb = f"{t['bpc']:.4f} ({t['eta']:g}, {t['lambda']:g})" if t else "-"
    # without the fixed run, its time is the default's less the choice's (the same work besides;
    # within 0.1 s of the measured one on three runs, 2026-11-29)
    fw, mark = (f["wall"], "") if f else (d["wall"] - d["choice_seconds"], "*")
    cost = f"{d['wall']:.0f} / {fw:.0f}{mark} ({d['wall'] / fw:.2f}x)"
    near = ("yes" if d["bpc"] <= t["bpc"] + 0.005 else "NO") if t else "-"
    cheap = "yes" if d["wall"] / fw <= 1.5 else "NO"
    print(f"| {n} | {d['static_bpc']:.4f} | {d['bpc']:.4f} ({d['choice']}: {d['eta']:g}, {d['lambda']:g}) | {fb} | {tb} | {cost} "
          f"| {'yes' if d['bpc'] < d['static_bpc'] else 'NO'} | {near} | {cheap} |")
    derived = derived or not f
if derived:
    print("*: not run; the default's seconds less its choice's")
EOF
