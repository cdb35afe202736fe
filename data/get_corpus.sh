#!/usr/bin/env bash
# get_corpus.sh: puts Tiny Shakespeare at data/tinyshakespeare.txt (the data default of the
# configs and of every README command) and prints the path of the quick start's corpus.
# Order: $SWLSTM_DATA when set; data/tinyshakespeare.txt when already there; a copy of
# ../shared/data/tinyshakespeare.txt beside the checkout; a download from char-rnn
# ($TINYSHAKESPEARE_URL to use a mirror); without the internet, Debian's dict-gcide (installed
# with apt-get when run as root; works offline with a local mirror), whose path is then printed
# and must be given to other commands as --data.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/tinyshakespeare.txt"
url=${TINYSHAKESPEARE_URL:-https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt}
pick() { [ -s "$1" ] && { echo "$1"; exit 0; }; return 0; }

[ -n "${SWLSTM_DATA:-}" ] && pick "$SWLSTM_DATA"
pick "$dest"
beside="$here/../../shared/data/tinyshakespeare.txt"
if [ -s "$beside" ]; then
    cat "$beside" >"$dest.tmp" && mv -f "$dest.tmp" "$dest"
    echo "get_corpus: copied Tiny Shakespeare from $(cd "$(dirname "$beside")" && pwd) to data/" >&2
    pick "$dest"
fi
echo "get_corpus: downloading Tiny Shakespeare (1.1 MB) from $url" >&2
if { command -v curl >/dev/null && curl -fsSL --max-time 60 -o "$dest.tmp" "$url"; } ||
   { command -v wget >/dev/null && wget -q -T 60 -O "$dest.tmp" "$url"; }; then
    mv -f "$dest.tmp" "$dest"
    pick "$dest"
fi
rm -f "$dest.tmp"
gcide=/usr/share/dictd/gcide.dict.dz
if [ ! -s "$gcide" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "get_corpus: no internet; installing Debian's dict-gcide (40 MB English dictionary text)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dict-gcide; } >&2 || true
fi
if [ -s "$gcide" ]; then
    echo "get_corpus: Tiny Shakespeare unavailable; using $gcide (give other commands --data=$gcide)" >&2
    pick "$gcide"
fi
echo "get_corpus: no corpus: put a text file at data/tinyshakespeare.txt, or set SWLSTM_DATA=/path/to/text" >&2
exit 1
