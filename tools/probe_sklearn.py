#!/usr/bin/python3
"""probe_sklearn.py: scikit-learn's logistic regression on the folds and C grid of `swlstm probe`,
side by side with swlstm's own answer (a reference check of src/probe/).

    tools/probe_sklearn.py --features-file mr.npy --labels mr.labels.npy --folds 10
    tools/probe_sklearn.py --features-file tr.npy --labels tr.y.npy --dev-features dev.npy --dev-labels dev.y.npy

Needs Debian's python3-sklearn (`apt-get install python3-sklearn`; hence /usr/bin/python3).
Same protocol as swlstm: features standardised with the training rows' mean and population
std (std 0 -> 1), applied to the held-out rows; C = 2^-8 .. 2^3; L2 and L1 penalties; k-fold
CV with swlstm's fold assignment (xoshiro256** seeded by splitmix64, the shuffle of
src/probe/probe.c) or a dev split. sklearn's liblinear penalises the intercept (scaled by
--intercept-scaling); swlstm does not. Prints, per C, the selection accuracy of both and the
L1 model's non-zero weights on the whole training set, then the chosen C of each (the
non-zeros compared at swlstm's chosen C). Where the intercept matters (tiny C), liblinear's
penalised intercept predicts differently from swlstm's free one.
"""
import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

try:
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
except ImportError:
    from need import missing
    missing("probe_sklearn", "sklearn", "python3-sklearn", "scikit-learn")

M64 = (1 << 64) - 1
CS = [2.0 ** (k - 8) for k in range(12)]


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


class Rng:
    """src/base/rng.c: xoshiro256** seeded by splitmix64."""

    def __init__(self, seed):
        self.s, x = [], seed & M64
        for _ in range(4):
            x, v = splitmix64(x)
            self.s.append(v)

    def next(self):
        s = self.s
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        limit = M64 - M64 % n
        while True:
            x = self.next()
            if x < limit:
                return x % n


def fold_of_rows(n, k, seed):
    """fold_of_rows in src/probe/probe.c: fold p % K for position p of a seeded shuffle."""
    perm, r = list(range(n)), Rng(seed)
    for i in range(n - 1, 0, -1):
        j = r.below(i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    fold = np.empty(n, dtype=np.int64)
    for p, row in enumerate(perm):
        fold[row] = p % k
    return fold


def load(feat, lab):
    X = np.load(feat).astype(np.float64)
    y = np.loadtxt(lab, dtype=np.int64) if lab.endswith(".txt") else np.load(lab).astype(np.int64)
    if X.ndim != 2 or len(X) != len(y):
        sys.exit(f"probe_sklearn: '{feat}' has shape {X.shape} but '{lab}' has {len(y)} labels")
    return X, y.ravel()


DATA = {}   # the arrays, set before the worker processes fork (tasks carry row indices only)


def fit(task):
    """One (penalty, C, train rows, eval rows) fit: correct held-out rows, non-zero weights, seconds."""
    pen, C, tr, ev, a = task
    X, y, Xd, yd = DATA["X"], DATA["y"], DATA["Xd"], DATA["yd"]
    Xev, yev = (X[ev], y[ev]) if ev is not None else (Xd, yd)
    t0 = time.time()
    sc = StandardScaler().fit(X[tr])
    m = LogisticRegression(penalty=pen, C=C, solver="liblinear", tol=a.tol, max_iter=a.max_iter,
                           intercept_scaling=a.intercept_scaling)
    m.fit(sc.transform(X[tr]), y[tr])
    correct = int((m.predict(sc.transform(Xev)) == yev).sum()) if Xev is not None else 0
    return correct, int((np.abs(m.coef_) > 1e-8).sum()), time.time() - t0


def sklearn_sweep(a, X, y, Xd, yd):
    """Selection accuracy per penalty and C, and the whole-set model's non-zeros."""
    DATA.update(X=X, y=y, Xd=Xd, yd=yd)
    tasks, keys, every = [], [], np.arange(len(y))
    folds = fold_of_rows(len(y), a.folds, a.seed) if Xd is None else None
    for pen in a.pens:
        for k, C in enumerate(CS):
            if folds is None:
                tasks.append((pen, C, every, None, a)); keys.append((pen, k, "dev"))
            else:
                tasks.append((pen, C, every, None, a)); keys.append((pen, k, "all"))
                for f in range(a.folds):
                    tasks.append((pen, C, every[folds != f], every[folds == f], a)); keys.append((pen, k, "fold"))
    acc = {p: [0.0] * 12 for p in a.pens}
    nz = {p: [0] * 12 for p in a.pens}
    secs = {p: 0.0 for p in a.pens}
    n_eval = len(y) if Xd is None else len(yd)
    with ProcessPoolExecutor(a.jobs) as ex:
        for (pen, k, kind), (correct, nonzero, s) in zip(keys, ex.map(fit, tasks)):
            # each fit as it finishes: a long sweep (liblinear L2 at 4096-d) is usable in part
            held = f"{correct} held-out correct, " if kind != "all" else ""
            print(f"sklearn {pen} C=2^{k - 8} {kind}: {held}{nonzero} non-zero, {s:.1f} s", file=sys.stderr, flush=True)
            secs[pen] += s
            if kind != "fold":
                nz[pen][k] = nonzero
            if kind != "all":
                acc[pen][k] += correct / n_eval
    return acc, nz, secs


def swlstm_sweep(a):
    cmd = [a.swlstm, "probe", "--features-file", a.features_file, "--labels", a.labels, "--json",
           "--penalty", "both" if len(a.pens) == 2 else a.pens[0]]
    cmd += ["--dev-features", a.dev_features, "--dev-labels", a.dev_labels] if a.dev_features else \
        ["--folds", str(a.folds), "--seed", str(a.seed)]
    t0 = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out), time.time() - t0


def best(accs):
    """Highest accuracy, ties to the smaller C (swlstm's rule); None entries were not run."""
    k = max((i for i, v in enumerate(accs) if v is not None), key=lambda i: (accs[i], -i))
    return k, accs[k]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--features-file", required=True)
    p.add_argument("--labels", required=True)
    p.add_argument("--dev-features")
    p.add_argument("--dev-labels")
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--penalty", default="both", choices=["l2", "l1", "both"])
    p.add_argument("--tol", type=float, default=1e-4, help="liblinear's tolerance (sklearn's default 1e-4)")
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--intercept-scaling", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=2, help="processes for the sklearn fits")
    p.add_argument("--swlstm", default="./swlstm")
    a = p.parse_args()
    if bool(a.dev_features) != bool(a.dev_labels):
        sys.exit("probe_sklearn: --dev-features needs --dev-labels")
    a.pens = ["l2", "l1"] if a.penalty == "both" else [a.penalty]
    X, y = load(a.features_file, a.labels)
    Xd, yd = load(a.dev_features, a.dev_labels) if a.dev_features else (None, None)
    t0 = time.time()
    acc, nz, secs = sklearn_sweep(a, X, y, Xd, yd)
    sk_s = time.time() - t0
    sw, sw_s = swlstm_sweep(a)
    print(f"{len(y)} rows x {X.shape[1]} features, selection by "
          f"{'dev' if Xd is not None else f'{a.folds}-fold CV (seed {a.seed})'}; "
          f"sklearn liblinear tol {a.tol}: {sk_s:.1f} s wall, swlstm: {sw_s:.1f} s wall")
    print("| C | " + " | ".join(f"{q} sklearn | {q} swlstm" for q in a.pens) +
          (" | l1 non-zero sklearn | l1 non-zero swlstm |" if "l1" in a.pens else " |"))
    print("| --- " * (1 + 2 * len(a.pens) + (2 if "l1" in a.pens else 0)) + "|")
    fmt = lambda v: "-" if v is None else f"{v:.4f}"
    for k, C in enumerate(CS):
        row = [f"2^{k - 8}"]
        for q in a.pens:
            row += [fmt(acc[q][k]), fmt(sw["sweep"][q][k]["accuracy"])]
        if "l1" in a.pens:
            row += [str(nz["l1"][k]), str(sw["sweep"]["l1"][k]["nonzero"])]
        print("| " + " | ".join(row) + " |")
    for q in a.pens:
        ks, va = best(acc[q])
        kw, vw = best([e["accuracy"] for e in sw["sweep"][q]])
        line = (f"{q}: sklearn best C=2^{ks - 8} acc {va:.4f} ({secs[q]:.1f} s of fits); "
                f"swlstm best C=2^{kw - 8} acc {vw:.4f}; difference {100 * (vw - va):+.2f} points")
        if q == "l1":
            a_nz, b_nz = nz["l1"][kw], sw["sweep"]["l1"][kw]["nonzero"]
            line += (f"; non-zero at swlstm's C: sklearn {a_nz}, swlstm {b_nz} "
                     f"({100 * (b_nz - a_nz) / max(a_nz, 1):+.1f}%)")
        print(line)
    print(f"swlstm: features {sw['scaling']}, every fit converged: {sw['converged']}")


if __name__ == "__main__":
    main()
