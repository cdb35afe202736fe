#!/usr/bin/env bash
# get_corpus.sh: puts the quick start's corpus at data/corpus.txt (the data default of the
# configs and of every README command) and prints its path.
# Order: $SWLSTM_DATA when set; data/corpus.txt when already there; Tiny Shakespeare copied
# from ../shared/data/tinyshakespeare.txt beside the checkout, or downloaded from char-rnn
# ($TINYSHAKESPEARE_URL to use a mirror); without the internet, 1,000,000 bytes of English
# text already on this machine (data/make_standin.sh: Debian's dictionaries such as dict-gcide,
# manual pages, info manuals, package docs), so that the commands after it run unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/corpus.txt"
url=${TINYSHAKESPEARE_URL:-https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt}
pick() { [ -s "$1" ] && { echo "$1"; exit 0; }; return 0; }

[ -n "${SWLSTM_DATA:-}" ] && pick "$SWLSTM_DATA"
pick "$dest"
beside="$here/../../shared/data/tinyshakespeare.txt"
if [ -s "$beside" ]; then
    cat "$beside" >"$dest.tmp" && mv -f "$dest.tmp" "$dest"
    echo "get_corpus: copied Tiny Shakespeare from $(cd "$(dirname "$beside")" && pwd) to data/corpus.txt" >&2
    pick "$dest"
fi
echo "get_corpus: downloading Tiny Shakespeare (1.1 MB) from $url" >&2
if { command -v curl >/dev/null && curl -fsSL --max-time 60 -o "$dest.tmp" "$url"; } ||
   { command -v wget >/dev/null && wget -q -T 60 -O "$dest.tmp" "$url"; }; then
    mv -f "$dest.tmp" "$dest"
    pick "$dest"
fi
rm -f "$dest.tmp"
echo "get_corpus: Tiny Shakespeare unavailable (no internet?); building data/corpus.txt from 1 MB of text on this machine" >&2
if STANDIN_SIZE=1000000 bash "$here/make_standin.sh" "$dest" >&2; then pick "$dest"; fi
echo "get_corpus: no corpus: put a text file at data/corpus.txt, or set SWLSTM_DATA=/path/to/text" >&2
exit 1
