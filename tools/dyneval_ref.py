#!/usr/bin/env python3
"""dyneval_ref.py: `swlstm eval --dynamic` in PyTorch, an independent check of its rule.

    ./swlstm export CKPT --out m.safetensors
    /usr/bin/python3 tools/dyneval_ref.py m.safetensors --split test --max-bytes 20000 --dyn-stats 100000

prints the static and dynamic bits per character that `swlstm eval CKPT --dynamic` prints with
the same options. The model is tools/swlstm_torch.py's; the rule is Krause et al. 2018's RMS
rule with a global prior, as src/train/dyneval.h states it:
  rms: the root mean square of each weight's gradient of the mean loss over windows of
       --segment bytes in B stripes (the config's batch_size) of the first --dyn-stats bytes
       of the training split, the state carried;
  the split is read as one stream in segments of --segment bytes, the state carried; each
  segment is scored, then every weight moves:
       p <- p - eta g / (rms + eps) + min(lambda rms / mean(rms), 1) (p_trained - p)
  where g is the gradient of the segment's mean loss and mean(rms) is the mean over the
  model's tensors of each tensor's mean rms.
Each phase (static, rms statistics, dynamic) shows a progress line on a terminal's stderr
unless --quiet, as `swlstm eval --dynamic`.
"""
import argparse
import json
import math
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    from need import missing
    missing("dyneval_ref", "torch", "python3-torch", "torch")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from need import cores  # noqa: E402
from swlstm_torch import (Progress, SwLSTM, die, eval_batch_for, eval_bpc, progress_wanted, read_data,  # noqa: E402
                          split_sizes)


def detach(state):
    return [(h.detach(), c.detach()) for h, c in state]


def windows(rows, T, pr):
    """(inputs, targets) of the windows of T steps over rows [B, n], as src/train/eval.c runs
    them; pr (a Progress over the steps) shows each window done."""
    for pos in range(0, rows.shape[1] - 1, T):
        n = min(T, rows.shape[1] - 1 - pos)
        yield rows[:, pos:pos + n], rows[:, pos + 1:pos + 1 + n]
        pr.show(pos + n)
    pr.done()


def as_rows(data, B):
    stripe = len(data) // B
    return torch.frombuffer(bytearray(data[:B * stripe]), dtype=torch.uint8).view(B, stripe).long()


def mean_loss_grad(model, x, y, state):
    """Mean loss of the window, its summed nats, the state after it; gradients in .grad."""
    model.zero_grad()
    logits, state = model(x, state)
    loss = F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))
    loss.backward()
    nats = F.cross_entropy(logits.detach().reshape(-1, 256).double(), y.reshape(-1), reduction="sum").item()
    return nats, detach(state)


def grad_rms(model, data, batch, T, progress):
    params = list(model.parameters())
    ms = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    state, count, rows = None, 0, as_rows(data, eval_batch_for(len(data), batch, T))
    for x, y in windows(rows, T, Progress("eval rms statistics", rows.shape[1] - 1, progress)):
        _, state = mean_loss_grad(model, x, y, state)
        for s, p in zip(ms, params):
            s += p.grad.double() ** 2
        count += 1
    rms = [torch.sqrt(s / count).to(p.dtype) for s, p in zip(ms, params)]
    return rms, sum(r.double().mean().item() for r in rms) / len(rms)


def dynamic_bpc(model, data, T, rms, mean_rms, eta, lam, eps, progress):
    params = list(model.parameters())
    trained = [p.detach().clone() for p in params]
    decay = [torch.clamp(lam * r / mean_rms, max=1.0) for r in rms]
    state, nats = None, 0.0
    for x, y in windows(as_rows(data, 1), T, Progress("eval dynamic", len(data) - 1, progress)):
        n, state = mean_loss_grad(model, x, y, state)
        nats += n
        with torch.no_grad():
            for p, p0, r, d in zip(params, trained, rms, decay):
                p += d * (p0 - p) - eta * p.grad / (r + eps)
    with torch.no_grad():
        for p, p0 in zip(params, trained):
            p.copy_(p0)
    return nats / (len(data) - 1) / math.log(2)


def main():
    ap = argparse.ArgumentParser(description="static and dynamic bpc of an exported swlstm model (as swlstm eval --dynamic)")
    ap.add_argument("model", help="MODEL.safetensors from `swlstm export`")
    ap.add_argument("--data", help="data file (default: the config's data)")
    ap.add_argument("--split", default="valid", choices=["train", "valid", "test"])
    ap.add_argument("--max-bytes", type=int, default=0)
    ap.add_argument("--segment", type=int, default=20)
    ap.add_argument("--eta", type=float, default=3e-4)
    ap.add_argument("--lambda", dest="lam", type=float, default=1e-3)
    ap.add_argument("--eps", type=float, default=2e-5)
    ap.add_argument("--dyn-stats", type=int, default=1000000)
    ap.add_argument("--raw-weights", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr (shown only on a terminal)")
    a = ap.parse_args()
    progress = progress_wanted(a.quiet)
    torch.set_num_threads(cores())
    try:
        model = SwLSTM.load(a.model, ema=False if a.raw_weights else None)
    except (OSError, ValueError) as e:
        die(str(e))
    cfg = model.config
    data = read_data(a.data or cfg["data"])
    sizes = split_sizes(cfg["split"], len(data))
    which = ["train", "valid", "test"].index(a.split)
    start = sum(sizes[:which])
    n = min(sizes[which], a.max_bytes) if a.max_bytes else sizes[which]
    span = data[start:start + n]
    stats = min(a.dyn_stats, sizes[0])
    static, _ = eval_bpc(model, span, 1, a.segment, progress=progress, what="eval static")
    rms, mean_rms = grad_rms(model, data[:stats], int(cfg["batch_size"]), a.segment, progress)
    dyn = dynamic_bpc(model, span, a.segment, rms, mean_rms, a.eta, a.lam, a.eps, progress)
    if a.json:
        print(json.dumps({"bpc": round(dyn, 6), "static_bpc": round(static, 6), "bytes": n - 1, "split": a.split}))
    else:
        print(f"{a.split} bpc {dyn:.6f} dynamic, {static:.6f} static, over {n - 1} bytes")


if __name__ == "__main__":
    main()
