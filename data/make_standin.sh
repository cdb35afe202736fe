#!/usr/bin/env bash
# make_standin.sh [OUT]: builds a 100,000,000-byte stand-in for enwik8 from text already on this
# machine (Debian's dictionaries, then manual pages, info manuals, package docs), so that
# enwik8's sizes (split = 90000000,5000000,5000000, a 5 MB test split scored whole, an epoch's
# time, checkpoints and resume) can be rehearsed without the internet. Its bpc means nothing
# beside enwik8's; its timings and memory do. OUT defaults to data/standin.txt (git-ignored).
# The files are read in C-locale sorted order, so the same machine gives the same bytes.
set -euo pipefail

SIZE=100000000
OUT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/standin.txt}

fail() { echo "make_standin.sh: error: $*" >&2; exit 1; }

# Every candidate file, NUL-separated, in a fixed order: English text first, translations last.
# A folder that is missing is no error (the function runs in the pipeline's own subshell).
sources() {
    set +e
    local man=/usr/share/man
    printf '%s\0' /usr/share/dictd/*.dz
    find "$man"/man* -type f -print0 2> /dev/null | LC_ALL=C sort -z
    find /usr/share/info -type f -print0 2> /dev/null | LC_ALL=C sort -z
    find /usr/share/doc -type f \( -name '*.gz' -o -name '*.txt' -o -name copyright \
        -o -name 'README*' -o -name 'NEWS*' -o -name 'changelog*' \) -print0 2> /dev/null | LC_ALL=C sort -z
    find "$man" -mindepth 2 -type f ! -path "$man/man*" -print0 2> /dev/null | LC_ALL=C sort -z
}

command -v gzip > /dev/null || fail "gzip not found"
command -v sha1sum > /dev/null || fail "sha1sum not found (coreutils)"
mkdir -p "$(dirname "$OUT")"
# gzip -dcf decompresses .gz and dictzip .dz files and copies plain ones; an unreadable file is
# skipped (the same ones on every run). head stops the stream at SIZE bytes, so the readers'
# exit status (killed by SIGPIPE) says nothing: the size below is the check.
sources | xargs -0 -r gzip -dcf -- 2> /dev/null | head -c "$SIZE" > "$OUT.part" || true
got=$(wc -c < "$OUT.part" | tr -d ' ')
if [ "$got" != "$SIZE" ]; then
    rm -f "$OUT.part"
    fail "only $got bytes of text found in /usr/share/{dictd,man,info,doc}, expected $SIZE" \
         "(install dict-gcide and manpages, or use enwik8: bash data/get_enwik8.sh)"
fi
mv -f "$OUT.part" "$OUT"
echo "$OUT: $SIZE bytes, SHA-1 $(sha1sum "$OUT" | cut -d' ' -f1)"
