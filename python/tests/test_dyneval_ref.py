"""tools/dyneval_ref.py (PyTorch) against `swlstm eval --dynamic` on small trained checkpoints of
both cells: the same defaults (eta and lambda chosen on the valid split) and the same options
give the same static and dynamic bpc within 0.002 and the same choice."""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

from common import ROOT, TMP, need_torch, swlstm_cli

TOOLS = os.path.join(ROOT, "tools")
# A few seconds of training each on the CPU: enough that dynamic evaluation gains.
CELLS = {
    "lstm": dict(hidden_size=64, block_size=16, sparsity="ba_2"),
    "mlstm": dict(hidden_size=64, block_size=16, sparsity="ba_2", cell="mlstm", depth=2, init="identity"),
}
COMMON = dict(embed_size=16, num_layers=1, mask_seed=5, batch_size=8, seq_length=32, max_steps=500, warmup_steps=10,
              learning_rate=3e-3, eval_every=0, ema=0, threads=1)


def topics():
    """60 kB of lines, each of 60 words drawn from 5 of 36: text whose recent past tells the
    next words, which dynamic evaluation learns as it reads."""
    path = os.path.join(TMP, "topics.txt")
    if not os.path.exists(path):
        words = ("the quick brown fox jumps over a lazy dog while small worlds mix their blocks king queen river stone "
                 "green light house water bread paper under above cold warm night day song wind iron glass salt").split()
        rng, lines, size = np.random.default_rng(7), [], 0
        while size < 60000:
            topic = rng.choice(len(words), 5, replace=False)
            lines.append(" ".join(words[i] for i in rng.choice(topic, 60)) + ".\n")
            size += len(lines[-1])
        with open(path, "w") as f:
            f.write("".join(lines))
    return path


def trained(cell):
    """The safetensors export of a small model of `cell` trained for COMMON's steps (once)."""
    out = os.path.join(TMP, "dyn-" + cell)
    st = out + ".safetensors"
    if not os.path.exists(st):
        cfg = out + ".cfg"
        with open(cfg, "w") as f:
            f.write("data = %s\nsplit = 0.8,0.1,0.1\n" % topics())
            f.write("".join("%s = %s\n" % kv for kv in {**COMMON, **CELLS[cell]}.items()))
        swlstm_cli("train", cfg, "--out_dir", out)
        swlstm_cli("export", os.path.join(out, "latest.ckpt"), "--out", st, "--quiet")
    return out, st


@need_torch
class DynevalRefTest(unittest.TestCase):
    def both(self, cell, *opts):
        out, st = trained(cell)
        args = ["--split", "test", "--max-bytes", "1500", "--segment", "16", "--dyn-stats", "6000", "--json"] + list(opts)
        c = json.loads(swlstm_cli("eval", os.path.join(out, "latest.ckpt"), "--dynamic", *args))
        r = subprocess.run([sys.executable, os.path.join(TOOLS, "dyneval_ref.py"), st, "--quiet"] + args,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        p = json.loads(r.stdout)
        for key in ("bpc", "static_bpc"):
            self.assertLess(abs(c[key] - p[key]), 0.002, "%s %s: swlstm %s\ndyneval_ref %s" % (cell, key, c, p))
        for key in ("bytes", "static_bytes", "choice", "eta", "lambda"):
            self.assertEqual(c[key], p[key], "%s %s: swlstm %s\ndyneval_ref %s" % (cell, key, c, p))
        return c

    def test_default_choice(self):
        for cell in CELLS:
            c = self.both(cell)
            self.assertEqual((c["choice"], c["choice_bytes"]), ("chosen", 135), c)
            self.assertLess(c["bpc"], c["static_bpc"] - 0.02, "%s: dynamic evaluation should gain here: %s" % (cell, c))

    def test_given_eta_warm_streams(self):
        for cell in CELLS:
            self.both(cell, "--eta", "1e-4", "--lambda", "0.01", "--static", "warm", "--warmup", "64", "--streams", "2")


if __name__ == "__main__":
    unittest.main()
