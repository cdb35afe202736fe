#!/usr/bin/env bash
# mask_runs.sh: issue 34's quality runs for docs/QUALITY.md ("Learned masks"), on one GPU.
#   prune: a dense H=2048 LSTM and the small-world mLSTM (configs/mlstm_smallworld.cfg) trained
#          (LSTM_STEPS, STEPS), then fine-tuned from their checkpoints (`init_from`) for 10 % more
#          steps on a fresh schedule (peak FT_LR, warm-up 5 %, cosine to 1e-5, ema 0.99): unpruned
#          (the control), pruned once before (`swlstm prune`, "once") and pruned gradually over
#          the first half (prune_to, "gradual"), to each of DENSITIES of their blocks; valid and
#          test bpc against the trained model.
#   intrain: the same models trained from scratch for as many steps while pruned gradually to each
#          of DENSITIES (prune_to, from 10 % to 75 % of the steps, every 2.5 %); their rows join
#          prune's table ("in training").
#   learn: the mLSTM with mask_update = set and rigl for STEPS steps against the static mask
#          (trained here for STATIC_STEPS, default STEPS, unless OUT/mlstm exists): bpc, time a
#          step with the updates and after them, each update's time, and the learned gates'
#          mask's small-world statistics (`swlstm mask --ckpt`) beside the drawn and a random one.
# Parts run in the order given (default: prune learn; `tables` prints both tables again); each prints
# its markdown table and leaves logs, evals (*.json) and tables under OUT. Environment: OUT (default
# checkpoints/mask_runs), DATA (default: the configs' GCIDE path), SWLSTM (default ./swlstm),
# STEPS (mLSTM, default 2000), LSTM_STEPS (default 2000), DENSITIES (default "0.5 0.25 0.1"),
# MODELS (what prune runs, default "lstm mlstm"), FT_LR (default 5e-4).
set -euo pipefail
OUT=${OUT:-checkpoints/mask_runs}
BIN=${SWLSTM:-./swlstm}
STEPS=${STEPS:-2000}
LSTM_STEPS=${LSTM_STEPS:-2000}
DENSITIES=${DENSITIES:-"0.5 0.25 0.1"}
MODELS=${MODELS:-"lstm mlstm"}
FT_LR=${FT_LR:-5e-4}
data=() evdata=()
if [ -n "${DATA:-}" ]; then data=(--data="$DATA"); evdata=(--data "$DATA"); fi
mkdir -p "$OUT"

declare -A cfg=(
    [lstm]="configs/mlstm_dense.cfg --cell=lstm --init=uniform --hidden_size=2048"
    [mlstm]="configs/mlstm_smallworld.cfg"
)
declare -A steps=([lstm]=$LSTM_STEPS [mlstm]=$STEPS)

# train NAME STEPS [ARGS...]: a run of NAME's config into OUT/RUN (RUN = NAME, or ARGS' --out_dir); a rerun replaces it
train() {
    local name=$1 run=$2 n=$3; shift 3
    # shellcheck disable=SC2086
    "$BIN" train ${cfg[$name]} "${data[@]}" --max_steps="$n" --out_dir="$OUT/$run" --overwrite "$@" | tee "$OUT/$run.train.txt"
}

# evaluate CKPT TAG [SPLITS]: OUT/TAG.SPLIT.json (the moving average's weights; stripes, as
# docs/QUALITY.md's figures)
evaluate() {
    local ck=$1 tag=$2 splits=${3:-"valid test"}
    for s in $splits; do "$BIN" eval "$ck" --split "$s" "${evdata[@]}" --protocol stripes --json > "$OUT/$tag.$s.json"; done
}

# tune NAME RUN N [ARGS...]: N steps of fine-tuning on a fresh schedule into OUT/RUN, then its bpc
tune() {
    local name=$1 run=$2 n=$3; shift 3
    train "$name" "$run" "$n" --learning_rate="$FT_LR" --warmup_steps=$((n / 20)) --min_lr=1e-5 --ema=0.99 \
        --eval_every=0 "$@"
    evaluate "$OUT/$run/latest.ckpt" "$run"
    rm -f "$OUT/$run"/*.ckpt
}

prune_part() {
    for name in $MODELS; do
        local n=${steps[$name]} ck=$OUT/$name/latest.ckpt
        local f=$((n / 10))
        [ -f "$ck" ] || train "$name" "$name" "$n"
        [ -f "$OUT/$name.test.json" ] || evaluate "$ck" "$name"
        tune "$name" "$name.ft" "$f" --init_from="$ck"
        for d in $DENSITIES; do
            "$BIN" prune "$ck" --density "$d" --out "$OUT/$name.p$d.ckpt" | tee "$OUT/$name.once$d.prune.txt"
            tune "$name" "$name.once$d" "$f" --init_from="$OUT/$name.p$d.ckpt"
            rm -f "$OUT/$name.p$d.ckpt"
            tune "$name" "$name.gradual$d" "$f" --init_from="$ck" --prune_to="$d" --prune_start=0 \
                --prune_end=$((f / 2)) --prune_every=$((f / 32 > 0 ? f / 32 : 1))
        done
    done
    prune_table
}

intrain_part() {
    for name in $MODELS; do
        local n=${steps[$name]}
        for d in $DENSITIES; do
            train "$name" "$name.intrain$d" "$n" --prune_to="$d" --prune_start=$((n / 10)) \
                --prune_end=$((n * 3 / 4)) --prune_every=$((n / 40))
            evaluate "$OUT/$name.intrain$d/latest.ckpt" "$name.intrain$d"
            rm -f "$OUT/$name.intrain$d"/*.ckpt
        done
    done
    prune_table
}

learn_part() {
    local n=$STEPS s=${STATIC_STEPS:-$STEPS}
    if [ ! -f "$OUT/mlstm/log.jsonl" ]; then
        train mlstm mlstm "$s"
        [ "$s" = "$n" ] && evaluate "$OUT/mlstm/latest.ckpt" mlstm
    fi
    for u in set rigl; do
        train mlstm "mlstm.$u" "$n" --mask_update="$u"
        evaluate "$OUT/mlstm.$u/latest.ckpt" "mlstm.$u"
        "$BIN" mask --ckpt "$OUT/mlstm.$u/latest.ckpt" --json > "$OUT/mlstm.$u.mask.json"
        rm -f "$OUT/mlstm.$u"/*.ckpt
    done
    "$BIN" mask --hidden 8192 --block 32 --sparsity ba_7 --depth 4 --json > "$OUT/ba_7.mask.json"
    learn_table
}

prune_table() {
    python3 - "$OUT" "$MODELS" "$DENSITIES" <<'PY' | tee "$OUT/prune_table.md"
import json, os, re, sys
out, models, dens = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
bpc = lambda tag, s: json.load(open(f"{out}/{tag}.{s}.json"))["bpc"] if os.path.exists(f"{out}/{tag}.{s}.json") else None
def params(run):  # after its last pruning, if any
    txt = "".join(open(f"{out}/{f}").read() for f in (f"{run}.prune.txt", f"{run}.train.txt") if os.path.exists(f"{out}/{f}"))
    p = re.findall(r"pruned to .* ([0-9]+) parameters", txt) or re.findall(r"parameters: [0-9]+ -> ([0-9]+)", txt)
    return int(p[-1]) if p else [json.loads(l) for l in open(f"{out}/{run}/log.jsonl")][0]["params"]
cell = lambda v, ref: f"{v:.4f} ({v - ref:+.3f})" if v is not None else "-"
print("| model | blocks kept | parameters | pruning | valid bpc (vs trained) | test bpc (vs trained) |")
print("|---|---|---|---|---|---|")
for name in models:
    if bpc(name, "test") is None:
        print(f"mask_runs.sh: no trained {name} under {out} to compare with (the prune part trains it)", file=sys.stderr)
        continue
    v0, t0 = bpc(name, "valid"), bpc(name, "test")
    print(f"| {name} | 1 | {params(name) / 1e6:.2f}M | none (the trained model) | {v0:.4f} | {t0:.4f} |")
    for d, how in [("1", "ft")] + [(d, h) for d in dens for h in ("once", "gradual", "intrain")]:
        run = f"{name}.{how}" if how == "ft" else f"{name}.{how}{d}"
        if not os.path.exists(f"{out}/{run}.train.txt"): continue
        what = {"ft": "none, fine-tuned", "once": "once, fine-tuned", "gradual": "gradually while fine-tuned", "intrain": "gradually in training"}[how]
        print(f"| {name} | {d} | {params(run) / 1e6:.2f}M | {what} | {cell(bpc(run, 'valid'), v0)} | {cell(bpc(run, 'test'), t0)} |")
PY
}

learn_table() {
    python3 - "$OUT" <<'PY' | tee "$OUT/learn_table.md"
import json, os, re, statistics, sys
out = sys.argv[1]
bpc = lambda tag, s: f"{json.load(open(f'{out}/{tag}.{s}.json'))['bpc']:.4f}" if os.path.exists(f"{out}/{tag}.{s}.json") else "-"
steps = lambda run: {e["step"]: e["ms"] for e in map(json.loads, open(f"{out}/{run}/log.jsonl")) if e["type"] == "step"}
updates = lambda run: [tuple(map(float, u)) for u in re.findall(r"mask update .* in ([0-9.]+) s \(scores ([0-9.]+) s\)", open(f"{out}/{run}.train.txt").read())]
reach = lambda r: "/".join(f"{100 * x:.1f}" for x in r)
ref, st = json.load(open(f"{out}/ba_7.mask.json")), steps("mlstm")
base = statistics.mean(v for k, v in st.items() if k > 1)  # ms a step, static
print("| mask | valid bpc | test bpc | ms a step (mean, updates in) | vs static | per update (scores) | ms a step after the last update (median) | gates' mask: avg path | clustering | reach 1..4 internal steps |")
print("|---|---|---|---|---|---|---|---|---|---|")
print(f"| static ba_7 | {bpc('mlstm', 'valid')} | {bpc('mlstm', 'test')} | {base:.1f} | - | - | {statistics.median(v for k, v in st.items() if k > 1):.1f} "
      f"| {ref['mask']['avg_path']:.3f} | {ref['mask']['clustering']:.3f} | {reach(ref['reach'])} |")
for u in ("set", "rigl"):
    m, t, up = json.load(open(f"{out}/mlstm.{u}.mask.json")), steps(f"mlstm.{u}"), updates(f"mlstm.{u}")
    mean, last = statistics.mean(v for k, v in t.items() if k > 1), max(k for k in t if k % 100 == 0 and k < 0.75 * max(t))
    print(f"| {u} | {bpc('mlstm.' + u, 'valid')} | {bpc('mlstm.' + u, 'test')} | {mean:.1f} | {100 * (mean / base - 1):+.1f} % "
          f"| {statistics.mean(x[0] for x in up):.2f} s ({statistics.mean(x[1] for x in up):.2f} s) | {statistics.median(v for k, v in t.items() if k > last + 2):.1f} "
          f"| {m['mask']['avg_path']:.3f} | {m['mask']['clustering']:.3f} | {reach(m['reach'])} |")
r = ref["random"]
print(f"| (random, {r['blocks']} blocks) | | | | | | | {r['avg_path']:.3f} | {r['clustering']:.3f} | {reach(ref['random_reach'])} |")
PY
}

for part in "${@:-prune learn}"; do
    for p in $part; do
        case $p in
            prune) prune_part ;;
            intrain) intrain_part ;;
            learn) learn_part ;;
            tables) prune_table; learn_table ;;
            *) echo "mask_runs.sh: unknown part '$p' (prune, intrain, learn, tables)" >&2; exit 2 ;;
        esac
    done
done
