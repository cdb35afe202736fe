#!/usr/bin/env python3
"""cudnn_lm.py: the end-to-end reference for the premise: a dense byte-level LSTM on cuDNN
(PyTorch nn.LSTM) trained on a data file for a wall-clock budget, then scored on the valid split,
with swlstm's protocol so that the two valid bpc compare:
  - the split as `split = a,b,c` fractions cuts it (train first, then valid, then test);
  - training: the train split cut into B stripes, windows of T bytes, the state carried from
    window to window (reset where the stripes wrap), Adam with a cosine schedule after a linear
    warmup, global-norm clipping, forget-gate bias 1; as swlstm's bf16 mode, the products run
    on a bf16 copy of fp32 weights, which Adam updates;
  - scoring: the valid and the test split each cut into B stripes, every byte after each
    stripe's first predicted once, the state carried across windows (swlstm eval --split
    valid, --split test).
Training prints a line every 1000 steps with the time left of its budget; scoring shows a
progress line on a terminal's stderr unless --quiet (as swlstm's verbs).
The schedule's length is --max-steps, or with --max-steps 0 the steps that fit in --seconds at
the rate this GPU measures from step 20 to step 300, or to the warmup's end if later (fit_steps).
Usage: python3 tools/cudnn_lm.py DATA [--hidden 2048] [--seconds 178] [--max-steps 0] ...
DATA may be gzip (dictzip) compressed, like /usr/share/dictd/gcide.dict.dz."""
import argparse
import copy
import gzip
import math
import os
import sys
import time
import warnings

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    from need import missing
    missing("cudnn_lm", "torch", "python3-torch", "torch")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from swlstm_torch import Progress, fmt_eta, progress_wanted  # noqa: E402


def load_bytes(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return f.read()


def split_sizes(n, fracs):
    sizes, used = [], 0
    for fr in fracs:
        x = fr * n
        want = int(round(x)) if abs(x - round(x)) <= 1e-6 else int(math.floor(x))
        sizes.append(min(want, n - used))
        used += sizes[-1]
    return sizes


class Model(torch.nn.Module):
    def __init__(self, H, E=64):
        super().__init__()
        self.emb = torch.nn.Embedding(256, E)
        self.lstm = torch.nn.LSTM(E, H)
        self.head = torch.nn.Linear(H, 256)
        with torch.no_grad():  # PyTorch's gate order is i, f, g, o
            self.lstm.bias_ih_l0[H:2 * H].fill_(1.0)
            self.lstm.bias_hh_l0.zero_()

    def forward(self, tok, state):  # tok [T, B]
        out, state = self.lstm(self.emb(tok), state)
        return self.head(out).float(), state


def stripes(data, B):
    L = len(data) // B
    return torch.frombuffer(bytearray(data[:L * B]), dtype=torch.uint8).view(B, L).t().contiguous().long().cuda()  # [L, B]


def lr_at(step, base, min_lr, warmup, total):
    if warmup > 0 and step <= warmup:
        return base * step / warmup
    p = min(max((step - warmup) / max(total - warmup, 1), 0.0), 1.0)
    return min_lr + (base - min_lr) * 0.5 * (1 + math.cos(math.pi * p))


def detach(state):
    return tuple(s.detach() for s in state)


@torch.no_grad()
def split_bpc(model, data, B, T, what, progress):
    s = stripes(data, B)
    nats, state, pr = 0.0, None, Progress(what, s.shape[0] - 1, progress)
    for pos in range(0, s.shape[0] - 1, T):
        n = min(T, s.shape[0] - 1 - pos)
        logits, state = model(s[pos:pos + n], state)
        nats += F.cross_entropy(logits.view(-1, 256), s[pos + 1:pos + n + 1].reshape(-1), reduction="sum").item()
        pr.show(pos + n)
    pr.done()
    return nats / (B * (s.shape[0] - 1)) / math.log(2), B * (s.shape[0] - 1)


# Steps 20 .. FIT_AT time the GPU's rate (the first ones carry cuDNN's and the allocator's
# start-up); the schedule then ends at the time budget, one percent early.
FIT_FROM, FIT_AT = 20, 300


def fit_steps(step, t_from, t_at, seconds):
    rate = (step - FIT_FROM) / (t_at - t_from)
    return step + int(rate * (seconds - t_at) * 0.99)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--split", default="0.98,0.01,0.01")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--max-steps", type=int, default=0, help="the schedule's steps; 0: those that fit in --seconds")
    ap.add_argument("--seconds", type=float, default=178, help="wall-clock budget for training (stops early)")
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr while scoring (shown only on a terminal)")
    a = ap.parse_args()
    if a.max_steps < 0:
        sys.exit(f"cudnn_lm.py: error: --max-steps {a.max_steps}: expected 0 (fit the time) or a positive count")
    torch.manual_seed(a.seed)
    raw = load_bytes(a.data)
    n = split_sizes(len(raw), [float(x) for x in a.split.split(",")])
    train, valid, test = raw[:n[0]], raw[n[0]:n[0] + n[1]], raw[n[0] + n[1]:n[0] + n[1] + n[2]]
    master = Model(a.hidden).cuda()
    model = copy.deepcopy(master).to(torch.bfloat16)  # what runs: the bf16 copy
    # flatten_parameters() skips bf16 weights (torch.backends.cudnn.is_acceptable knows half,
    # float and double only), so cuDNN packs them on each call, a copy of the weights small
    # against a step, and says so on stderr once; --quiet and the tables need not show it.
    warnings.filterwarnings("ignore", message="RNN module weights are not part of single contiguous chunk")
    pairs = list(zip(master.parameters(), model.parameters()))
    opt = torch.optim.Adam(master.parameters(), lr=a.lr, eps=1e-8)
    s, B, T = stripes(train, a.batch), a.batch, a.seq
    fit, fit_at = a.max_steps == 0, max(a.warmup, FIT_AT)
    total = a.max_steps or 10**9  # until fitted: no decay yet
    state, pos, step, t0 = None, 0, 0, time.perf_counter()
    while step < total and time.perf_counter() - t0 < a.seconds:
        if pos + T + 1 > s.shape[0]:
            pos, state = 0, None
        if fit and step in (FIT_FROM, fit_at):
            torch.cuda.synchronize()
            if step == FIT_FROM:
                t_from = time.perf_counter() - t0
            else:
                total, fit = fit_steps(step, t_from, time.perf_counter() - t0, a.seconds), False
        step += 1
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.lr, a.min_lr, a.warmup, total)
        logits, state = model(s[pos:pos + T], state)
        loss = F.cross_entropy(logits.view(-1, 256), s[pos + 1:pos + T + 1].reshape(-1))
        model.zero_grad(set_to_none=True)
        loss.backward()
        for p32, p16 in pairs:
            p32.grad = p16.grad.float()
        torch.nn.utils.clip_grad_norm_(master.parameters(), a.clip)
        opt.step()
        with torch.no_grad():
            for p32, p16 in pairs:
                p16.copy_(p32)
        state, pos = detach(state), pos + T
        if step % 1000 == 0:
            spent = time.perf_counter() - t0
            done = max(step / total, spent / a.seconds)  # the share of the budget, steps or seconds
            print(f"step {step} | loss {loss.item() / math.log(2):.4f} bpc | {spent:.1f} s | "
                  f"eta {fmt_eta(spent / done * max(1 - done, 0))}", flush=True)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    progress = progress_wanted(a.quiet)
    bpc, count = split_bpc(model.eval(), valid, B, T, "eval valid", progress)
    test_bpc, test_count = split_bpc(model, test, B, T, "eval test", progress)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    print(f"cuDNN dense LSTM H={a.hidden}: {step} steps of a {total}-step schedule in {wall:.1f} s ({step * B * T / wall / 1e3:.0f}k chars/s); "
          f"valid bpc {bpc:.4f} over {count} bytes; test bpc {test_bpc:.4f} over {test_count} bytes")


if __name__ == "__main__":
    main()
