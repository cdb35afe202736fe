#!/usr/bin/env bash
# get_enwik8.sh [DIR]: downloads enwik8 (the first 1e8 bytes of an English Wikipedia dump,
# the Hutter Prize corpus) into DIR (default: this script's folder) and verifies it.
# swlstm can also read the zip as it is: `data = data/enwik8.zip` (stored or deflated entries).
set -euo pipefail

URL=http://mattmahoney.net/dc/enwik8.zip
SIZE=100000000
SHA1=57b8363b814821dc9d47aa4d41f58733519076b2
DIR=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}

fail() { echo "get_enwik8.sh: error: $*" >&2; exit 1; }

# 0 if $1 is exactly enwik8: 100,000,000 bytes with the known SHA-1.
verified() {
    [ -f "$1" ] || return 1
    [ "$(wc -c < "$1" | tr -d ' ')" = "$SIZE" ] || return 1
    [ "$(sha1sum "$1" | cut -d' ' -f1)" = "$SHA1" ]
}

command -v sha1sum > /dev/null || fail "sha1sum not found (coreutils)"
mkdir -p "$DIR"
cd "$DIR"
if verified enwik8; then
    echo "$DIR/enwik8 is already there and verified"
    exit 0
fi

if [ ! -s enwik8.zip ]; then
    echo "downloading $URL"
    if command -v curl > /dev/null; then
        curl -fL --retry 3 -o enwik8.zip.part "$URL" || fail "download of $URL failed (curl)"
    elif command -v wget > /dev/null; then
        wget -O enwik8.zip.part "$URL" || fail "download of $URL failed (wget)"
    else
        fail "neither curl nor wget found; download $URL into $DIR by hand"
    fi
    mv enwik8.zip.part enwik8.zip
fi

rm -f enwik8
if command -v unzip > /dev/null; then
    unzip -o -q enwik8.zip enwik8 || fail "unzip of $DIR/enwik8.zip failed (delete it to download again)"
elif command -v python3 > /dev/null; then
    python3 -m zipfile -e enwik8.zip . || fail "extracting $DIR/enwik8.zip failed (delete it to download again)"
else
    fail "neither unzip nor python3 found to extract $DIR/enwik8.zip; swlstm reads it directly: data = $DIR/enwik8.zip"
fi

verified enwik8 || fail "$DIR/enwik8 is not enwik8: expected $SIZE bytes with SHA-1 $SHA1, got $(wc -c < enwik8 | tr -d ' ') bytes with SHA-1 $(sha1sum enwik8 | cut -d' ' -f1); delete $DIR/enwik8.zip and retry"
echo "$DIR/enwik8: $SIZE bytes, SHA-1 verified (swlstm also reads $DIR/enwik8.zip directly)"
