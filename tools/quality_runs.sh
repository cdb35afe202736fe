#!/usr/bin/env bash
# quality_runs.sh: the four runs of docs/QUALITY.md on one GPU: dense vs small-world at equal
# parameters (about 34-36M) and equal steps, for the plain LSTM cell and the mLSTM (depth 4).
# Trains each, evaluates best.ckpt on the valid and test splits (EMA weights), and prints a
# markdown table. Environment: STEPS (default 5000), OUT (default checkpoints/quality),
# DATA (default: the configs' GCIDE path), SWLSTM (default ./swlstm), RUNS (names to run),
# EXTRA (more --key=value for every run, last), EVAL_BYTES (cap the evaluated bytes; 0 = all).
set -euo pipefail
STEPS=${STEPS:-5000}
OUT=${OUT:-checkpoints/quality}
BIN=${SWLSTM:-./swlstm}
RUNS=${RUNS:-"lstm_dense lstm_smallworld mlstm_dense mlstm_smallworld"}
EVAL_BYTES=${EVAL_BYTES:-0}
data=() evdata=()
if [ -n "${DATA:-}" ]; then data=(--data="$DATA"); evdata=(--data "$DATA"); fi
[ "$EVAL_BYTES" -gt 0 ] && evdata+=(--max-bytes "$EVAL_BYTES")

# name -> config and overrides (the plain-LSTM pair: same data, schedule and EMA; its own widths)
declare -A cfg=(
    [lstm_dense]="configs/mlstm_dense.cfg --cell=lstm --init=uniform --hidden_size=2880"
    [lstm_smallworld]="configs/mlstm_smallworld.cfg --cell=lstm --init=uniform --sparsity=ba_15"
    [mlstm_dense]="configs/mlstm_dense.cfg"
    [mlstm_smallworld]="configs/mlstm_smallworld.cfg"
)

mkdir -p "$OUT"
for r in $RUNS; do
    [ -n "${cfg[$r]:-}" ] || { echo "quality_runs.sh: unknown run '$r'" >&2; exit 2; }
    # shellcheck disable=SC2086
    "$BIN" train ${cfg[$r]} "${data[@]}" --max_steps="$STEPS" --out_dir="$OUT/$r" --overwrite ${EXTRA:-} | tee "$OUT/$r.train.txt"
    for split in valid test; do
        "$BIN" eval "$OUT/$r/best.ckpt" --split "$split" "${evdata[@]}" --protocol stripes --json > "$OUT/$r.$split.json"
    done
done

echo
echo "| run | cell | hidden | sparsity | parameters | valid bpc | test bpc | train chars/s |"
echo "|---|---|---|---|---|---|---|---|"
for r in $RUNS; do
    python3 - "$OUT" "$r" <<'PY'
import json, sys
out, r = sys.argv[1], sys.argv[2]
log = [json.loads(l) for l in open(f"{out}/{r}/log.jsonl")]
start = [e for e in log if e["type"] == "start"][0]
rate = lambda first: [e["chars_per_sec"] for e in log if e["type"] == "step" and e["step"] >= first]
steps = rate(11) or rate(2)  # past the first steps' warm-up
cfg = {}
for line in open(f"{out}/{r}.train.txt"):
    if line.startswith("swlstm train:"):
        w = line.replace(",", "").split()
        cfg = {"cell": w[w.index("layer(s)") - 1], "hidden": w[w.index("units") - 1], "sparsity": w[w.index("sparsity") + 1]}
bpc = {s: json.load(open(f"{out}/{r}.{s}.json"))["bpc"] for s in ("valid", "test")}
cps = f"{sorted(steps)[len(steps) // 2] / 1e3:.1f}k" if steps else "n/a"  # median: robust to eval pauses
print(f"| {r} | {cfg.get('cell')} | {cfg.get('hidden')} | {cfg.get('sparsity')} | {start['params'] / 1e6:.2f}M "
      f"| {bpc['valid']:.4f} | {bpc['test']:.4f} | {cps} |")
PY
done
