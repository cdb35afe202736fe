#!/usr/bin/env python3
"""plot_prune.py: bpc against the share of blocks kept, from tables of tools/mask_runs.sh.

    python3 tools/plot_prune.py checkpoints/mask_runs/prune_table.md: --out prune.png

Each TABLE:LABEL is a prune_table.md (columns model, blocks kept, pruning, valid bpc (vs
trained), ...); each way of pruning a model is one line from its trained point, named
"LABELmodel, pruning". The blocks kept run on a log axis, 1 at the right.
"""
import argparse
import sys


def rows(path):
    """(model, pruning, blocks kept, valid bpc) of each row of a markdown table under its header."""
    lines = [l.strip().strip("|").split("|") for l in open(path) if l.startswith("|")]
    head = [h.strip() for h in lines[0]]
    at = {k: head.index(k) for k in ("model", "pruning", "blocks kept", "valid bpc (vs trained)")}
    for cells in lines[2:]:
        c = [x.strip() for x in cells]
        yield (c[at["model"]], c[at["pruning"]], float(c[at["blocks kept"]]),
               float(c[at["valid bpc (vs trained)"]].split()[0]))


def series(path):
    """{(model, pruning): [(blocks kept, bpc)]}: each way of pruning, from its model's trained point."""
    trained, out = {}, {}
    for model, how, d, bpc in rows(path):
        if how.startswith("none"):
            trained.setdefault(model, (1.0, bpc))
        else:
            out.setdefault((model, how), []).append((d, bpc))
    return {k: sorted(v + [trained[k[0]]]) for k, v in out.items() if k[0] in trained}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tables", nargs="+", metavar="TABLE:LABEL")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--title", default="block pruning: valid bpc against the blocks kept")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from need import missing
        missing("plot_prune", "matplotlib", "python3-matplotlib", "matplotlib")

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for spec in a.tables:
        path, _, label = spec.rpartition(":")
        if not path:
            sys.exit(f"plot_prune: error: '{spec}': expected TABLE:LABEL")
        for (model, how), pts in series(path).items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{label}{model}, {how}")
    ax.set_xscale("log")
    ax.set_xticks([0.1, 0.25, 0.5, 1])
    ax.set_xticklabels(["0.1", "0.25", "0.5", "1"])
    ax.set_xlabel("share of each matrix's blocks kept")
    ax.set_ylabel("valid bpc")
    ax.set_title(a.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out)


if __name__ == "__main__":
    main()
