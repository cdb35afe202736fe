"""Block layouts: the masks `swlstm mask` draws (src/sparse/mask.c), their graph statistics,
and the C layout (CSR indices of the stored blocks) the products run on."""
import ctypes

import numpy as np

from . import _lib


def mask(kind, rows, cols, block, seed=1):
    """The boolean block layout of shape (rows // block, cols // block) that `swlstm mask` draws
    for descriptor `kind` ("dense", "random_<density>", "ba_<m>", "ws_<k>_<p>") and `seed`."""
    for what, v in (("rows", rows), ("cols", cols), ("block", block), ("seed", seed)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < (0 if what == "seed" else 1):
            raise ValueError("swlstm.mask: %s = %r: expected a %s integer" % (what, v, "non-negative" if what == "seed" else "positive"))
    if rows % block or cols % block:
        raise ValueError("swlstm.mask: rows %d and cols %d must be multiples of block %d" % (rows, cols, block))
    if not isinstance(kind, str):
        raise TypeError("swlstm.mask: kind = %r: expected a descriptor string such as 'ws_4_0.1'" % (kind,))
    nr, nc = rows // block, cols // block
    out = np.zeros((nr, nc), dtype=np.uint8)
    _lib.check(_lib.lib.swlstm_mask(kind.encode(), nr, nc, int(seed), _lib.u8_ptr(out)))
    return out.astype(bool)


def as_layout_array(layout, what="layout"):
    """A C-contiguous uint8 (0/1) copy of a 2-D boolean layout (numpy, torch or nested lists)."""
    if hasattr(layout, "detach"):  # a torch tensor
        layout = layout.detach().cpu().numpy()
    a = np.asarray(layout)
    if a.ndim != 2:
        raise ValueError("swlstm: %s has shape %s: expected 2-D (block rows, block cols)" % (what, a.shape))
    if a.dtype != bool and not (np.issubdtype(a.dtype, np.integer) and np.isin(a, (0, 1)).all()):
        raise TypeError("swlstm: %s has dtype %s: expected bool (or 0/1 integers)" % (what, a.dtype))
    return np.ascontiguousarray(a.astype(np.uint8))


def mask_stats(layout):
    """Graph statistics of a block layout, as `swlstm mask` prints them: blocks, density,
    deg_min, deg_mean, deg_max (stored blocks per block row), avg_path (mean shortest path
    length, the layout read as a graph) and clustering (mean local clustering coefficient)."""
    a = as_layout_array(layout)
    s = _lib.MaskStats()
    _lib.check(_lib.lib.swlstm_mask_stats_of(_lib.u8_ptr(a), a.shape[0], a.shape[1], ctypes.byref(s)))
    return {"blocks": int(s.blocks), "density": s.density, "deg_min": s.deg_min, "deg_mean": s.deg_mean,
            "deg_max": s.deg_max, "avg_path": s.avg_path, "clustering": s.clustering}


class Layout:
    """The C layout of a weight [rows * block, cols * block] with the stored blocks of a boolean
    (rows, cols) array, in block-row order; row_ptr and col_idx are its CSR indices."""

    def __init__(self, layout, block):
        a = as_layout_array(layout)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.swlstm_layout_new(_lib.u8_ptr(a), a.shape[0], a.shape[1], int(block), ctypes.byref(h)))
        self._init_from(h, owned=True)

    @classmethod
    def borrowed(cls, handle, owner):
        """A view of a layout that another object (a checkpoint) owns and keeps alive."""
        self = cls.__new__(cls)
        self._owner = owner
        self._init_from(ctypes.c_void_p(handle), owned=False)
        return self

    def _init_from(self, h, owned):
        self._h, self._owned = h, owned
        rows, cols, bs, nnzb = (ctypes.c_int() for _ in range(4))
        _lib.lib.swlstm_layout_shape(h, ctypes.byref(rows), ctypes.byref(cols), ctypes.byref(bs), ctypes.byref(nnzb))
        self.rows, self.cols, self.block, self.nnzb = rows.value, cols.value, bs.value, nnzb.value
        self.row_ptr = np.zeros(self.rows // self.block + 1, dtype=np.int32)
        self.col_idx = np.zeros(max(self.nnzb, 1), dtype=np.int32)[:self.nnzb]
        _lib.lib.swlstm_layout_indices(h, self.row_ptr.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                                       self.col_idx.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
        self.block_row = np.repeat(np.arange(len(self.row_ptr) - 1, dtype=np.int64), np.diff(self.row_ptr))

    def array(self):
        """The boolean (block rows, block cols) layout."""
        a = np.zeros((self.rows // self.block, self.cols // self.block), dtype=bool)
        a[self.block_row, self.col_idx] = True
        return a

    def __reduce__(self):  # copies and pickles hold their own C layout
        return (Layout, (self.array(), self.block))

    def __del__(self, _free=_lib.lib.swlstm_layout_free):  # bound now: module globals may be gone at exit
        if getattr(self, "_owned", False) and self._h:
            _free(self._h)
            self._h = None
