#!/usr/bin/env bash
# Runs each fuzz target for SECONDS under nice, one at a time, on its seeds in
# tests/fuzz/<target>/ plus its growing corpus in build/fuzz/corpus/<target>/.
# Prints libFuzzer's final line per target; exits non-zero if any target crashed.
# Extra libFuzzer flags: FUZZ_FLAGS="-runs=1000000" bash tests/fuzz/run.sh 0 fuzz_npy
set -u
secs=$1; shift
status=0
for t in "$@"; do
    name=${t#fuzz_}
    corpus=build/fuzz/corpus/$name art=build/fuzz/artifacts/$name/ log=build/fuzz/$name.log
    mkdir -p "$corpus" "$art"
    limit=(); [ "$secs" -gt 0 ] && limit=(-max_total_time="$secs")
    nice -n 19 build/fuzz/"$t" "${limit[@]}" -close_fd_mask=3 -detect_leaks=0 -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$art" ${FUZZ_FLAGS:-} "$corpus" tests/fuzz/"$name" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    echo "$name: rc $rc, $runs executions; $last"
    if [ $rc -ne 0 ]; then status=1; grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -n 5; fi
done
exit $status
