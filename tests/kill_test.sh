#!/usr/bin/env bash
# Kills `swlstm train` (tiny CPU config, a checkpoint every step) at random moments with
# SIGKILL, SIGTERM or SIGINT, RUNS times. After each kill: latest.ckpt, if any, must load
# (`swlstm info`) and `--resume` must continue from its step. Usage: kill_test.sh BIN RUNS [SEED]
set -u
bin=$1 runs=$2
RANDOM=${3:-12345}
work=$(mktemp -d /tmp/swlstm-kill-XXXXXX)
trap 'rm -rf "$work"' EXIT
cat src/*/*.c > "$work/corpus.txt"   # ~400 kB of text, always present
cat > "$work/kill.cfg" <<CFG
data = $work/corpus.txt
out_dir = $work/run
hidden_size = 32
embed_size = 8
block_size = 8
sparsity = ba_1
batch_size = 4
seq_length = 16
max_steps = 1000000
lr_schedule = constant
log_every = 0
eval_every = 0
save_every = 1
threads = 1
CFG
sigs=(KILL TERM INT)
declare -A count=([KILL]=0 [TERM]=0 [INT]=0)
fail=0 no_ckpt=0 resumed=0 stale=0
for ((i = 1; i <= runs; i++)); do
    rm -rf "$work/run"
    sig=${sigs[RANDOM % 3]}
    delay=$(printf '0.%03d' $((RANDOM % 1000)))   # 0 to 1 s: start-up, steps and saves
    # A background job of a script starts with SIGINT ignored: restore it, as a terminal would.
    env --default-signal=INT "$bin" train "$work/kill.cfg" >"$work/out" 2>&1 &
    pid=$!
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    { for ((t = 0; t < 600; t++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; } 2>/dev/null
    if kill -0 "$pid" 2>/dev/null; then
        echo "run $i: still running 60 s after SIG$sig"; kill -9 "$pid"; wait "$pid" 2>/dev/null; fail=$((fail + 1)); continue
    fi
    { wait "$pid"; } 2>/dev/null; rc=$?
    count[$sig]=$((count[$sig] + 1))
    # SIGTERM/SIGINT: a clean stop (a checkpoint, then the shell's status 128 + the signal, as
    # death by the signal before the handler was installed gives); 0 if the run ended first.
    clean=0; grep -q "^stopped by a signal at step" "$work/out" && clean=1
    if [ "$sig" != KILL ] && { [ $clean = 1 ] && [ $rc -ne $((128 + $(kill -l "$sig"))) ] ||
                               [ $clean = 0 ] && [ $rc -ne 0 ] && [ $rc -ne $((128 + $(kill -l "$sig"))) ]; }; then
        echo "run $i: SIG$sig gave exit $rc"; cat "$work/out"; fail=$((fail + 1)); continue
    fi
    ckpt=$work/run/latest.ckpt
    if [ ! -e "$ckpt" ]; then
        if [ $clean = 1 ]; then echo "run $i: clean stop without a checkpoint"; fail=$((fail + 1)); fi
        no_ckpt=$((no_ckpt + 1)); continue
    fi
    if ! info=$("$bin" info "$ckpt" 2>&1); then echo "run $i (SIG$sig after ${delay}s): $info"; fail=$((fail + 1)); continue; fi
    step=$(sed -n 's/^training state: step \([0-9]*\),.*/\1/p' <<<"$info")
    stale=$((stale + $(ls "$work/run" | grep -c '\.tmp\.')))
    if [ $clean = 1 ] && ! grep -q "stopped by a signal at step $step;" "$work/out"; then
        echo "run $i: clean stop, but latest.ckpt is not at the step it reported (step $step):"; tail -n 2 "$work/out"
        fail=$((fail + 1)); continue
    fi
    if ! out=$("$bin" train "$work/kill.cfg" --resume "$ckpt" --stop-after $((step + 2)) 2>&1) ||
       ! grep -q "resumed from $ckpt at step $step\$" <<<"$out"; then
        echo "run $i (SIG$sig after ${delay}s): resume from step $step failed:"; echo "$out" | tail -n 3; fail=$((fail + 1)); continue
    fi
    if ! "$bin" info "$ckpt" 2>&1 | grep -q "^training state: step $((step + 2)),"; then
        echo "run $i: the resumed run did not reach step $((step + 2))"; fail=$((fail + 1)); continue
    fi
    resumed=$((resumed + 1))
done
echo "kill test: $runs runs (SIGKILL ${count[KILL]}, SIGTERM ${count[TERM]}, SIGINT ${count[INT]}):" \
     "$resumed loaded and resumed, $no_ckpt killed before the first checkpoint, $fail failed" \
     "($stale stale temporary files left by kills during a save)"
[ $fail -eq 0 ]
