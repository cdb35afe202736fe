#!/usr/bin/env python3
"""engine_targets.py: the recurrent engine's speed targets (issue 57) measured in one call on
this GPU, each beside its reference measured in the same call, as one table:
  - lstm_3min's training step (configs/lstm_3min.cfg on DATA, its log's ms a step at step 300,
    as shipped: engine = wgmma) <= 7 ms;
  - `swlstm bench --train`'s H 8192 ba_8 bf16 B 128 row on engine = wgmma >= 1.0x the chars/s
    of cuDNN's dense H = 2048 (tools/bench_cudnn.py's model: B 128, T 128, bf16);
  - mlstm_3min's shape (H 5120 ba_14, depth 2, B 128) >= 1.0x cuDNN's dense H = 4096;
  - the flagship mLSTM's (H 8192 ba_7, depth 4, B 128) >= 0.5x cuDNN's dense H = 2048;
  - batch-1 mLSTM sampling at H 8192 ba_7, depth 4 (`bench --sample`) >= 30 k bytes/s.
Each swlstm figure is its bench's best row of that shape (any path). Needs a built ./swlstm,
a CUDA GPU and PyTorch.
Usage: python3 tools/engine_targets.py DATA"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import torch
except ImportError:
    from need import missing
    missing("engine_targets", "torch", "python3-torch", "torch")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SWLSTM = os.path.join(ROOT, "swlstm")


def swlstm(*args):
    r = subprocess.run([SWLSTM, *args], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"engine_targets.py: error: swlstm {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return r.stdout


def bench_rows(*args):
    return [json.loads(line) for line in swlstm("bench", *args, "--json").splitlines() if line.startswith("{")]


# The largest `key` of the rows whose strings start with, and whose numbers equal, match's.
def best(rows, key, what, **match):
    def fits(r, k, v):
        return str(r.get(k)).startswith(v) if isinstance(v, str) else r.get(k) == v
    vals = [r[key] for r in rows if all(fits(r, k, v) for k, v in match.items())]
    if not vals:
        sys.exit(f"engine_targets.py: error: no bench row for {what} ({match})")
    return max(vals)


def train_step_ms(data):
    out = tempfile.mkdtemp(prefix="engine_targets.")
    try:
        log = swlstm("train", "configs/lstm_3min.cfg", "--data", data, "--max_steps", "300", "--log_every", "100",
                     "--out_dir", out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    m = re.findall(r"^step 300/300 .*\| ([0-9.]+) ms \|", log, re.M)
    if not m:
        sys.exit("engine_targets.py: error: lstm_3min's log has no 'step 300/300 ... ms' line")
    return float(m[-1])


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    data = sys.argv[1]
    if not os.path.isfile(data):
        sys.exit(f"engine_targets.py: error: data file '{data}' not found")
    if not os.access(SWLSTM, os.X_OK):
        sys.exit("engine_targets.py: error: ./swlstm not built (run make)")
    import bench_cudnn  # beside this script, on sys.path

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    cudnn = {h: bench_cudnn.bench(h, torch.bfloat16)[1] for h in (2048, 4096)}
    lstm = bench_rows("--train", "--cell", "lstm", "--hidden", "8192", "--dtype", "bf16")
    flag = bench_rows("--train", "--cell", "mlstm", "--hidden", "8192", "--dtype", "bf16")
    m3 = bench_rows("--train", "--cell", "mlstm", "--hidden", "5120", "--dtype", "bf16")
    sample = bench_rows("--sample")
    step = train_step_ms(data)
    lstm_cps = best(lstm, "chars_s", "8192 ba_8 wgmma", w_h_mask="ba_8", b=128, path="wgmma")
    m3_cps = best(m3, "chars_s", "5120 ba_14", w_h_mask="ba_14", b=128)
    flag_cps = best(flag, "chars_s", "8192 ba_7 mlstm", w_h_mask="ba_7", b=128)
    bps = best(sample, "bytes_s", "8192 ba_7 mlstm batch 1", h=8192, w_h_mask="ba_7", cell="mlstm", dtype="bf16", batch=1)
    # (target, swlstm, reference or None, goal): the ratio to the reference, or the value where there
    # is none, at most or at least the goal's bound
    rows = [
        ("lstm_3min's training step (B 256, T 64), ms", step, None, ("<=", 7)),
        ("bench --train 8192 ba_8 B 128 wgmma, chars/s vs cuDNN H=2048", lstm_cps, cudnn[2048], (">=", 1.0)),
        ("mlstm_3min's shape (5120 ba_14 D 2, B 128), chars/s vs cuDNN H=4096", m3_cps, cudnn[4096], (">=", 1.0)),
        ("flagship mLSTM (8192 ba_7 D 4, B 128), chars/s vs cuDNN H=2048", flag_cps, cudnn[2048], (">=", 0.5)),
        ("batch-1 mLSTM sampling (8192 ba_7 D 4), bytes/s", bps, None, (">=", 30000)),
    ]
    print("| target | swlstm | reference (this call) | ratio | goal | met |\n|---|---|---|---|---|---|")
    for name, val, ref, (op, bound) in rows:
        x = val / ref if ref else val
        goal = f"{op} {bound:.1f}x" if ref else f"{op} {bound:g}"
        met = x <= bound if op == "<=" else x >= bound
        ref_s, ratio_s = (f"{ref:.6g}", f"{x:.2f}x") if ref else ("", "")
        print(f"| {name} | {val:.6g} | {ref_s} | {ratio_s} | {goal} | {'yes' if met else 'no'} |")


if __name__ == "__main__":
    main()
