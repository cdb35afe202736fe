#!/usr/bin/env bash
# bench_dist.sh: data-parallel throughput of `swlstm train` on 1 and 2 GPUs of this machine
# for configs/enwik8_lstm_dense.cfg (H=2048) and configs/enwik8_lstm_smallworld.cfg (H=8192 ba_8), in
# chars/s (median over the timed steps), with the scaling efficiency against 1 GPU:
#   weak:   2 GPUs x 128 rows  vs 2 x (1 GPU x 128 rows)   (the per-GPU batch kept)
#   strong: 2 GPUs x 64 rows   vs 2 x (1 GPU x 128 rows)   (the global batch kept)
#   comm:   2 GPUs x 64 rows   vs 2 x (1 GPU x 64 rows)    (what the all-reduce costs)
# usage: tools/bench_dist.sh [DATA]   (DATA: any corpus; default data/enwik8, else Tiny Shakespeare)
set -euo pipefail
BIN=${SWLSTM_BIN:-./swlstm}
STEPS=${STEPS:-40}   # steps per run; the first WARM are not timed
WARM=${WARM:-10}
DATA=${1:-}
if [ -z "$DATA" ]; then
    DATA=data/enwik8
    [ -f "$DATA" ] || DATA=data/corpus.txt
fi
[ -f "$DATA" ] || { echo "bench_dist: corpus '$DATA' not found (pass one as the argument)" >&2; exit 1; }
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -ge 2 ] || { echo "bench_dist: needs 2 GPUs, this machine shows $ngpu" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median chars/s of the timed steps of one run: CONFIG PRECISION GPUS BATCH [--key=value ...]
# (PROCS=2 in the environment: two processes of one GPU each, joined over TCP, in place of threads)
rate() {
    local d="$tmp/run$RANDOM" cfg=$1 prec=$2 gpus=$3 batch=$4
    shift 4
    local args=(train "$cfg" --precision="$prec" --data="$DATA" --split=0.9,0.05,0.05 --out_dir="$d" --batch_size="$batch"
                --max_steps="$STEPS" --warmup_steps=0 --eval_every=0 --log_every=0 "$@")
    if [ "${PROCS:-1}" = 2 ]; then
        export SWLSTM_WORLD_SIZE=2 SWLSTM_DIST_INIT=tcp://127.0.0.1:$((20000 + RANDOM % 20000))
        SWLSTM_RANK=1 "$BIN" "${args[@]}" >"$d.out1" 2>&1 &
        SWLSTM_RANK=0 "$BIN" "${args[@]}" >"$d.out" 2>&1 && wait $! || { cat "$d.out"* >&2; exit 1; }
        unset SWLSTM_WORLD_SIZE SWLSTM_DIST_INIT
    else
        "$BIN" "${args[@]}" --gpus="$gpus" >"$d.out" 2>&1 || { cat "$d.out" >&2; exit 1; }
    fi
    grep '"type":"step"' "$d/log.jsonl" |
        sed 's/.*"step":\([0-9]*\).*"chars_per_sec":\([0-9.]*\).*/\1 \2/' |
        awk -v w="$WARM" '$1 > w {print $2}' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f%%", 100 * a / (2 * b)}'; }
k() { awk -v a="$1" 'BEGIN {printf "%.0fk", a / 1000}'; }

echo "data-parallel throughput, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x2, $(date -u +%F), T=128, $STEPS steps ($WARM untimed)"
printf "%-22s %10s %10s %12s %12s %10s %10s %10s\n" model "1GPU B64" "1GPU B128" "2GPU B2x64" "2GPU B2x128" weak strong comm
for cfg in configs/enwik8_lstm_dense.cfg configs/enwik8_lstm_smallworld.cfg; do
    for prec in bf16 fp32; do
        r1s=$(rate "$cfg" "$prec" 1 64)
        r1=$(rate "$cfg" "$prec" 1 128)
        r2s=$(rate "$cfg" "$prec" 2 128)
        r2=$(rate "$cfg" "$prec" 2 256)
        printf "%-22s %10s %10s %12s %12s %10s %10s %10s\n" "$(basename "$cfg" .cfg) $prec" "$(k "$r1s")" "$(k "$r1")" \
            "$(k "$r2s")" "$(k "$r2")" "$(pct "$r2" "$r1")" "$(pct "$r2s" "$r1")" "$(pct "$r2s" "$r1s")"
    done
done

echo
echo "launch and overlap, bf16, 2 GPUs x 128 rows (chars/s):"
sw=configs/enwik8_lstm_smallworld.cfg
printf "  %-58s %8s\n" "small-world, gpus = 2 (one process, threads)" "$(k "$(rate $sw bf16 2 256)")"
printf "  %-58s %8s\n" "small-world, 2 processes (TCP id exchange)" "$(k "$(PROCS=2 rate $sw bf16 1 256)")"
dense2="configs/enwik8_lstm_dense.cfg"
printf "  %-58s %8s\n" "dense 2 layers, 1 GPU x 128 rows" "$(k "$(rate $dense2 bf16 1 128 --num_layers=2)")"
printf "  %-58s %8s\n" "dense 2 layers, buckets of 25 MiB started during backward" "$(k "$(rate $dense2 bf16 2 256 --num_layers=2)")"
printf "  %-58s %8s\n" "dense 2 layers, one bucket after backward (no overlap)" "$(k "$(rate $dense2 bf16 2 256 --num_layers=2 --dist_bucket_mb=100000)")"
