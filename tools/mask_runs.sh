#!/usr/bin/env bash
# mask_runs.sh: issue 34's quality runs for docs/QUALITY.md ("Learned masks"), on one GPU.
#   prune: a dense H=2048 LSTM and the small-world mLSTM (configs/mlstm_smallworld.cfg) trained,
#          pruned to each of DENSITIES of their blocks (`swlstm prune`) and fine-tuned for 10 % of
#          their steps (`--resume`: the cosine schedule goes on near min_lr, Adam's moments kept;
#          ema 0.99); valid bpc before and after, test bpc after.
#   learn: the mLSTM with mask_update = set and rigl for STEPS steps against the static mask of
#          `prune` (or a static run here when that is missing), its masks' small-world
#          statistics (`swlstm mask --ckpt`), and the training time with the updates.
# Parts run in the order given (default: prune learn); each prints its markdown table and
# leaves logs, evals (*.json) and tables under OUT. Environment: OUT (default
# checkpoints/mask_runs), DATA (default: the configs' GCIDE path), SWLSTM (default ./swlstm),
# STEPS (mLSTM, default 2000), LSTM_STEPS (default 2000), DENSITIES (default "0.5 0.25 0.1").
set -euo pipefail
OUT=${OUT:-checkpoints/mask_runs}
BIN=${SWLSTM:-./swlstm}
STEPS=${STEPS:-2000}
LSTM_STEPS=${LSTM_STEPS:-2000}
DENSITIES=${DENSITIES:-"0.5 0.25 0.1"}
data=() evdata=()
if [ -n "${DATA:-}" ]; then data=(--data="$DATA"); evdata=(--data "$DATA"); fi
mkdir -p "$OUT"

declare -A cfg=(
    [lstm]="configs/mlstm_dense.cfg --cell=lstm --init=uniform --hidden_size=2048"
    [mlstm]="configs/mlstm_smallworld.cfg"
)
declare -A steps=([lstm]=$LSTM_STEPS [mlstm]=$STEPS)

# train NAME STEPS [ARGS...]: a run of NAME's config into OUT/RUN (RUN = NAME, or ARGS' --out_dir)
train() {
    local name=$1 run=$2 n=$3; shift 3
    # shellcheck disable=SC2086
    "$BIN" train ${cfg[$name]} "${data[@]}" --max_steps="$n" --out_dir="$OUT/$run" "$@" | tee "$OUT/$run.train.txt"
}

# evaluate CKPT TAG [SPLITS]: OUT/TAG.SPLIT.json (the moving average's weights)
evaluate() {
    local ck=$1 tag=$2 splits=${3:-"valid test"}
    for s in $splits; do "$BIN" eval "$ck" --split "$s" "${evdata[@]}" --json > "$OUT/$tag.$s.json"; done
}

prune_part() {
    for name in lstm mlstm; do
        local n=${steps[$name]}
        [ -f "$OUT/$name/latest.ckpt" ] || train "$name" "$name" "$n"
        evaluate "$OUT/$name/latest.ckpt" "$name"
        for d in $DENSITIES; do
            local p="$name.p$d"
            # A density below one block per block row and column is refused: the table says so.
            "$BIN" prune "$OUT/$name/latest.ckpt" --density "$d" --out "$OUT/$p.ckpt" 2>&1 | tee "$OUT/$p.prune.txt" || true
            [ -f "$OUT/$p.ckpt" ] || continue
            evaluate "$OUT/$p.ckpt" "$p.before" valid
            # ema 0.99: the average of the fine-tuning's weights, not mostly of the unpruned run's
            # shellcheck disable=SC2086
            "$BIN" train ${cfg[$name]} "${data[@]}" --max_steps=$((n + n / 10)) --ema=0.99 --out_dir="$OUT/$p" \
                --resume "$OUT/$p.ckpt" | tee "$OUT/$p.train.txt"
            evaluate "$OUT/$p/latest.ckpt" "$p"
            rm -f "$OUT/$p.ckpt" "$OUT/$p"/*.ckpt
        done
    done
    python3 - "$OUT" "$DENSITIES" <<'PY' | tee "$OUT/prune_table.md"
import json, os, sys
out, dens = sys.argv[1], sys.argv[2].split()
bpc = lambda tag, s: json.load(open(f"{out}/{tag}.{s}.json"))["bpc"]
params = lambda run: [json.loads(l) for l in open(f"{out}/{run}/log.jsonl")][0]["params"]
print("| model | density | parameters | valid bpc, pruned | valid bpc, fine-tuned | test bpc | valid vs unpruned |")
print("|---|---|---|---|---|---|---|")
for name in ("lstm", "mlstm"):
    print(f"| {name} | 1 | {params(name) / 1e6:.2f}M | - | {bpc(name, 'valid'):.4f} | {bpc(name, 'test'):.4f} | - |")
    for d in dens:
        p = f"{name}.p{d}"
        if not os.path.exists(f"{out}/{p}.test.json"):
            why = open(f"{out}/{p}.prune.txt").read().strip().splitlines()[-1]
            print(f"| {name} | {d} | - | - | - | - | {why} |")
            continue
        print(f"| {name} | {d} | {params(p) / 1e6:.2f}M | {bpc(p + '.before', 'valid'):.4f} | {bpc(p, 'valid'):.4f} "
              f"| {bpc(p, 'test'):.4f} | {bpc(p, 'valid') - bpc(name, 'valid'):+.4f} |")
PY
}

learn_part() {
    local n=$STEPS
    [ -f "$OUT/mlstm/log.jsonl" ] || { train mlstm mlstm "$n"; evaluate "$OUT/mlstm/latest.ckpt" mlstm; }
    for u in set rigl; do
        train mlstm "mlstm.$u" "$n" --mask_update="$u"
        evaluate "$OUT/mlstm.$u/latest.ckpt" "mlstm.$u"
        "$BIN" mask --ckpt "$OUT/mlstm.$u/latest.ckpt" --json > "$OUT/mlstm.$u.mask.json"
    done
    "$BIN" mask --hidden 8192 --block 32 --sparsity ba_7 --depth 4 --json > "$OUT/ba_7.mask.json"
    python3 - "$OUT" <<'PY' | tee "$OUT/learn_table.md"
import json, sys
out = sys.argv[1]
bpc = lambda tag, s: json.load(open(f"{out}/{tag}.{s}.json"))["bpc"]
def train_s(run):  # the steps' time, mask updates included, past step 1's warm-up
    return sum(e["ms"] for e in map(json.loads, open(f"{out}/{run}/log.jsonl")) if e["type"] == "step" and e["step"] > 1) / 1e3
ref = json.load(open(f"{out}/ba_7.mask.json"))
t0 = train_s("mlstm")
print("| mask | valid bpc | test bpc | steps' time | vs static | gates' mask: avg path | clustering | reach 1..4 internal steps |")
print("|---|---|---|---|---|---|---|---|")
print(f"| static ba_7 | {bpc('mlstm', 'valid'):.4f} | {bpc('mlstm', 'test'):.4f} | {t0:.1f} s | - "
      f"| {ref['mask']['avg_path']:.3f} | {ref['mask']['clustering']:.3f} | {'/'.join(f'{100 * x:.1f}' for x in ref['reach'])} |")
for u in ("set", "rigl"):
    m = json.load(open(f"{out}/mlstm.{u}.mask.json"))
    t = train_s(f"mlstm.{u}")
    print(f"| {u} | {bpc('mlstm.' + u, 'valid'):.4f} | {bpc('mlstm.' + u, 'test'):.4f} | {t:.1f} s | {100 * (t / t0 - 1):+.1f} % "
          f"| {m['mask']['avg_path']:.3f} | {m['mask']['clustering']:.3f} | {'/'.join(f'{100 * x:.1f}' for x in m['reach'])} |")
r = ref["random"]
print(f"| (random, {r['blocks']} blocks) | - | - | - | - | {r['avg_path']:.3f} | {r['clustering']:.3f} | {'/'.join(f'{100 * x:.1f}' for x in ref['random_reach'])} |")
PY
}

for part in "${@:-prune learn}"; do
    for p in $part; do
        case $p in
            prune) prune_part ;;
            learn) learn_part ;;
            *) echo "mask_runs.sh: unknown part '$p' (prune, learn)" >&2; exit 2 ;;
        esac
    done
done
