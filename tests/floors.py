#!/usr/bin/env python3
"""floors.py: checks docs/ARCHITECTURE.md's link floors against the objects' symbols.

usage: floors.py DOC OBJ...     (make test: the objects of swlstm, CUDA ones where built)
       floors.py --self-test    (made-up listings: each use of a floor above must fail)

DOC's line `Link floors: `F < F < {F, F} < ...`` orders the folders (src/base, cuda/ops...)
bottom up; an object may use (nm's undefined symbols) only what folders on a floor below its
own define: no arrow up, none between peers, hence no cycle. `Link exception: `A -> B`
(`sym`, ...)` lines name the only uses outside that rule, symbol by symbol; one that the
objects no longer make is a stale line, and fails too. Symbols no folder defines (libc,
the CUDA runtime) are not looked at.
"""
import os
import re
import subprocess
import sys


def parse_doc(text):
    """(floor of each folder, {(user, definer): allowed symbols}) from the doc's lines."""
    m = re.search(r"^Link floors: `([^`]*)`", text, re.M)
    if not m:
        raise SystemExit("floors.py: no line `Link floors: `...`` in the doc")
    floor = {}
    for i, part in enumerate(m.group(1).split("<")):
        for name in part.strip().strip("{}").split(","):
            if name.strip():
                floor[name.strip()] = i
    exceptions = {}
    for a, b, syms in re.findall(r"^Link exception: `(\S+) -> (\S+)` \(([^)]*)\)", text, re.M):
        exceptions[(a, b)] = set(re.findall(r"`([^`]+)`", syms))
    return floor, exceptions


def check(objs, floor, exceptions):
    """objs: {folder: [(defined, undefined), ...]} -> list of problems (empty: the floors hold)."""
    problems = []
    definers = {}
    for folder, listing in objs.items():
        if folder not in floor:
            problems.append("%s: on no floor of the doc's `Link floors` line" % folder)
        for defined, _ in listing:
            for s in defined:
                definers.setdefault(s, set()).add(folder)
    used, up = set(), {}
    for folder, listing in sorted(objs.items()):
        for _, undefined in listing:
            for s in sorted(undefined):
                by = definers.get(s, set())
                if not by or folder in by or any(floor.get(d, -1) < floor.get(folder, -1) for d in by):
                    continue
                ok = [d for d in by if s in exceptions.get((folder, d), ())]
                if ok:
                    used.add((folder, ok[0], s))
                    continue
                up.setdefault((folder, " and ".join(sorted(by))), set()).add(s)
    for (folder, by), syms in up.items():
        names = sorted(syms)
        problems.append("%s uses %d of %s's symbols, not on a floor below it: %s%s" %
                        (folder, len(names), by, ", ".join(names[:3]), ", ..." if len(names) > 3 else ""))
    for (a, b), syms in sorted(exceptions.items()):
        for s in sorted(syms):
            if a in objs and b in objs and (a, b, s) not in used:
                problems.append("stale `Link exception: %s -> %s`: %s is no longer used that way" % (a, b, s))
    return sorted(set(problems))


def nm(path):
    """(defined, undefined) global symbols of an object file."""
    out = subprocess.run(["nm", "-P", path], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            undefined.add(f[0])
        elif f[1].isupper() or f[1] == "u":
            defined.add(f[0])
    return defined, undefined


def folder_of(path):
    """build/rel/cuda/ops/adam.o -> cuda/ops."""
    parts = os.path.normpath(path).split(os.sep)
    for i in range(len(parts) - 2):
        if parts[i] in ("src", "cuda"):
            return parts[i] + "/" + parts[i + 1]
    raise SystemExit("floors.py: %s is in no src/ or cuda/ folder" % path)


def self_test():
    text = "Link floors: `low < {mid, peer} < top`\nLink exception: `low -> top` (`up_call`)\n"
    floor, exc = parse_doc(text)
    assert floor == {"low": 0, "mid": 1, "peer": 1, "top": 2}, floor
    good = {"low": [({"base_fn"}, {"up_call", "printf"})], "mid": [({"mid_fn"}, {"base_fn"})],
            "peer": [({"peer_fn"}, {"base_fn"})], "top": [({"up_call", "top_fn"}, {"mid_fn", "peer_fn", "base_fn"})]}
    assert check(good, floor, exc) == [], check(good, floor, exc)
    cases = [  # (a listing added to a folder, what check must report)
        ("low", ({"x"}, {"mid_fn"}), "low uses 1 of mid's symbols, not on a floor below it: mid_fn"),  # an arrow up
        ("mid", ({"y"}, {"peer_fn"}), "mid uses 1 of peer's symbols, not on a floor below it: peer_fn"),  # between peers
        ("low", ({"z"}, {"top_fn"}), "low uses 1 of top's symbols, not on a floor below it: top_fn"),  # up, past the exception
    ]
    for folder, listing, want in cases:
        objs = {k: list(v) for k, v in good.items()}
        objs[folder].append(listing)
        got = check(objs, floor, exc)
        assert got == [want], (want, got)
    stale = {k: v for k, v in good.items()}
    stale["low"] = [({"base_fn"}, {"printf"})]
    assert check(stale, floor, exc) == ["stale `Link exception: low -> top`: up_call is no longer used that way"]
    odd = dict(good, other=[(set(), set())])
    assert check(odd, floor, exc) == ["other: on no floor of the doc's `Link floors` line"]
    assert folder_of("build/rel/cuda/ops/adam.o") == "cuda/ops"
    print("floors.py: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 3:
        raise SystemExit(__doc__)
    with open(argv[1]) as f:
        floor, exc = parse_doc(f.read())
    objs = {}
    for path in argv[2:]:
        objs.setdefault(folder_of(path), []).append(nm(path))
    problems = check(objs, floor, exc)
    for p in problems:
        print("floors.py: " + p)
    if problems:
        return 1
    print("floors.py: %d objects in %d folders keep the floors of %s" % (len(argv) - 2, len(objs), argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
