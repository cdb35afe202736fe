#!/usr/bin/env bash
# check_export.sh: `swlstm export` + tools/swlstm_torch.py reproduce `swlstm eval` within 1e-4 bpc.
# Trains a small 2-layer small-world model with layer norm (sparse W_h and W_x) for a few
# steps, or takes CKPT, exports it, and compares the two bpc on the same bytes.
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
ckpt=${1:-}
if [ -z "$ckpt" ]; then
    "$BIN" train configs/tiny.cfg --data "$data" --out_dir "$work/run" --device cpu --hidden_size 64 \
        --block_size 8 --num_layers 2 --sparsity ba_2 --layer_norm true --batch_size 8 --seq_length 32 \
        --max_steps 150 --warmup_steps 0 --eval_every 0 --log_every 0 > "$work/train.log"
    ckpt=$work/run/latest.ckpt
fi
"$BIN" export "$ckpt" --out "$work/model.safetensors"
c=$("$BIN" eval "$ckpt" --data "$data" --split "$SPLIT" --max-bytes 30000 --device "$DEVICE" --precision fp32 --json)
t=$("$PY" tools/swlstm_torch.py "$work/model.safetensors" --data "$data" --split "$SPLIT" --max-bytes 30000 --device "$DEVICE" --json)
echo "swlstm eval:    $c"
echo "swlstm_torch:   $t"
"$PY" - "$c" "$t" <<'PYEOF'
import json, sys
c, t = (json.loads(s) for s in sys.argv[1:3])
diff = abs(c["bpc"] - t["bpc"])
ok = diff <= 1e-4 and c["bytes"] == t["bytes"]
print(f"check_export: |bpc difference| = {diff:.2e} over {c['bytes']} bytes: {'OK' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
PYEOF
