#!/usr/bin/env bash
# readme_commands.sh: runs every command block of README.md, in order, in the folder that holds
# it (CI runs it in its fresh clone), so that the README stays true.
#
#   bash tests/readme_commands.sh [--list] [--block-seconds N] [README]
#
# A fenced block of sh (or bash) runs as one bash script with `set -e`, stdin from /dev/null:
# its lines one command each (a trailing backslash continues a line; `#` lines are comments),
# each printed before it runs; the block fails at its first failing command, or after
# --block-seconds (default 600). A ```python block runs as one python3 script, its lines
# printed first. A block that cannot run on a 2-core machine without a GPU or the internet, or
# would take hours, says why on the line before its fence:
#   <!-- readme_commands: skip: REASON -->
# and is listed as skipped with that reason. Any other block without the marker (```text,
# say) is an error, so a new block runs unless the README says why not.
#
# Budgets: a command that starts as a pattern of the table below gets its options appended
# (before its trailing comment). They keep each command's work and only shorten it: fewer
# training steps, fewer bytes scored. The command printed is the one run.
#
# python3 is /usr/bin/python3 where that exists (Debian's, where the README's apt-get packages
# install), whatever python3 comes first on PATH.
#
# --list prints each block and its commands as they would run, and runs none. The last line
# says how many blocks ran (their names), were skipped (names and reasons) and failed; the exit
# status is 1 if any failed, 2 for a bad option or README.
set -uo pipefail

budget_pattern=(
    '^bash data/quickstart\.sh'
    '^\./swlstm train [^-].*--resume'
    '^\./swlstm train [^-]'
    '^\./swlstm eval .*--dyn-tune'
    '^\./swlstm eval .*--dynamic'
    '^\./swlstm eval '
    '^python3 tools/swlstm_torch\.py '
)
budget_options=(
    '--max_steps=50'                                        # options for swlstm train
    '--max_steps=100'                                       # resumes the run above at step 50
    '--max_steps=50'
    '--max-bytes=2000 --dyn-stats=8192 --tune-bytes=1000'
    '--max-bytes=4000 --dyn-stats=8192'
    '--max-bytes=16384'
    '--max-bytes=16384'
)

list=0 block_seconds=600 readme=""
while [ $# -gt 0 ]; do
    case $1 in
        --list) list=1 ;;
        --block-seconds) block_seconds=${2:?--block-seconds needs a value}; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "readme_commands: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) readme=$1 ;;
    esac
    shift
done
[ -n "$readme" ] || readme="$(cd "$(dirname "$0")/.." && pwd)/README.md"
[ -f "$readme" ] || { echo "readme_commands: no file '$readme'" >&2; exit 2; }
dir=$(cd "$(dirname "$readme")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Cuts README into blocks: $work/N.meta holds "LINE<TAB>LANG<TAB>HEADING<TAB>SKIP REASON" and
# $work/N.txt the block's lines.
awk -v out="$work" '
    /^#+ / && !infence { heading = $0; sub(/^#+ +/, "", heading) }
    /^[ \t]*```/ {
        if (!infence) {
            infence = 1; openline = NR; n++; lang = $0; sub(/^[ \t]*```/, "", lang); sub(/[ \t].*/, "", lang)
            printf "%d\t%s\t%s\t%s\n", NR, lang, heading, skip > (out "/" n ".meta")
            printf "" > (out "/" n ".txt")
            skip = ""; next
        }
        infence = 0; next
    }
    infence { print > (out "/" n ".txt"); next }
    /^<!-- readme_commands: skip: .* -->[ \t]*$/ {
        skip = $0; sub(/^<!-- readme_commands: skip: /, "", skip); sub(/ -->[ \t]*$/, "", skip); next
    }
    /[^ \t]/ { skip = "" }
    END { if (infence) { print "readme_commands: a block opened at line " openline " never closes" > "/dev/stderr"; exit 1 } }
' "$readme" || exit 2

# The command with its budget: options go before a trailing comment (a '#' after a blank,
# outside quotes).
with_budget() {
    local cmd=$1 body=$1 comment="" q="" i c
    for ((i = 0; i < ${#cmd}; i++)); do
        c=${cmd:i:1}
        if [ -n "$q" ]; then [ "$c" = "$q" ] && q=""
        elif [ "$c" = "'" ] || [ "$c" = '"' ]; then q=$c
        elif [ "$c" = "#" ] && [ "$i" -gt 0 ] && [[ ${cmd:i-1:1} == [[:space:]] ]]; then
            body=${cmd:0:i}; comment=${cmd:i}; break
        fi
    done
    body=${body%"${body##*[![:space:]]}"}
    for i in "${!budget_pattern[@]}"; do
        if [[ $body =~ ${budget_pattern[i]} ]]; then body="$body ${budget_options[i]}"; break; fi
    done
    printf '%s' "$body${comment:+   $comment}"
}

# Writes block N's script: each command, joined across continuations, printed then run.
block_script() {
    local line cmd=""
    echo "set -e"
    while IFS= read -r line || [ -n "$line" ]; do
        [ -n "$cmd" ] && [[ $line == [[:space:]]* ]] && line=" ${line#"${line%%[![:space:]]*}"}"  # one blank for the indent
        if [[ $line == *\\ ]]; then cmd+="${line%\\}"; continue; fi
        cmd+=$line
        if [[ $cmd =~ ^[[:space:]]*(#|$) ]]; then cmd=""; continue; fi
        cmd=$(with_budget "$cmd")
        printf 'printf "%%s\\n" %q >"$STATE"\n' "$cmd"
        printf 'echo %q\n' "\$ $cmd"
        printf '%s\n' "$cmd"
        cmd=""
    done <"$work/$1.txt"
}

# Writes python block N's script: its lines printed, then the block run by python3.
python_script() {
    local line
    echo "set -e"
    printf 'printf "%%s\\n" %q >"$STATE"\n' "python3 (the block's $(grep -c '' "$work/$1.txt") lines)"
    while IFS= read -r line || [ -n "$line" ]; do printf 'echo %q\n' ">>> $line"; done <"$work/$1.txt"
    printf 'python3 %q\n' "$work/$1.txt"
}

if [ "$list" = 0 ] && [ -x /usr/bin/python3 ]; then
    mkdir "$work/bin" && ln -s /usr/bin/python3 "$work/bin/python3"
    export PATH="$work/bin:$PATH"
fi

ran=() skipped=() failed=()
nblocks=$(find "$work" -name '*.meta' | wc -l)
for ((n = 1; n <= nblocks; n++)); do
    IFS=$'\t' read -r line lang heading skip <"$work/$n.meta"
    name="${heading:-block $n}"
    # several blocks under one heading: the second is "HEADING #2"
    k=$(for ((j = 1; j < n; j++)); do cut -f3 "$work/$j.meta"; done | grep -cxF -- "$heading")
    [ "$k" -gt 0 ] && name="$name #$((k + 1))"
    where="$(basename "$readme"):$line"
    if [ -n "$skip" ]; then
        echo "== $name ($where): skipped: $skip"
        skipped+=("$name: $skip")
        continue
    fi
    case $lang in
        sh|bash) block_script "$n" >"$work/$n.sh" ;;
        python) python_script "$n" >"$work/$n.sh" ;;
        *) echo "== $name ($where): a \`\`\`${lang:-(no language)} block without a skip marker:" \
                "mark it <!-- readme_commands: skip: REASON --> or make it sh or python"
           failed+=("$name: not a shell or python block and no skip marker")
           continue ;;
    esac
    if [ "$list" = 1 ]; then
        echo "== $name ($where): runs"
        sed -n 's/^echo //p' "$work/$n.sh" | while IFS= read -r q; do eval "printf '  %s\n' $q"; done
        ran+=("$name")
        continue
    fi
    echo "== $name ($where)"
    t0=$(date +%s)
    (cd "$dir" && STATE="$work/state" timeout -k 10 "$block_seconds" bash "$work/$n.sh" </dev/null)
    rc=$?
    if [ "$rc" = 0 ]; then
        echo "== $name: ok ($(($(date +%s) - t0)) s)"
        ran+=("$name")
    else
        why="exit $rc"; [ "$rc" = 124 ] && why="still running after $block_seconds s"
        echo "== $name: FAILED ($why): $(cat "$work/state" 2>/dev/null)"
        failed+=("$name ($why): $(cat "$work/state" 2>/dev/null)")
    fi
done

# "N blocks run (A; B), M skipped (C: why), K failed", each list left out when empty
names() { local out="" x; for x in "$@"; do out+="${out:+; }$x"; done; printf '%s' "${out:+ ($out)}"; }
echo "readme_commands: ${#ran[@]} blocks $([ "$list" = 1 ] && echo would run || echo run)$(names "${ran[@]+"${ran[@]}"}")," \
     "${#skipped[@]} skipped$(names "${skipped[@]+"${skipped[@]}"}"), ${#failed[@]} failed$(names "${failed[@]+"${failed[@]}"}")"
[ ${#failed[@]} -eq 0 ]
