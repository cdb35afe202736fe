#!/usr/bin/env python3
"""swlstm_torch.py: a swlstm model in PyTorch, loaded from `swlstm export` (.safetensors).

    ./swlstm export checkpoints/tiny/best.ckpt --out tiny.safetensors
    python3 tools/swlstm_torch.py tiny.safetensors --data data/corpus.txt --split valid

prints the bits per character that `swlstm eval CKPT --split valid` prints, computed the same
way: the split cut into stripes, each run from a zero state with the state carried across
windows of seq_length. As a module:

    from swlstm_torch import SwLSTM
    model = SwLSTM.load("tiny.safetensors")          # the EMA weights when the file has them
    logits, state = model(tokens)                   # tokens: LongTensor [B, T] of bytes

The math follows src/model/model_step.c and src/ops/lstm_cpu.c: embedding -> per layer z = W_x x + W_h h,
optional per-gate layer norm (eps 1e-5, gain, no shift), + bias, gates i, f, g, o (sigmoid, sigmoid,
tanh, sigmoid), c = f c + i g, h = o tanh(c) -> head -> logits. With `cell = mlstm`
(src/model/mlstm_step.c), lin(v) = LayerNorm(W v) with gain and shift: m = lin_m(x), a = lin_a(x);
u = lin_s0(h) * m; u = relu(lin_s1(u) + a); u = relu(lin_sj(u)) for j = 2..depth-1; z = W_h u,
then the gates as above with layer norm. Block-sparse matrices stay parameters of their stored
blocks; each forward scatters them into the dense matrix.
"""
import argparse
import gzip
import json
import math
import struct
import sys
import time
import zipfile

from need import cores

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    from need import missing
    missing("swlstm_torch", "torch", "python3-torch", "torch")

LN_EPS = 1e-5
DTYPES = {"F32": torch.float32, "I32": torch.int32, "F64": torch.float64, "I64": torch.int64}


def die(msg):
    sys.exit("swlstm_torch: error: " + msg)


def read_safetensors(path):
    """(tensors, metadata): with the `safetensors` package when present, else by hand."""
    try:
        from safetensors import safe_open
    except ImportError:
        safe_open = None
    if safe_open is not None:
        with safe_open(path, framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, f.metadata() or {}
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        die(f"{path}: not a safetensors file ({len(raw)} bytes)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        die(f"{path}: header of {n} bytes does not fit in the file")
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        start, end = t["data_offsets"]
        if t["dtype"] not in DTYPES or end > len(data):
            die(f"{path}: tensor '{name}': dtype {t['dtype']} or offsets {start}..{end} not readable")
        buf = bytearray(data[start:end])  # a copy: frombuffer needs writable memory
        flat = torch.frombuffer(buf, dtype=DTYPES[t["dtype"]]) if buf else torch.empty(0, dtype=DTYPES[t["dtype"]])
        tensors[name] = flat.reshape(t["shape"])
    return tensors, meta


def parse_config(text):
    """The checkpoint's `key = value` text (strings quoted with \\" and \\\\ escapes)."""
    cfg = {}
    for line in text.splitlines():
        if "=" not in line:
            continue
        key, value = (s.strip() for s in line.split("=", 1))
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        cfg[key] = value
    return cfg


class BlockSparse(torch.nn.Module):
    """A matrix [rows, cols] stored as blocks [nnzb, bs, bs] in block-row (CSR) order."""

    def __init__(self, blocks, row_ptr, col_idx, cols):
        super().__init__()
        self.blocks = torch.nn.Parameter(blocks.float().clone())
        nnzb, bs, _ = blocks.shape
        row_ptr = row_ptr.long()
        self.nbr, self.nbc, self.bs = row_ptr.numel() - 1, cols // bs, bs
        self.register_buffer("block_row", torch.repeat_interleave(torch.arange(self.nbr), row_ptr[1:] - row_ptr[:-1]))
        self.register_buffer("block_col", col_idx.long().clone())
        if self.block_row.numel() != nnzb or self.block_col.numel() != nnzb:
            raise ValueError(f"block indices of {self.block_row.numel()} blocks for {nnzb} stored blocks")

    def dense(self):
        w = self.blocks.new_zeros(self.nbr, self.nbc, self.bs, self.bs)
        w = w.index_put((self.block_row, self.block_col), self.blocks)
        return w.permute(0, 2, 1, 3).reshape(self.nbr * self.bs, self.nbc * self.bs)


class SwLSTM(torch.nn.Module):
    def __init__(self, tensors, metadata, ema=None):
        """ema: None (the EMA weights when the file has them, as `swlstm eval`), True or False."""
        super().__init__()
        self.config = parse_config(metadata.get("config", ""))
        self.metadata = dict(metadata)
        if ema is None:
            ema = "ema.emb" in tensors
        pre = "ema." if ema else ""
        self.ema = ema
        if ema and "ema.emb" not in tensors:
            raise ValueError("this file has no EMA weights (no ema.* tensors)")

        def get(name):
            if pre + name not in tensors:
                raise ValueError(f"tensor '{pre + name}' missing from the file")
            return tensors[pre + name].float().clone()

        self.emb = torch.nn.Parameter(get("emb"))
        self.H = tensors["head.w"].shape[1]
        self.mlstm = self.config.get("cell", "lstm") == "mlstm"
        self.depth = int(self.config["depth"]) if self.mlstm else 0
        self.wx, self.wh = torch.nn.ModuleList(), torch.nn.ModuleList()
        self.b, self.ln = torch.nn.ParameterList(), torch.nn.ParameterList()
        self.xln, self.ws, self.sln = torch.nn.ParameterList(), torch.nn.ModuleList(), torch.nn.ParameterList()
        self.L = 0
        while f"l{self.L}.wh" in tensors:
            l = self.L
            self.wh.append(self._matrix(tensors, get, f"l{l}.wh"))
            self.wx.append(self._matrix(tensors, get, f"l{l}.wx"))
            self.b.append(torch.nn.Parameter(get(f"l{l}.b")))
            if f"l{l}.ln" in tensors:
                self.ln.append(torch.nn.Parameter(get(f"l{l}.ln")))
            if self.mlstm:  # per layer: xln, then depth (matrix, norm) pairs, flat in these lists
                self.xln.append(torch.nn.Parameter(get(f"l{l}.xln")))
                for j in range(self.depth):
                    self.ws.append(self._matrix(tensors, get, f"l{l}.s{j}.w"))
                    self.sln.append(torch.nn.Parameter(get(f"l{l}.s{j}.ln")))
            self.L += 1
        if self.L == 0:
            raise ValueError("no LSTM layers (l0.wh) in the file")
        self.layer_norm = len(self.ln) == self.L
        self.head_w = torch.nn.Parameter(get("head.w"))
        self.head_b = torch.nn.Parameter(get("head.b"))

    def _matrix(self, tensors, get, name):
        w = get(name)
        if name + ".row_ptr" not in tensors:
            return _Dense(w)
        return BlockSparse(w, tensors[name + ".row_ptr"], tensors[name + ".col_idx"], self.H)

    @classmethod
    def load(cls, path, ema=None, device="cpu"):
        tensors, meta = read_safetensors(path)
        if meta.get("format") != "swlstm":
            raise ValueError(f"{path}: not a swlstm export (metadata format = {meta.get('format')!r})")
        return cls(tensors, meta, ema).to(device)

    def init_state(self, B):
        z = self.emb.new_zeros(B, self.H)
        return [(z, z) for _ in range(self.L)]

    def forward(self, tokens, state=None):
        """tokens [B, T] (bytes as int64) -> logits [B, T, 256] and the state after step T."""
        B, T = tokens.shape
        state = list(state) if state is not None else self.init_state(B)
        x = self.emb[tokens]                                   # [B, T, E]
        for l in range(self.L):
            wh = self.wh[l].dense()
            zx = x @ self.wx[l].dense().t()                    # the whole window at once
            h, c = state[l]
            hs = []
            if self.mlstm:
                H, xln = self.H, self.xln[l]
                m, a = _layer_norm(zx[..., :H], xln[:H], xln[H:2 * H]), _layer_norm(zx[..., H:], xln[2 * H:3 * H], xln[3 * H:])
                ws = [w.dense() for w in self.ws[l * self.depth:(l + 1) * self.depth]]
            for t in range(T):
                if self.mlstm:
                    z = self._internal(h, m[:, t], a[:, t], ws, l) @ wh.t()
                else:
                    z = zx[:, t] + h @ wh.t()
                h, c = self._cell(z, c, l)
                hs.append(h)
            state[l] = (h, c)
            x = torch.stack(hs, 1)
        return x @ self.head_w.t() + self.head_b, state

    def _internal(self, h, m, a, ws, l):
        """The mlstm's internal steps of one time step: what the gates read instead of h."""
        H, u = self.H, h
        for j, w in enumerate(ws):
            ln = self.sln[l * self.depth + j]
            s = _layer_norm(u @ w.t(), ln[:H], ln[H:])
            u = s * m if j == 0 else torch.relu(s + a) if j == 1 else torch.relu(s)
        return u

    def _cell(self, z, c, l):
        H = self.H
        if self.layer_norm:
            z = _layer_norm(z.view(-1, 4, H), 1, 0).reshape(-1, 4 * H) * self.ln[l]
        z = z + self.b[l]
        i, f, g, o = torch.sigmoid(z[:, :H]), torch.sigmoid(z[:, H:2 * H]), torch.tanh(z[:, 2 * H:3 * H]), torch.sigmoid(z[:, 3 * H:])
        c = f * c + i * g
        return o * torch.tanh(c), c


def _layer_norm(v, gain, shift):
    """Over the last axis, as src/ops/layernorm.h: biased variance, eps 1e-5."""
    mean = v.mean(-1, keepdim=True)
    var = ((v - mean) ** 2).mean(-1, keepdim=True)
    return (v - mean) * torch.rsqrt(var + LN_EPS) * gain + shift


class _Dense(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)

    def dense(self):
        return self.w


# ---- `swlstm eval` in PyTorch: data, splits, stripes ----

def read_data(path):
    """Bytes of a raw file, a .gz (or dictzip .dz) or a single-entry .zip, as src/train/data.c reads them."""
    if path.endswith((".gz", ".dz")):
        with gzip.open(path, "rb") as f:
            return f.read()
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if len(names) != 1:
                die(f"{path}: a zip with {len(names)} entries (expected one)")
            return z.read(names[0])
    with open(path, "rb") as f:
        return f.read()


def split_sizes(split, n):
    """src/train/data.c split_sizes: fractions (with '.', 'e' or 'E') or byte counts."""
    parts = split.split(",")
    fractions = any(ch in split for ch in ".eE")
    sizes, used = [], 0
    for p in parts:
        if fractions:
            x = float(p) * n
            r = round(x)  # nearbyint: ties to even, as Python's round
            want = int(r) if abs(x - r) <= 1e-6 else math.floor(x)
        else:
            want = int(p)
        sizes.append(min(want, n - used))
        used += sizes[-1]
    return sizes


def eval_batch_for(n, batch, T):
    return max(1, min(n // (T + 1), batch))


def fmt_eta(secs):
    s = int(secs + 0.5)
    return f"{s // 3600}h{s // 60 % 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    """swlstm's progress line (src/base/progress.c) on stderr: "what: share | spent | eta ETA",
    redrawn in place at most twice a second while `on` (progress_wanted), erased by done()."""

    def __init__(self, what, total, on):
        self.what, self.total, self.on = what, total, on
        self.t0 = self.shown = time.monotonic()

    def show(self, done):
        now = time.monotonic()
        if not self.on or now - self.shown < 0.5 or done <= 0:
            return
        self.shown, spent = now, now - self.t0
        print(f"\r{self.what}: {100 * done / self.total:5.1f}% | {fmt_eta(spent)} | "
              f"eta {fmt_eta(spent / done * (self.total - done))}  ", end="", file=sys.stderr, flush=True)

    def done(self):
        if self.on and self.shown > self.t0:
            print("\r" + " " * 72 + "\r", end="", file=sys.stderr, flush=True)


def progress_wanted(quiet):
    """As swlstm's verbs: on a terminal's stderr, unless --quiet."""
    return not quiet and sys.stderr.isatty()


@torch.no_grad()
def eval_bpc(model, data, batch, T, device="cpu", progress=False, what="eval"):
    """Mean bits per character over B stripes of `data`, each from a zero state, windows of
    T steps with carried state: what src/train/eval.c eval_bpc computes."""
    B = eval_batch_for(len(data), batch, T)
    stripe = len(data) // B
    if stripe < 2:
        die(f"evaluation span of {len(data)} bytes is too short for {B} stripes")
    rows = torch.frombuffer(bytearray(data[:B * stripe]), dtype=torch.uint8).view(B, stripe).long().to(device)
    state, nats, pr = None, 0.0, Progress(what, stripe - 1, progress)
    for pos in range(0, stripe - 1, T):
        n = min(T, stripe - 1 - pos)
        logits, state = model(rows[:, pos:pos + n], state)
        nats += F.cross_entropy(logits.reshape(-1, 256).double(), rows[:, pos + 1:pos + 1 + n].reshape(-1), reduction="sum").item()
        pr.show(pos + n)
    pr.done()
    count = B * (stripe - 1)
    return nats / count / math.log(2), count


def main():
    ap = argparse.ArgumentParser(description="bits per character of an exported swlstm model (as swlstm eval)")
    ap.add_argument("model", help="MODEL.safetensors from `swlstm export`")
    ap.add_argument("--data", help="data file (default: the config's data)")
    ap.add_argument("--split", default="valid", choices=["train", "valid", "test"])
    ap.add_argument("--max-bytes", type=int, default=0, help="evaluate only the first N bytes of the split")
    ap.add_argument("--batch-size", type=int, default=0, help="stripes (default: the config's batch_size)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--raw-weights", action="store_true", help="the trained weights, not their EMA (as swlstm eval --raw-weights)")
    ap.add_argument("--double", action="store_true", help="compute in float64")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr (shown only on a terminal)")
    a = ap.parse_args()
    torch.set_num_threads(cores())
    try:
        model = SwLSTM.load(a.model, ema=False if a.raw_weights else None, device=a.device)
    except (OSError, ValueError) as e:
        die(str(e))
    if a.double:
        model = model.double()
    cfg = model.config
    path = a.data or cfg["data"]
    try:
        data = read_data(path)
    except OSError as e:
        die(f"data file '{path}': {e.strerror or e}")
    sizes = split_sizes(cfg["split"], len(data))
    which = ["train", "valid", "test"].index(a.split)
    start = sum(sizes[:which])
    n = min(sizes[which], a.max_bytes) if a.max_bytes else sizes[which]
    B = eval_batch_for(n, a.batch_size or int(cfg["batch_size"]), int(cfg["seq_length"]))
    bpc, count = eval_bpc(model, data[start:start + n], B, int(cfg["seq_length"]), a.device,
                          progress=progress_wanted(a.quiet))
    if a.json:
        print(json.dumps({"bpc": round(bpc, 6), "bytes": count, "split": a.split, "protocol": "stripes", "stripes": B}))
    else:
        print(f"{a.split} bpc {bpc:.6f} over {count} bytes (protocol stripes: {B} stripes, each from a zero state; "
              f"swlstm eval --protocol stripes)")


if __name__ == "__main__":
    main()
