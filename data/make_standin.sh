#!/usr/bin/env bash
# make_standin.sh [--order mixed|sorted] [OUT]: builds a 100,000,000-byte stand-in for enwik8
# from text already on this machine (Debian's dictionaries, manual pages, info manuals, package
# docs), so that enwik8's sizes (split = 90000000,5000000,5000000, a 5 MB test split scored
# whole, an epoch's time, checkpoints and resume) can be rehearsed, and models compared, without
# the internet. Its bpc means nothing beside enwik8's. OUT defaults to data/standin.txt
# (git-ignored).
#
# --order mixed (the default) makes the three splits alike, as enwik8's are: no source gives
# more than CAP bytes (its first ones; GCIDE's dictionary alone is 40 MB), a source larger than
# BIG bytes on disk is cut at line ends into pieces of at most CHUNK bytes (a few dictionary
# entries, a part of a changelog), binary documents (PDF, PostScript, tar) are left out, and
# each source's pieces are spread evenly over the stand-in, the sources interleaved in the
# order of a hash of their names: a fixed pseudo-random order, so the same machine gives the
# same bytes, and each split holds about its share of every source. --order sorted is the stand-in before 2026-11-28: whole files in C-locale
# sorted order, dictionaries first and translated manual pages last, so that valid and test
# were mostly translations. STANDIN_SIZE and STANDIN_ROOT (default /usr/share) let a test
# build a small one from a tree of its own.
set -euo pipefail

SIZE=${STANDIN_SIZE:-100000000}
ROOT=${STANDIN_ROOT:-/usr/share}
CAP=4000000 BIG=65536 CHUNK=65536
ORDER=mixed

fail() { echo "make_standin.sh: error: $*" >&2; exit 1; }

if [ "${1:-}" = --order ]; then
    ORDER=${2:-}
    [ "$ORDER" = mixed ] || [ "$ORDER" = sorted ] || fail "--order '$ORDER': expected mixed or sorted"
    shift 2
fi
OUT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/standin.txt}

# Every candidate file, NUL-separated, in a fixed order: English text first, translations last.
# A folder that is missing is no error (the function runs in the pipeline's own subshell).
sources() {
    set +e
    local man=$ROOT/man
    printf '%s\0' "$ROOT"/dictd/*.dz
    find "$man"/man* -type f -print0 2> /dev/null | LC_ALL=C sort -z
    find "$ROOT"/info -type f -print0 2> /dev/null | LC_ALL=C sort -z
    find "$ROOT"/doc -type f \( -name '*.gz' -o -name '*.txt' -o -name copyright \
        -o -name 'README*' -o -name 'NEWS*' -o -name 'changelog*' \) -print0 2> /dev/null | LC_ALL=C sort -z
    find "$man" -mindepth 2 -type f ! -path "$man/man*" -print0 2> /dev/null | LC_ALL=C sort -z
}

# The documents of --order mixed as NUL-separated paths. $TMP/list: "size TAB path" of each
# source; $TMP/docs: "source TAB piece TAB pieces TAB path" of each document (a whole file is
# piece 0 of 1). Piece k of n goes at (k + u) / n of the order, u in [0, 1) from a hash of the
# source's name below ROOT: each source is spread evenly over the stand-in and the sources
# interleave pseudo-randomly. The hash takes each byte (then two more rounds) through
# x -> x^2 + 2654435761 x modulo a prime below 2^32, the products in 16-bit halves (exact in
# awk's doubles): not linear, so that names alike but for a letter land far apart.
mixed() {
    sources | xargs -0 -r stat --printf '%s\t%n\n' 2> /dev/null | grep -Ev '\.(pdf|ps|tar)\.gz$' > "$TMP/list" || true
    awk -F'\t' -v big="$BIG" '$1 <= big { print $2 "\t0\t1\t" $2 }' "$TMP/list" > "$TMP/docs"
    local i=0 f p
    awk -F'\t' -v big="$BIG" '$1 > big { print $2 }' "$TMP/list" | while IFS= read -r f; do
        i=$((i + 1))
        { gzip -dcf -- "$f" 2> /dev/null || true; } | head -c "$CAP" | split -C "$CHUNK" -a 4 -d - "$TMP/p$i."
        set -- "$TMP/p$i".*
        [ -e "$1" ] || continue
        for p; do printf '%s\t%d\t%d\t%s\n' "$f" "$((10#${p##*.}))" "$#" "$p"; done
    done >> "$TMP/docs"
    LC_ALL=C awk -F'\t' -v root="$ROOT/" '
        function mm(a, b) { return ((int(a / 65536) * b % P) * 65536 + (a % 65536) * b) % P }
        BEGIN { P = 4294967291; for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
        { k = index($1, root) == 1 ? substr($1, length(root) + 1) : $1
          h = 0; n = length(k)
          for (i = 1; i <= n + 2; i++) { x = h + (i <= n ? ord[substr(k, i, 1)] : 0) + 1; h = (mm(x, x) + mm(x, 2654435761)) % P }
          printf "%.15f\t%s\n", ($2 + h / P) / $3, $4 }' "$TMP/docs" | LC_ALL=C sort | cut -f2 | tr '\n' '\0'
}

command -v gzip > /dev/null || fail "gzip not found"
command -v sha1sum > /dev/null || fail "sha1sum not found (coreutils)"
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$OUT.tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# gzip -dcf decompresses .gz and dictzip .dz files and copies plain ones; an unreadable file is
# skipped (the same ones on every run). head stops the stream at SIZE bytes, so the readers'
# exit status (killed by SIGPIPE) says nothing: the size below is the check.
if [ "$ORDER" = sorted ]; then sources; else mixed; fi |
    xargs -0 -r gzip -dcf -- 2> /dev/null | head -c "$SIZE" > "$OUT.part" || true
got=$(wc -c < "$OUT.part" | tr -d ' ')
if [ "$got" != "$SIZE" ]; then
    rm -f "$OUT.part"
    fail "only $got bytes of text found in $ROOT/{dictd,man,info,doc}, expected $SIZE" \
         "(install dict-gcide and manpages, or use enwik8: bash data/get_enwik8.sh)"
fi
mv -f "$OUT.part" "$OUT"
echo "$OUT: $SIZE bytes ($ORDER order), SHA-1 $(sha1sum "$OUT" | cut -d' ' -f1)"
