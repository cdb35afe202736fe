#!/usr/bin/env python3
"""A small-world LSTM char-LM trained in PyTorch, with swlstm.BlockSparseLinear as its
recurrent matrix: the four gates' W_h [4H, H] stacks one Watts-Strogatz block mask per gate,
as `swlstm train` lays it out (gates i, f, g, o).

    make python
    python3 python/examples/char_lm.py data/corpus.txt --steps 200
    python3 python/examples/char_lm.py FILE --device cuda --dtype bf16

FILE is text; a .gz or dictzip .dz file (/usr/share/dictd/gcide.dict.dz) is read decompressed,
as `swlstm train` reads it. The swlstm package comes from this checkout (python/swlstm).
"""
import argparse
import gzip
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import swlstm  # noqa: E402


class SmallWorldLSTM(torch.nn.Module):
    def __init__(self, hidden=256, block=16, sparsity="ws_4_0.1", seed=1, dtype=torch.float32):
        super().__init__()
        mask = swlstm.mask(sparsity, hidden, hidden, block, seed)
        self.hidden = hidden
        self.embed = torch.nn.Embedding(256, 4 * hidden, dtype=dtype)  # byte -> its input projection
        self.wh = swlstm.BlockSparseLinear(hidden, 4 * hidden, np.vstack([mask] * 4), block=block, dtype=dtype)
        self.head = torch.nn.Linear(hidden, 256, dtype=dtype)

    def forward(self, tokens, state=None):
        """tokens [B, T] (bytes) -> logits [B, T, 256] and the state (h, c) after the last step."""
        B, T = tokens.shape
        if state is None:
            zero = self.head.weight.new_zeros(B, self.hidden)
            state = (zero, zero)
        h, c = state
        xz = self.embed(tokens)
        hs = []
        for t in range(T):
            z = xz[:, t] + self.wh(h)
            i, f, g, o = z.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            hs.append(h)
        return self.head(torch.stack(hs, 1)), (h, c)


def batches(data, batch, seq, rng):
    """Random windows of seq + 1 bytes: inputs and next-byte targets."""
    while True:
        starts = rng.integers(0, len(data) - seq - 1, size=batch)
        win = torch.from_numpy(np.stack([data[s:s + seq + 1] for s in starts]).astype(np.int64))
        yield win[:, :-1], win[:, 1:]


def train(data, steps=100, device="cpu", dtype=torch.float32, hidden=256, block=16, sparsity="ws_4_0.1",
          batch=16, seq=32, lr=3e-3, seed=1, log_every=0):
    """Trains a SmallWorldLSTM on the bytes `data` (a uint8 array); returns the model and its
    per-step training losses in bits per character."""
    torch.manual_seed(seed)
    model = SmallWorldLSTM(hidden, block, sparsity, seed, dtype).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses, t0 = [], time.time()
    for step, (x, y) in zip(range(1, steps + 1), batches(data, batch, seq, np.random.default_rng(seed))):
        x, y = x.to(device), y.to(device)
        logits, _ = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, 256), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item() / math.log(2))
        if log_every and step % log_every == 0:
            print("step %d  train bpc %.3f  (%.1f s)" % (step, losses[-1], time.time() - t0), flush=True)
    return model, losses


def read_bytes(path):
    """The bytes of a text file, decompressed when it is gzip (.gz) or dictzip (.dz)."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gz else open)(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a text file (bytes)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--sparsity", default="ws_4_0.1")
    args = ap.parse_args()
    torch.set_num_threads(len(os.sched_getaffinity(0)))  # Debian's PyTorch starts with one thread
    data = read_bytes(args.data)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    model, losses = train(data, args.steps, args.device, dtype, args.hidden, args.block, args.sparsity, log_every=50)
    print("W_h: %s" % model.wh)
    print("mean train bpc of the last 50 steps: %.3f" % np.mean(losses[-50:]))


if __name__ == "__main__":
    main()
