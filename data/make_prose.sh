#!/usr/bin/env bash
# make_prose.sh [OUT]: builds an English prose corpus from Debian packages that nothing in the
# project has been tuned on (issue 59: `eval --dynamic`'s default is checked on it, never
# tuned on it; keep it so). OUT defaults to data/prose.txt (git-ignored).
#
# The packages (PACKAGES overrides the list) are fetched with `apt-get download` into a
# scratch folder and unpacked there with `dpkg-deb -x`, never installed, so the stand-in
# (make_standin.sh, which reads /usr/share) cannot hold them:
#   fortunes             fortune cookies: quotations, literature, jokes (games/fortunes/*)
#   jargon-text          the Jargon File: a lexicon of hacker slang, essays in its appendices
#   dict-devil           Ambrose Bierce's The Devil's Dictionary
#   debian-reference-en  the Debian Reference (HTML: its text kept)
#   debian-handbook      The Debian Administrator's Handbook, its English (en-US HTML) only
#   gnu-standards        the GNU coding and maintainers' standards
#   debian-faq, debian-history, developers-reference, maint-guide, debian-policy: the Debian
#                        project's own books (English originals)
# Each document becomes plain text (gzip and dictzip inflated; HTML's tags, scripts and
# styles dropped, its entities decoded, and only where its package has no plain-text
# documents, which are the same books; fortune's index files and "%" separators dropped),
# is cut at line ends into pieces of at most 64 KB, and the pieces of all are put in the order
# of the SHA-256 of "package/path/piece": so the splits are drawn alike, and the same package
# versions give the same bytes. The result is cut to SIZE bytes (default 15,000,000) at a line
# end, or is what the packages hold when less: 9,908,552 bytes from the default packages of
# Debian bookworm (2026-11-29). The script prints its size and the packages' versions.
# Needs apt-get (with a reachable Debian mirror), dpkg-deb and python3.
set -euo pipefail
fail() { echo "make_prose.sh: error: $*" >&2; exit 1; }
OUT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/prose.txt}
SIZE=${SIZE:-15000000}
PACKAGES=${PACKAGES:-fortunes jargon-text dict-devil debian-reference-en debian-handbook gnu-standards debian-faq
    debian-history developers-reference maint-guide debian-policy}
for tool in apt-get dpkg-deb python3; do command -v "$tool" > /dev/null || fail "$tool not found"; done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$TMP/debs"
for p in $PACKAGES; do
    (cd "$TMP/debs" && apt-get download "$p" > /dev/null 2> "$TMP/apt.err") ||
        fail "apt-get download $p: $(grep -m1 '^E:' "$TMP/apt.err" || echo failed) (apt-get update first?)"
    d=$(ls "$TMP/debs/${p}_"*.deb)
    mkdir -p "$TMP/pkg/$p"
    dpkg-deb -x "$d" "$TMP/pkg/$p"
    echo "$(basename "$d")" >&2
done

python3 - "$TMP/pkg" "$OUT" "$SIZE" << 'EOF'
import gzip, hashlib, html.parser, os, re, sys

root, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
PIECE = 65536


class Text(html.parser.HTMLParser):
    """An HTML page's text: scripts and styles dropped, a block element a line."""
    BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "pre", "dt", "dd", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def plain(rel):
    return rel.endswith((".txt", ".text", ".dict", ".txt.gz", ".text.gz", ".dict.dz")) and "copyright" not in rel


def text_of(pkg, path, html_too):
    """The document's text, or None where it holds none we keep."""
    rel = os.path.relpath(path, os.path.join(root, pkg))
    raw = open(path, "rb").read()
    if path.endswith((".gz", ".dz")):
        raw = gzip.decompress(raw)
        rel = rel[:-3]
    if pkg == "debian-handbook" and "/en-US/" not in "/" + rel:
        return None
    if pkg == "fortunes":
        if not rel.startswith("usr/share/games/fortunes/") or rel.endswith((".dat", ".u8")) or os.path.islink(path):
            return None
        return re.sub(rb"^%\n", b"\n", raw, flags=re.M).decode("utf-8", "replace")
    if rel.endswith((".html", ".htm")) and html_too:
        t = Text()
        t.feed(raw.decode("utf-8", "replace"))
        return re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", "".join(t.parts)))
    if plain(rel + ".gz"):
        return raw.decode("utf-8", "replace")
    return None


pieces = []
for pkg in sorted(os.listdir(root)):
    html_too = not any(plain(f) for _, _, files in os.walk(os.path.join(root, pkg)) for f in files)
    for dirpath, _, files in sorted(os.walk(os.path.join(root, pkg))):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            if not os.path.isfile(path):
                continue
            text = text_of(pkg, path, html_too)
            if not text or not text.strip():
                continue
            data, k, start = text.encode(), 0, 0
            while start < len(data):
                end = min(len(data), start + PIECE)
                if end < len(data):
                    cut = data.rfind(b"\n", start, end)
                    end = cut + 1 if cut > start else end
                key = hashlib.sha256(f"{pkg}/{os.path.relpath(path, root)}/{k}".encode()).hexdigest()
                pieces.append((key, data[start:end]))
                start, k = end, k + 1
pieces.sort()
body = b"".join(p for _, p in pieces)
if len(body) > size:
    body = body[:body.rfind(b"\n", 0, size) + 1]
with open(out + ".tmp", "wb") as f:
    f.write(body)
os.replace(out + ".tmp", out)
print(f"{out}: {len(body)} bytes from {len(pieces)} pieces", file=sys.stderr)
EOF
