"""swlstm.load against `swlstm export` of the same checkpoint, and its masks against
swlstm.mask."""
import os
import unittest

import numpy as np

import swlstm
from common import CKPT_OPTS, TMP, read_safetensors, swlstm_cli, tiny_checkpoint


class LoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.path = tiny_checkpoint()
        cls.ck = swlstm.load(cls.path)

    def test_tensors_equal_the_export(self):
        st = os.path.join(TMP, "tiny.safetensors")
        swlstm_cli("export", self.path, "--out", st)
        ref, meta = read_safetensors(st)
        names = [n for n in ref if not n.startswith("ema.") and not n.endswith((".row_ptr", ".col_idx"))]
        self.assertEqual(sorted(names), sorted(self.ck["tensors"]))
        for n in names:
            self.assertEqual(self.ck["tensors"][n].dtype, np.float32)
            np.testing.assert_array_equal(self.ck["tensors"][n], ref[n], err_msg=n)
            np.testing.assert_array_equal(self.ck["ema"][n], ref["ema." + n], err_msg=n)
        self.assertEqual(sorted(self.ck["indices"]), sorted(n[:-8] for n in ref if n.endswith(".row_ptr")))
        for n, (row_ptr, col_idx) in self.ck["indices"].items():
            np.testing.assert_array_equal(row_ptr, ref[n + ".row_ptr"])
            np.testing.assert_array_equal(col_idx, ref[n + ".col_idx"])
        self.assertEqual(self.ck["config_text"], meta["config"])
        self.assertEqual(self.ck["step"], int(meta["step"]))
        self.assertEqual(self.ck["step"], CKPT_OPTS["max_steps"])

    def test_config_is_the_librarys(self):
        cfg, text = self.ck["config"], self.ck["config_text"]
        self.assertEqual({k: cfg[k] for k in CKPT_OPTS}, CKPT_OPTS)  # typed: 64 an int, 0.9 a float
        self.assertEqual(len(cfg), len(text.splitlines()))
        self.assertIs(cfg["layer_norm"], False)
        self.assertEqual((type(cfg["learning_rate"]), cfg["cell"]), (float, "lstm"))
        self.assertIn('learning_rate = %r\n' % cfg["learning_rate"], text)

    def test_layouts_are_the_drawn_masks(self):
        H, bs = CKPT_OPTS["hidden_size"], CKPT_OPTS["block_size"]
        self.assertEqual(self.ck["config"]["sparsity"], CKPT_OPTS["sparsity"])
        m = swlstm.mask(CKPT_OPTS["sparsity"], H, H, bs, CKPT_OPTS["mask_seed"])
        wh = [n for n in self.ck["layouts"] if n.endswith(".wh")]
        self.assertTrue(wh, sorted(self.ck["layouts"]))
        np.testing.assert_array_equal(self.ck["layouts"][wh[0]], np.vstack([m] * 4))
        for n, lay in self.ck["layouts"].items():
            self.assertEqual(self.ck["tensors"][n].shape, (int(lay.sum()), bs, bs))

    def test_bad_files_raise(self):
        with self.assertRaises(RuntimeError) as e:
            swlstm.load(os.path.join(TMP, "missing.ckpt"))
        self.assertIn("missing.ckpt", str(e.exception))
        bad = os.path.join(TMP, "garbage.ckpt")
        with open(bad, "wb") as f:
            f.write(b"not a checkpoint" * 10)
        with self.assertRaises(RuntimeError):
            swlstm.load(bad)
        cut = os.path.join(TMP, "cut.ckpt")
        with open(self.path, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:-100])
        with self.assertRaises(RuntimeError):
            swlstm.load(cut)
