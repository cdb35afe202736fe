#!/usr/bin/env python3
"""dyneval_ref.py: `swlstm eval --dynamic` in PyTorch, an independent check of its rule.

    ./swlstm export CKPT --out m.safetensors
    /usr/bin/python3 tools/dyneval_ref.py m.safetensors --split test --max-bytes 20000 --dyn-stats 100000

prints the static and dynamic bits per character that `swlstm eval CKPT --dynamic` prints with
the same options and the same defaults (src/train/dyn_protocol.h): without --eta, eta and
lambda chosen by the same walk on the valid split's first bytes (--dyn-tune: the same grid),
eta 0 when no pair beats static there; --static warm, --streams N alike. The model is
tools/swlstm_torch.py's; the rule is Krause et al. 2018's RMS rule with a global prior, as
src/train/dyneval.h states it:
  rms: the root mean square of each weight's gradient of the mean loss over windows of
       --segment bytes in B stripes (the config's batch_size) of the first --dyn-stats bytes
       of the training split, the state carried;
  the split is read as one stream in segments of --segment bytes, the state carried; each
  segment is scored, then every weight moves:
       p <- p - eta g / (rms + eps) + min(lambda rms / mean(rms), 1) (p_trained - p)
  where g is the gradient of the segment's mean loss and mean(rms) is the mean over the
  model's tensors of each tensor's mean rms.
Each phase (static, rms statistics, choice, dynamic) shows a progress line on a terminal's stderr
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


def dynamic_nats(model, data, T, rms, mean_rms, h, progress):
    """Summed nats of one stream over data adapting from the trained weights (put back after)."""
    eta, lam, eps = h
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
    return nats


def dynamic_bpc(model, data, T, rms, mean_rms, h, progress=False):
    return dynamic_nats(model, data, T, rms, mean_rms, h, progress) / (len(data) - 1) / math.log(2)


def pieces(n, streams):
    """src/train/dyn_streams.c dyn_piece: (offset, length) of each of `streams` pieces."""
    each = n // streams
    return [(k * each, n - each * (streams - 1) if k == streams - 1 else each) for k in range(streams)]


@torch.no_grad()
def warm_bpc(model, span, B, T, warm):
    """src/train/eval.c's warm protocol: stripe b reads from b*L over warm + L steps; stripe 0
    scores every step, the others the last L."""
    warm = min(warm, len(span) - 1 - B)
    L = (len(span) - 1 - warm) // B
    rows = torch.stack([torch.frombuffer(bytearray(span[b * L:b * L + warm + L + 1]), dtype=torch.uint8).long()
                        for b in range(B)])
    state, nats = None, 0.0
    for pos in range(0, warm + L, T):
        n = min(T, warm + L - pos)
        logits, state = model(rows[:, pos:pos + n], state)
        loss = F.cross_entropy(logits.double().reshape(B, n, 256).transpose(1, 2), rows[:, pos + 1:pos + 1 + n],
                               reduction="none")
        loss[1:, :max(0, warm - pos)] = 0
        nats += loss.sum().item()
    count = warm + B * L
    return nats / count / math.log(2), count


def static_reference(model, span, a, cfg):
    if a.static == "warm":
        B = eval_batch_for(len(span), int(cfg["batch_size"]), int(cfg["seq_length"]))
        if B == 1:
            return eval_bpc(model, span, 1, int(cfg["seq_length"]))
        return warm_bpc(model, span, B, int(cfg["seq_length"]), a.warmup)
    nats, count = 0.0, 0
    for off, n in pieces(len(span), a.streams):
        bpc, c = eval_bpc(model, span[off:off + n], 1, a.segment)
        nats, count = nats + bpc * c * math.log(2), count + c
    return nats / count / math.log(2), count


def half_decade(eta, up):
    mant = eta / 10 ** math.floor(math.log10(eta) + 1e-9)
    return eta * (3 if up else 0.3) if mant < 2 else eta * (10.0 / 3 if up else 1.0 / 3)


def choose(try_pair, h, keep_lambda):
    """src/train/dyn_protocol.c choose_walk: from h's eta down by half-decades while the bpc
    falls, else up; 4 etas at most; then lambda x 10 at the best unless kept."""
    last, up, etas, t = try_pair(h), False, 1, h
    while etas < 4:
        t = (half_decade(t[0], up), t[1], t[2])
        bpc = try_pair(t)
        if bpc < last:
            last = bpc
        elif not up and etas == 1:
            up, t = True, h
        else:
            break
        etas += 1
    if not keep_lambda:
        try_pair((try_pair.best[0], try_pair.best[1] * 10, try_pair.best[2]))


class Search:
    """Candidates' dynamic bpc over the valid bytes, the best kept."""

    def __init__(self, model, data, T, rms, mean_rms, verbose):
        self.args, self.verbose, self.best, self.best_bpc, self.passes = (model, data, T, rms, mean_rms), verbose, None, math.inf, 0

    def __call__(self, h):
        bpc = dynamic_bpc(*self.args, h)
        self.passes += 1
        if self.verbose:
            print(f"dyn-tune: eta {h[0]:.3g} lambda {h[1]:.3g}: valid bpc {bpc:.4f} over {len(self.args[1]) - 1} bytes")
        if bpc < self.best_bpc:
            self.best, self.best_bpc = h, bpc
        return bpc


def main():
    ap = argparse.ArgumentParser(description="static and dynamic bpc of an exported swlstm model (as swlstm eval --dynamic)")
    ap.add_argument("model", help="MODEL.safetensors from `swlstm export`")
    ap.add_argument("--data", help="data file (default: the config's data)")
    ap.add_argument("--split", default="valid", choices=["train", "valid", "test"])
    ap.add_argument("--max-bytes", type=int, default=0)
    ap.add_argument("--segment", type=int, default=20)
    ap.add_argument("--eta", type=float, help="default: chosen on the valid split (3e-5 the mlstm's start, 3e-6 the lstm's)")
    ap.add_argument("--lambda", dest="lam", type=float, help="default 1e-3 (x 10 tried by the choice unless given)")
    ap.add_argument("--eps", type=float, default=2e-5)
    ap.add_argument("--dyn-stats", type=int, default=1000000)
    ap.add_argument("--dyn-tune", action="store_true", help="eta and lambda from the grid of 15 pairs around them")
    ap.add_argument("--tune-bytes", type=int, default=0, help="valid bytes of the choice (default span/11, at most 25000; --dyn-tune 50000)")
    ap.add_argument("--static", default="stream", choices=["stream", "warm"])
    ap.add_argument("--warmup", type=int, default=2048)
    ap.add_argument("--streams", type=int, default=1)
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
    if a.streams < 1 or n // a.streams < 2:
        die(f"--streams {a.streams}: the span holds {n} bytes; a stream needs 2 at least")
    stats = min(a.dyn_stats, sizes[0])
    static, static_count = static_reference(model, span, a, cfg)
    rms, mean_rms = grad_rms(model, data[:stats], int(cfg["batch_size"]), a.segment, progress)
    h = (a.eta if a.eta is not None else 3e-5 if cfg.get("cell", "lstm") == "mlstm" else 3e-6,
         a.lam if a.lam is not None else 1e-3, a.eps)
    choice, out = "given", {}
    if a.eta is None or a.dyn_tune:
        if a.tune_bytes > sizes[1]:
            die(f"--tune-bytes {a.tune_bytes}: the valid split holds {sizes[1]} bytes")
        want = a.tune_bytes or (50000 if a.dyn_tune else max(min(n // 11, 25000), 2 * a.segment + 1))
        valid = data[sizes[0]:sizes[0] + min(want, sizes[1])]
        search = Search(model, valid, a.segment, rms, mean_rms, a.dyn_tune and not a.json)
        if a.dyn_tune:
            choice = "dyn-tune"
            for ex in (0.1, 0.3, 1, 3, 10):
                for lx in (0, 1, 10):
                    search((h[0] * ex, h[1] * lx, h[2]))
        else:
            choose(search, h, a.lam is not None)
            vstat, _ = eval_bpc(model, valid, 1, a.segment)
            choice = "chosen" if search.best_bpc < vstat else "static"
            out["choice_static_bpc"] = round(vstat, 6)
        h = search.best if choice != "static" else (0.0, search.best[1], search.best[2])
        out.update(choice_bytes=len(valid) - 1, choice_passes=search.passes, choice_bpc=round(search.best_bpc, 6))
    nats, count = 0.0, 0
    for off, k in pieces(n, a.streams):
        nats, count = nats + dynamic_nats(model, span[off:off + k], a.segment, rms, mean_rms, h, progress), count + k - 1
    dyn = nats / count / math.log(2)
    if a.json:
        print(json.dumps({"bpc": round(dyn, 6), "static_bpc": round(static, 6), "bytes": count, "static_bytes": static_count,
                          "split": a.split, "eta": float(f"{h[0]:g}"), "lambda": float(f"{h[1]:g}"), "choice": choice,
                          **out}))  # eta and lambda as swlstm prints them (%g)
    else:
        print(f"{a.split} bpc {dyn:.6f} dynamic, {static:.6f} static ({a.static}), over {count} bytes "
              f"(eta {h[0]:g} lambda {h[1]:g}, {choice})")


if __name__ == "__main__":
    main()
