"""Checkpoint reading: a `swlstm train` checkpoint's tensors (named as `swlstm export` names
them), their moving average, block layouts and config."""
import ctypes
import json

import numpy as np

from . import _lib
from .masks import Layout


def load(path):
    """Reads a checkpoint. Returns a dict: "tensors" {name: float32 array} (dense matrices
    [rows, cols], vectors, block-sparse ones as their stored blocks [nnzb, bs, bs]); "ema" the
    same for the moving average ({} when the checkpoint has none); "layouts" {name: boolean
    (block rows, block cols) array} for the block-sparse ones (the LSTM's W_h stacks the four
    gates' copies of its mask); "indices" {name: (row_ptr, col_idx)}; "config" {key: value}
    as the C library reads it (every key; numbers, booleans and strings typed), "config_text" as
    stored, and "step" (None where not stored)."""
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.swlstm_ckpt_open(str(path).encode(), ctypes.byref(h)))
    try:
        text = _lib.lib.swlstm_ckpt_config(h).decode()
        step = _lib.lib.swlstm_ckpt_step(h)
        config = json.loads(_lib.lib.swlstm_ckpt_config_json(h).decode())
        out = {"tensors": {}, "ema": {}, "layouts": {}, "indices": {}, "config": config,
               "config_text": text, "step": None if step < 0 else int(step)}
        name, ndim, lay = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_void_p()
        shape = (ctypes.c_int64 * 3)()
        vals, ema = ctypes.POINTER(ctypes.c_float)(), ctypes.POINTER(ctypes.c_float)()
        for i in range(_lib.lib.swlstm_ckpt_ntensors(h)):
            _lib.check(_lib.lib.swlstm_ckpt_tensor(h, i, ctypes.byref(name), ctypes.byref(ndim), shape,
                                                   ctypes.byref(vals), ctypes.byref(ema), ctypes.byref(lay)))
            key, shp = name.value.decode(), tuple(shape[:ndim.value])
            count = int(np.prod(shp))
            out["tensors"][key] = np.ctypeslib.as_array(vals, (count,)).reshape(shp).copy()
            if ema:
                out["ema"][key] = np.ctypeslib.as_array(ema, (count,)).reshape(shp).copy()
            if lay.value:
                view = Layout.borrowed(lay.value, h)
                out["layouts"][key] = view.array()
                out["indices"][key] = (view.row_ptr.copy(), view.col_idx.copy())
        return out
    finally:
        _lib.lib.swlstm_ckpt_close(h)
