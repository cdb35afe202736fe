#!/usr/bin/env python3
"""plot_log.py: training curves of one or several swlstm runs as a PNG.

    python3 tools/plot_log.py checkpoints/tiny --out tiny_bpc.png
    python3 tools/plot_log.py runs/dense runs/ba2 --labels dense,ba_2 --out cmp.png

Each RUN is a run directory (its log.jsonl) or a log.jsonl file (src/train/train_log.c writes it).
Panels: train (smoothed) and valid bpc against steps, the same against characters seen (or,
with --x seconds, against training seconds summed from the logged step times), and training
throughput (chars/s) against steps. Several runs overlay, one colour each. --point adds a
measured result without a log (a reference's final bpc) to the right-hand panel:

    python3 tools/plot_log.py run --x seconds --point "cuDNN 2048 valid,178,1.0817" --out f.png
"""
import argparse
import json
import os
import sys


def die(msg):
    sys.exit("plot_log: error: " + msg)


def read_log(path):
    """Step and eval records of a log.jsonl, keyed by step: a resumed run appends to the same
    log and may repeat steps after its checkpoint, and the later record is the one kept."""
    if os.path.isdir(path):
        path = os.path.join(path, "log.jsonl")
    steps, evals = {}, {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    die(f"{path}:{n}: not a JSON line ({e.msg})")
                if r.get("type") == "step":
                    steps[r["step"]] = r
                elif r.get("type") == "eval":
                    evals[r["step"]] = r
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if not steps:
        die(f"{path}: no step records (is it a swlstm log.jsonl?)")
    return path, [steps[k] for k in sorted(steps)], [evals[k] for k in sorted(evals)]


def chars_per_step(steps):
    """batch_size * seq_length, from chars_per_sec * ms (both logged every step)."""
    est = sorted(r["chars_per_sec"] * r["ms"] / 1e3 for r in steps if r["ms"] > 0)
    return max(1, round(est[len(est) // 2])) if est else 1


def seconds_at(steps):
    """Training seconds at each logged step: the logged step time times the steps since the
    record before (steps are logged every log_every steps)."""
    out, t, prev = {}, 0.0, 0
    for r in steps:
        t += (r["step"] - prev) * r["ms"] / 1e3
        prev = r["step"]
        out[r["step"]] = t
    return out


def parse_point(text):
    """LABEL,SECONDS,BPC"""
    try:
        label, secs, bpc = text.rsplit(",", 2)
        return label, float(secs), float(bpc)
    except ValueError:
        die(f"--point '{text}': expected LABEL,SECONDS,BPC")


def smooth(xs, window):
    """Trailing mean over `window` points (the first points average what there is)."""
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= window:
            acc -= xs[i - window]
        out.append(acc / min(i + 1, window))
    return out


def human(n):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.3g}"


def plot(runs, out, title, smooth_n, ymax, xaxis, points):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        from need import missing
        missing("plot_log", "matplotlib", "python3-matplotlib", "matplotlib")

    fig = plt.figure(figsize=(12, 7.5), dpi=100)
    grid = fig.add_gridspec(2, 2, height_ratios=[2, 1])
    ax_step, ax_chars = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_speed = fig.add_subplot(grid[1, :])
    lo, hi = float("inf"), 0.0
    for i, (label, steps, evals) in enumerate(runs):
        color = f"C{i}"
        cps = chars_per_step(steps)
        x = [r["step"] for r in steps]
        secs = seconds_at(steps)
        right = (lambda s: secs[min(secs, key=lambda k: abs(k - s))]) if xaxis == "seconds" else (lambda s: s * cps)
        window = smooth_n or max(1, len(steps) // 60)
        train = smooth([r["bpc"] for r in steps], window)
        speed = [r["chars_per_sec"] for r in steps]
        mean_speed = sum(speed) / len(speed)
        ex = [r["step"] for r in evals]
        ev = [r["valid_bpc"] for r in evals]
        for ax, at in ((ax_step, lambda s: s), (ax_chars, right)):
            ax.plot([at(s) for s in x], train, color=color, lw=1.2, alpha=0.8,
                    label=f"{label} train (mean of {window} steps)")
            if evals:
                ax.plot([at(s) for s in ex], ev, color=color, lw=2, marker="o", ms=5,
                        label=f"{label} valid (best {min(ev):.4f})")
        ax_speed.plot(x, smooth(speed, window), color=color, lw=1.2,
                      label=f"{label}: {human(mean_speed)} chars/s mean")
        # The first few percent of steps fall from 8 bpc: keep them off the scale.
        settled = train[min(len(train) - 1, len(train) // 20):]
        lo = min(lo, min(settled + ev))
        hi = max(hi, max(settled[:1] + ev))
    marks = []
    for j, (label, secs, bpc) in enumerate(points):
        marks += ax_chars.plot([secs], [bpc], color=f"C{len(runs) + j}", marker="s", ms=8, ls="none", label=f"{label} {bpc:.4f}")
        lo, hi = min(lo, bpc), max(hi, bpc)
    top = ymax if ymax else hi + 0.05 * (hi - lo)
    right_label = "training seconds" if xaxis == "seconds" else "characters seen"
    for ax, xlabel in ((ax_step, "step"), (ax_chars, right_label)):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("bits per character")
        ax.set_ylim(lo - 0.05 * (top - lo), top)
        ax.grid(alpha=0.3)
    ax_step.legend(fontsize=8)
    # With points the runs are named on the left panel alone, so the legend hides no point.
    ax_chars.legend(handles=marks or None, fontsize=8, loc="lower left" if marks else "best")
    if xaxis == "chars":
        ax_chars.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human(v) if v > 0 else "0"))
    ax_speed.set_xlabel("step")
    ax_speed.set_ylabel("chars/s")
    ax_speed.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human(v) if v > 0 else "0"))
    ax_speed.set_ylim(bottom=0)
    ax_speed.grid(alpha=0.3)
    ax_speed.legend(fontsize=8, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    tmp = f"{out}.tmp.{os.getpid()}"
    fig.savefig(tmp, format="png")
    os.replace(tmp, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", metavar="RUN", help="run directory or log.jsonl")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--labels", help="comma-separated labels, one per RUN (default: directory names)")
    ap.add_argument("--title", default="swlstm training", help="figure title")
    ap.add_argument("--smooth", type=int, default=0, help="train bpc averaged over N steps (default: 1/60 of the run)")
    ap.add_argument("--ymax", type=float, default=0, help="top of the bpc axes (default: fit the curves)")
    ap.add_argument("--x", choices=("chars", "seconds"), default="chars", help="the right-hand panel's axis")
    ap.add_argument("--point", action="append", default=[], metavar="LABEL,SECONDS,BPC",
                    help="a result without a log, on the right-hand panel (with --x seconds)")
    a = ap.parse_args()
    labels = a.labels.split(",") if a.labels else None
    if labels and len(labels) != len(a.runs):
        die(f"--labels has {len(labels)} labels for {len(a.runs)} runs")
    runs = []
    for i, run in enumerate(a.runs):
        path, steps, evals = read_log(run)
        runs.append((labels[i] if labels else os.path.basename(os.path.dirname(os.path.abspath(path))), steps, evals))
    if a.point and a.x != "seconds":
        die("--point needs --x seconds")
    plot(runs, a.out, a.title, a.smooth, a.ymax, a.x, [parse_point(p) for p in a.point])
    print(f"plot_log: {len(runs)} run(s) -> {a.out}")


if __name__ == "__main__":
    main()
