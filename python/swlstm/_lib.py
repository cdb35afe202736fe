"""ctypes over libswlstm.so (src/api/swlstm_api.h): loading, prototypes, error checks."""
import ctypes
import os
from ctypes import POINTER, c_char_p, c_double, c_float, c_int, c_int32, c_int64, c_uint8, c_uint64, c_void_p

ABI_VERSION = 3
CPU, CUDA = 0, 1
F32, BF16 = 0, 1
_ERRORS = {1: ValueError, 2: RuntimeError, 3: RuntimeError}


class MaskStats(ctypes.Structure):
    _fields_ = [("blocks", c_int64), ("density", c_double), ("deg_min", c_int32), ("deg_max", c_int32),
                ("deg_mean", c_double), ("avg_path", c_double), ("clustering", c_double)]


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("SWLSTM_LIB"):
        yield os.environ["SWLSTM_LIB"]
    yield os.path.join(here, "libswlstm.so")                                   # make python copies it here
    for build in ("pic", "pic-cpu"):                                         # or a build dir
        yield os.path.join(here, "..", "..", "build", build, "libswlstm.so")


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            lib = ctypes.CDLL(os.path.abspath(path))
            break
        tried.append(path)
    else:
        raise ImportError("swlstm: libswlstm.so not found (tried %s); run `make python` in the swlstm "
                          "repository, or set SWLSTM_LIB" % ", ".join(tried))
    protos = {
        "swlstm_last_error": (c_char_p, []),
        "swlstm_abi_version": (c_int, []),
        "swlstm_has_cuda": (c_int, []),
        "swlstm_mask": (c_int, [c_char_p, c_int, c_int, c_uint64, POINTER(c_uint8)]),
        "swlstm_mask_stats_of": (c_int, [POINTER(c_uint8), c_int, c_int, POINTER(MaskStats)]),
        "swlstm_layout_new": (c_int, [POINTER(c_uint8), c_int, c_int, c_int, POINTER(c_void_p)]),
        "swlstm_layout_free": (None, [c_void_p]),
        "swlstm_layout_shape": (None, [c_void_p] + [POINTER(c_int)] * 4),
        "swlstm_layout_indices": (None, [c_void_p, POINTER(c_int32), POINTER(c_int32)]),
        "swlstm_fwd": (c_int, [c_void_p, c_int, c_int, c_int, c_void_p, c_void_p, c_void_p, c_int, c_int, c_void_p]),
        "swlstm_bwd_data": (c_int, [c_void_p, c_int, c_int, c_int, c_void_p, c_void_p, c_void_p, c_int, c_int,
                                    c_void_p]),
        "swlstm_bwd_weight": (c_int, [c_void_p, c_int, c_int, c_void_p, c_void_p, c_void_p, c_int, c_void_p]),
        "swlstm_ckpt_open": (c_int, [c_char_p, POINTER(c_void_p)]),
        "swlstm_ckpt_close": (None, [c_void_p]),
        "swlstm_ckpt_config": (c_char_p, [c_void_p]),
        "swlstm_ckpt_config_json": (c_char_p, [c_void_p]),
        "swlstm_ckpt_step": (c_int64, [c_void_p]),
        "swlstm_ckpt_ntensors": (c_int, [c_void_p]),
        "swlstm_ckpt_tensor": (c_int, [c_void_p, c_int, POINTER(c_char_p), POINTER(c_int), POINTER(c_int64),
                                       POINTER(POINTER(c_float)), POINTER(POINTER(c_float)), POINTER(c_void_p)]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    if lib.swlstm_abi_version() != ABI_VERSION:
        raise ImportError("swlstm: %s has ABI version %d, this package expects %d; run `make python` again"
                          % (path, lib.swlstm_abi_version(), ABI_VERSION))
    return lib


lib = _load()


def check(rc):
    """Raises the library's last error for a non-zero return code."""
    if rc:
        raise _ERRORS.get(rc, RuntimeError)("swlstm: " + lib.swlstm_last_error().decode(errors="replace"))


def u8_ptr(a):
    """A uint8 pointer into a C-contiguous numpy array."""
    return a.ctypes.data_as(POINTER(c_uint8))
