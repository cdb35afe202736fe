#!/usr/bin/env bash
# check_export.sh: `swlstm export` + tools/swlstm_torch.py reproduce `swlstm eval` within 1e-4 bpc.
# Trains two small 2-layer small-world models (the plain cell with layer norm, sparse W_h and
# W_x; the mlstm with 3 internal steps and EMA weights) for a few steps, or takes CKPT, exports
# each, and compares the two bpc on the same bytes (the EMA weights where the model has them,
# as `swlstm eval` does).
#   bash tools/check_export.sh [CKPT] [DATA]
# Environment: PYTHON (python3), SWLSTM (./swlstm), SPLIT (test), DEVICE (cpu; cuda runs both
# `swlstm eval` and PyTorch on the GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
BIN=${SWLSTM:-./swlstm}
SPLIT=${SPLIT:-test}
DEVICE=${DEVICE:-cpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=${2:-$(bash data/get_corpus.sh)}
declare -A extra=([lstm]="--layer_norm true" [mlstm]="--cell mlstm --depth 3 --ema 0.99")

# check NAME CKPT: export CKPT, evaluate it both ways, compare.
check() {
    "$BIN" export "$2" --out "$work/$1.safetensors" > /dev/null
    c=$("$BIN" eval "$2" --data "$data" --split "$SPLIT" --max-bytes 30000 --device "$DEVICE" --precision fp32 --protocol stripes --json)
    t=$("$PY" tools/swlstm_torch.py "$work/$1.safetensors" --data "$data" --split "$SPLIT" --max-bytes 30000 --device "$DEVICE" --json)
    echo "$1: swlstm eval $c; swlstm_torch $t"
    "$PY" - "$1" "$c" "$t" <<'PYEOF'
import json, sys
name, (c, t) = sys.argv[1], (json.loads(s) for s in sys.argv[2:4])
diff = abs(c["bpc"] - t["bpc"])
ok = diff <= 1e-4 and c["bytes"] == t["bytes"]
print(f"check_export {name}: |bpc difference| = {diff:.2e} over {c['bytes']} bytes: {'OK' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
PYEOF
}

if [ -n "${1:-}" ]; then check model "$1"; exit; fi
for cell in lstm mlstm; do
    # shellcheck disable=SC2086  # extra options split into words on purpose
    "$BIN" train configs/tiny.cfg --data "$data" --out_dir "$work/$cell" --device cpu --hidden_size 64 \
        --block_size 8 --num_layers 2 --sparsity ba_2 --batch_size 8 --seq_length 32 ${extra[$cell]} \
        --max_steps 150 --warmup_steps 0 --eval_every 0 --log_every 0 > "$work/$cell.log"
    check "$cell" "$work/$cell/latest.ckpt"
done
