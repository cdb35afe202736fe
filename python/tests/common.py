"""Shared helpers of the binding's tests: the device under test, the CLI, a tiny checkpoint."""
import atexit
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEVICE = os.environ.get("SWLSTM_TEST_DEVICE", "cpu")
TMP = tempfile.mkdtemp(prefix="swlstm-py-")
atexit.register(shutil.rmtree, TMP, True)

try:
    import torch
except ImportError:  # numpy alone: the mask and checkpoint tests still run
    torch = None


def need_torch(cls):
    """Skips without torch on the CPU run; the CUDA run (make test-gpu) needs it."""
    return unittest.skipIf(torch is None and DEVICE == "cpu", "torch is not installed")(cls)


def device_or_skip(test):
    """The device under test; skips where it is CUDA and none is usable."""
    import swlstm._lib as L
    if DEVICE == "cuda":
        if not L.lib.swlstm_has_cuda():
            test.skipTest("libswlstm.so was built without CUDA")
        if not torch.cuda.is_available():
            test.skipTest("torch sees no CUDA device")
    return DEVICE


def swlstm_cli(*args):
    """Runs the swlstm binary (SWLSTM_BIN, else ./swlstm); returns its stdout."""
    exe = os.environ.get("SWLSTM_BIN", os.path.join(ROOT, "swlstm"))
    if not os.path.isabs(exe):
        exe = os.path.join(ROOT, exe)
    r = subprocess.run([exe] + [str(a) for a in args], cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError("swlstm %s: exit %d\n%s%s" % (" ".join(map(str, args)), r.returncode, r.stdout, r.stderr))
    return r.stdout


def corpus():
    """A small text file: words drawn with a fixed seed (the trainer needs some bytes)."""
    path = os.path.join(TMP, "corpus.txt")
    if not os.path.exists(path):
        words = "the quick brown fox jumps over a lazy dog while small worlds mix their blocks".split()
        rng = np.random.default_rng(7)
        text = " ".join(words[i] for i in rng.integers(0, len(words), 8000)) + "\n"
        with open(path, "w") as f:
            f.write(text)
    return path


CKPT_OPTS = dict(hidden_size=64, embed_size=8, block_size=16, num_layers=2, sparsity="ws_2_0.2", mask_seed=5,
                 batch_size=4, seq_length=16, max_steps=3, warmup_steps=1, eval_every=0, ema=0.9, threads=1)


def tiny_checkpoint():
    """A checkpoint of 3 steps of a 2-layer small-world model (trained once per run)."""
    out = os.path.join(TMP, "ckpt")
    path = os.path.join(out, "latest.ckpt")
    if not os.path.exists(path):
        cfg = os.path.join(TMP, "tiny.cfg")
        with open(cfg, "w") as f:
            f.write("data = %s\nsplit = 0.8,0.1,0.1\n" % corpus())
            f.write("".join("%s = %s\n" % kv for kv in CKPT_OPTS.items()))
        swlstm_cli("train", cfg, "--out_dir", out)
    return path


def read_safetensors(path):
    """{name: array} and the metadata of a safetensors file (swlstm export)."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    types = {"F32": np.float32, "I32": np.int32}
    out = {}
    for name, d in head.items():
        if name == "__metadata__":
            continue
        b, e = d["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=types[d["dtype"]]).reshape(d["shape"])
    return out, head.get("__metadata__", {})
