#!/usr/bin/env bash
# get_corpus.sh: prints the path of a training corpus for the quick start, fetching one if needed.
# Order: $SWLSTM_DATA; data/enwik8; Tiny Shakespeare beside the checkout (../shared/data);
# Debian's dict-gcide (installed with apt-get when run as root; works offline with a local mirror);
# finally enwik8 from the internet via data/get_enwik8.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pick() { [ -s "$1" ] && { echo "$1"; exit 0; }; return 0; }

[ -n "${SWLSTM_DATA:-}" ] && pick "$SWLSTM_DATA"
pick "$here/enwik8"
pick "$here/../../shared/data/tinyshakespeare.txt"
gcide=/usr/share/dictd/gcide.dict.dz
pick "$gcide"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "get_corpus: installing Debian's dict-gcide (40 MB English dictionary text)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dict-gcide; } >&2 || true
    pick "$gcide"
fi
echo "get_corpus: no local corpus; downloading enwik8" >&2
bash "$here/get_enwik8.sh" "$here" >&2
pick "$here/enwik8"
echo "get_corpus: no corpus found. Set SWLSTM_DATA=/path/to/text or install dict-gcide." >&2
exit 1
