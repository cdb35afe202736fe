"""swlstm from Python: block-sparse products and small-world masks of the swlstm C/CUDA
library (libswlstm.so, `make python`) through ctypes. numpy alone gives masks and checkpoints;
with PyTorch, BlockSparseLinear is an nn.Module whose weight holds only the stored blocks.

    import swlstm
    layout = swlstm.mask("ws_4_0.1", 1024, 1024, 32, seed=1)
    lin = swlstm.BlockSparseLinear(1024, 1024, layout, block=32).cuda()
    y = lin(x)
"""
import sys


def _require(module, apt, pip):
    """One clear ImportError, naming this interpreter, where the import would give a traceback."""
    try:
        __import__(module)
    except ImportError:
        raise ImportError(f"swlstm: {module} is missing for {sys.executable}: apt-get install {apt} "
                          f"(for /usr/bin/python3), or {sys.executable} -m pip install {pip}") from None


_require("numpy", "python3-numpy", "numpy")

from .ckpt import load  # noqa: E402
from .masks import Layout, mask, mask_stats  # noqa: E402


def __getattr__(name):  # torch is imported on first use only
    if name in ("BlockSparseLinear", "product"):
        _require("torch", "python3-torch", "torch")
        from . import linear
        return getattr(linear, name)
    raise AttributeError("module 'swlstm' has no attribute %r" % name)


__all__ = ["mask", "mask_stats", "load", "Layout", "BlockSparseLinear", "product"]
