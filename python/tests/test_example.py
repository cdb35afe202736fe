"""The example (python/examples/char_lm.py): a few training steps lower the loss."""
import unittest

import numpy as np

from common import corpus, device_or_skip, need_torch, torch


@need_torch
class ExampleTest(unittest.TestCase):
    def test_training_steps_lower_the_loss(self):
        import char_lm
        dev = device_or_skip(self)
        data = np.fromfile(corpus(), dtype=np.uint8)
        dtypes = [torch.float32] + ([torch.bfloat16] if dev == "cuda" else [])
        for dtype in dtypes:
            model, losses = char_lm.train(data, steps=30, device=dev, dtype=dtype, hidden=64, block=16,
                                          sparsity="ws_2_0.2", batch=8, seq=16, lr=1e-2)
            self.assertTrue(all(np.isfinite(losses)), losses)
            self.assertLess(np.mean(losses[-5:]), losses[0] - 1.0, "%s: %s" % (dtype, losses))
            self.assertIsNotNone(model.wh.weight.grad)
