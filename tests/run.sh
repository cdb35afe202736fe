#!/usr/bin/env bash
# Runs each test binary given and prints one combined "N passed, N failed" line (and how
# many were skipped, for lack of a second GPU say).
# Exits non-zero if any binary failed or crashed.
set -u
total_pass=0; total_fail=0; total_skip=0; status=0
for bin in "$@"; do
    echo "== $bin"
    log=$(mktemp)
    "$bin" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}
    out=$(tail -n 1 "$log")
    skip=$(sed -n 's/^\([0-9]*\) skipped (listed above)$/\1/p' "$log"); rm -f "$log"
    total_skip=$((total_skip + ${skip:-0}))
    if [[ $out =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        total_pass=$((total_pass + BASH_REMATCH[1])); total_fail=$((total_fail + BASH_REMATCH[2]))
    else
        echo "$bin: crashed or printed no summary (exit $rc)"; total_fail=$((total_fail + 1))
    fi
    [ "$rc" -ne 0 ] && status=1
done
[ "$total_skip" -gt 0 ] && echo "$total_skip skipped"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && exit $status || exit 1
