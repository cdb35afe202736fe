#!/usr/bin/env bash
# get_enwik8.sh [DIR]: downloads enwik8 (the first 1e8 bytes of an English Wikipedia dump,
# the Hutter Prize corpus) into DIR (default: this script's folder) and verifies it.
# swlstm can also read the zip as it is: `data = data/enwik8.zip` (stored or deflated entries).
# ENWIK8_URL replaces the address: a mirror, or file:///path/enwik8.zip for a copy at hand.
# Any failure (offline, a file that is not enwik8) is one line on stderr and exit status 1;
# tests/test_data.c (data_get_enwik8_*) checks both with local files.
set -euo pipefail

URL=${ENWIK8_URL:-http://mattmahoney.net/dc/enwik8.zip}
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

# Fetches $URL into enwik8.zip.part; the last line of curl's or wget's own message becomes the
# reason in our one line.
download() {
    local err
    case $URL in
        file://*) err=$(cp -- "${URL#file://}" enwik8.zip.part 2>&1) ;;
        *) if command -v curl > /dev/null; then
               err=$(curl -fsSL --retry 3 -o enwik8.zip.part "$URL" 2>&1)
           elif command -v wget > /dev/null; then
               err=$(wget -q --tries=3 -O enwik8.zip.part "$URL" 2>&1)
           else
               fail "neither curl nor wget found; download $URL into $DIR by hand"
           fi ;;
    esac || { rm -f enwik8.zip.part; fail "download of $URL failed: ${err##*$'\n'}"; }
    mv enwik8.zip.part enwik8.zip
}

if [ ! -s enwik8.zip ]; then
    echo "downloading $URL"
    download
fi

# Extracts enwik8 from enwik8.zip, with the extractor's last line of complaint in our one line.
extract() {
    local err
    rm -f enwik8
    if command -v unzip > /dev/null; then
        err=$(unzip -o -q enwik8.zip enwik8 2>&1)
    elif command -v python3 > /dev/null; then
        err=$(python3 -m zipfile -e enwik8.zip . 2>&1)
    else
        fail "neither unzip nor python3 found to extract $DIR/enwik8.zip; swlstm reads it directly: data = $DIR/enwik8.zip"
    fi || fail "extracting enwik8 from $DIR/enwik8.zip failed: ${err##*$'\n'} (delete it to download again)"
}

extract

# A wrong file is removed, so that no config trains on it, and the zip is kept to inspect.
verified enwik8 || { got=$(wc -c < enwik8 | tr -d ' ') sha=$(sha1sum enwik8 | cut -d' ' -f1); rm -f enwik8
    fail "$DIR/enwik8.zip does not hold enwik8: expected $SIZE bytes with SHA-1 $SHA1, got $got bytes with SHA-1 $sha; delete $DIR/enwik8.zip and retry"; }
echo "$DIR/enwik8: $SIZE bytes, SHA-1 verified (swlstm also reads $DIR/enwik8.zip directly)"
