"""swlstm from Python: block-sparse products and small-world masks of the swlstm C/CUDA
library (libswlstm.so, `make python`) through ctypes. numpy alone gives masks and checkpoints;
with PyTorch, BlockSparseLinear is an nn.Module whose weight holds only the stored blocks.

    import swlstm
    layout = swlstm.mask("ws_4_0.1", 1024, 1024, 32, seed=1)
    lin = swlstm.BlockSparseLinear(1024, 1024, layout, block=32).cuda()
    y = lin(x)
"""
import sys

try:
    import numpy  # noqa: F401
except ImportError:
    raise ImportError(f"swlstm needs numpy, which {sys.executable} cannot import: apt-get install python3-numpy "
                      f"(for /usr/bin/python3), or {sys.executable} -m pip install numpy") from None

from .ckpt import load  # noqa: E402
from .masks import Layout, mask, mask_stats  # noqa: E402


def __getattr__(name):  # torch is imported on first use only
    if name == "BlockSparseLinear":
        from .linear import BlockSparseLinear
        return BlockSparseLinear
    if name == "product":
        from .linear import product
        return product
    raise AttributeError("module 'swlstm' has no attribute %r" % name)


__all__ = ["mask", "mask_stats", "load", "Layout", "BlockSparseLinear", "product"]
