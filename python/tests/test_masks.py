"""swlstm.mask and mask_stats against `swlstm mask` (its --image PNG holds one pixel per
block at 256 to 4096 blocks a side; --json its statistics)."""
import json
import os
import struct
import unittest
import zlib

import numpy as np

import swlstm
from common import TMP, swlstm_cli


def read_gray_png(path):
    """An 8-bit greyscale PNG written with filter type 0 on every scanline (src/io/png.c)."""
    with open(path, "rb") as f:
        data = f.read()
    pos, idat, w, h = 8, b"", None, None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, w + 1)
    assert (raw[:, 0] == 0).all(), "a scanline filter other than none"
    return raw[:, 1:]


KINDS = ["dense", "random_0.05", "ba_3", "ws_8_0.1"]


class MaskTest(unittest.TestCase):
    def test_blocks_equal_the_cli_image(self):
        for kind in KINDS:
            for seed in (1, 9):
                png = os.path.join(TMP, "mask-%s-%d.png" % (kind, seed))
                swlstm_cli("mask", "--hidden", 256 * 8, "--block", 8, "--sparsity", kind, "--seed", seed,
                           "--image", png, "--json")
                m = swlstm.mask(kind, 256 * 8, 256 * 8, 8, seed)
                self.assertEqual(m.shape, (256, 256))
                self.assertEqual(m.dtype, bool)
                np.testing.assert_array_equal(m, read_gray_png(png) == 0, err_msg="%s seed %d" % (kind, seed))

    def test_stats_equal_the_cli(self):
        for kind in KINDS:
            out = json.loads(swlstm_cli("mask", "--hidden", 512, "--block", 16, "--sparsity", kind, "--seed", 4, "--json"))
            s = swlstm.mask_stats(swlstm.mask(kind, 512, 512, 16, 4))
            cli = out["mask"]
            self.assertEqual(s["blocks"], cli["blocks"])
            for k in ("deg_min", "deg_max"):
                self.assertEqual(s[k], cli[k], k)
            for k in ("density", "deg_mean", "avg_path", "clustering"):
                self.assertAlmostEqual(s[k], cli[k], delta=1e-5 * max(1.0, abs(cli[k])), msg="%s %s" % (kind, k))

    def test_rectangular_and_seeded(self):
        a = swlstm.mask("random_0.25", 256, 512, 32, 3)
        self.assertEqual(a.shape, (8, 16))
        self.assertTrue(a.any(axis=0).all() and a.any(axis=1).all())
        np.testing.assert_array_equal(a, swlstm.mask("random_0.25", 256, 512, 32, 3))
        self.assertFalse((a == swlstm.mask("random_0.25", 256, 512, 32, 4)).all())

    def test_bad_input_raises(self):
        bad = [("ws_4_0.1", 256, 512, 32, 1),   # ws needs a square layout
               ("nope", 256, 256, 32, 1),
               ("random_2", 256, 256, 32, 1),
               ("dense", 250, 256, 32, 1),       # not a multiple of block
               ("dense", 0, 256, 32, 1),
               ("dense", 256, 256, 32, -1),
               (None, 256, 256, 32, 1)]
        for args in bad:
            with self.assertRaises((ValueError, TypeError), msg=str(args)):
                swlstm.mask(*args)
        for layout in (np.zeros((3, 3, 3), bool), np.array([[0, 2], [1, 1]]), np.zeros((4, 4), np.float32)):
            with self.assertRaises((ValueError, TypeError)):
                swlstm.mask_stats(layout)
        with self.assertRaises(ValueError):
            swlstm.Layout(np.eye(4, dtype=bool)[:, [0, 1, 2, 2]], 16)   # an empty block column
        with self.assertRaises(ValueError):
            swlstm.Layout(np.ones((4, 4), bool), 12)
