"""BlockSparseLinear: y = x W^T (+ bias) with W block-sparse, its weight only the stored
blocks [nnzb, block, block]; forward and both gradients run swlstm's kernels (the CPU
reference or the CUDA backend, on torch's current stream)."""
import math

import numpy as np
import torch

from . import _lib
from .masks import Layout

_DTYPES = (torch.float32, torch.bfloat16)


def _check_operand(t, what, dtype, device):
    if not isinstance(t, torch.Tensor):
        raise TypeError("swlstm: %s is a %s: expected a torch.Tensor" % (what, type(t).__name__))
    if t.dtype != dtype:
        raise TypeError("swlstm: %s has dtype %s: expected %s (the weight's)" % (what, t.dtype, dtype))
    if t.device != device:
        raise ValueError("swlstm: %s is on %s: expected %s (the weight's)" % (what, t.device, device))
    if not t.is_contiguous():
        raise ValueError("swlstm: %s is not contiguous (call .contiguous() first)" % what)
    if t.device.type == "cuda" and t.data_ptr() % 16:
        raise ValueError("swlstm: %s starts at an address that is not 16-byte aligned (a slice? pass a copy)" % what)


def _kernel_args(a, b):
    """a and b as the kernels take them, their dtype code, device and stream: bf16 runs bf16
    math on CUDA (on torch's current stream); the CPU products are fp32, so bf16 is widened."""
    if a.device.type == "cpu":
        return a.float(), b.float(), _lib.F32, _lib.CPU, None
    dtype = _lib.BF16 if a.dtype == torch.bfloat16 else _lib.F32
    return a, b, dtype, _lib.CUDA + a.device.index, torch.cuda.current_stream(a.device).cuda_stream


def _product(fn, layout, a, b, width):
    """fn(a, b) (fwd or bwd_data) over a's rows: [N, width] in a's dtype. CUDA writes it in that
    dtype from fp32 sums; the CPU writes fp32, rounded here."""
    ka, kb, dtype, dev, stream = _kernel_args(a, b)
    out = torch.empty(a.shape[0], width, dtype=ka.dtype, device=a.device)
    _lib.check(fn(layout._h, dev, dtype, dtype, out.data_ptr(), ka.data_ptr(), kb.data_ptr(), a.shape[0], 0, stream))
    return out.to(a.dtype)


def _weight_grad(layout, dy, x, vals):
    """dy^T x on the stored blocks in vals' dtype: the ABI sums the gradient in fp32 (rounded here)."""
    kdy, kx, dtype, dev, stream = _kernel_args(dy, x)
    dvals = torch.zeros(vals.shape, dtype=torch.float32, device=vals.device)
    _lib.check(_lib.lib.swlstm_bwd_weight(layout._h, dev, dtype, dvals.data_ptr(), kdy.data_ptr(), kx.data_ptr(),
                                          dy.shape[0], stream))
    return dvals.to(vals.dtype)


class _Product(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, vals, layout):
        ctx.layout = layout
        ctx.save_for_backward(x, vals)
        return _product(_lib.lib.swlstm_fwd, layout, x, vals, layout.rows)

    @staticmethod
    def backward(ctx, dy):
        x, vals = ctx.saved_tensors
        layout = ctx.layout
        dy = dy.to(x.dtype).contiguous()
        if dy.device.type == "cuda" and dy.data_ptr() % 16:
            dy = dy.clone()
        dx = dvals = None
        if ctx.needs_input_grad[0]:
            dx = _product(_lib.lib.swlstm_bwd_data, layout, dy, vals, layout.cols)
        if ctx.needs_input_grad[1]:
            dvals = _weight_grad(layout, dy, x, vals)
        return dx, dvals, None


def product(x, vals, layout):
    """y [N, layout.rows] = x [N, layout.cols] W^T for W the layout's stored blocks vals
    [nnzb, bs, bs], differentiable in x and vals. Both contiguous, one device, one dtype
    (float32 or bfloat16)."""
    if not isinstance(layout, Layout):
        raise TypeError("swlstm.product: layout is a %s: expected a swlstm.Layout" % type(layout).__name__)
    if not isinstance(vals, torch.Tensor):
        raise TypeError("swlstm.product: the weight is a %s: expected a torch.Tensor" % type(vals).__name__)
    if vals.dtype not in _DTYPES:
        raise TypeError("swlstm.product: the weight has dtype %s: expected torch.float32 or torch.bfloat16" % vals.dtype)
    want = (layout.nnzb, layout.block, layout.block)
    if tuple(vals.shape) != want:
        raise ValueError("swlstm.product: the weight has shape %s: expected %s" % (tuple(vals.shape), want))
    _check_operand(vals, "the weight", vals.dtype, vals.device)
    _check_operand(x, "the input", vals.dtype, vals.device)
    if x.dim() != 2 or x.shape[1] != layout.cols:
        raise ValueError("swlstm.product: the input has shape %s: expected [N, %d]" % (tuple(x.shape), layout.cols))
    if x.shape[0] >= 2 ** 31:
        raise ValueError("swlstm.product: %d rows: expected fewer than 2^31" % x.shape[0])
    return _Product.apply(x, vals, layout)


class BlockSparseLinear(torch.nn.Module):
    """y = x W^T + b for x [..., in_features], W [out_features, in_features] stored as the
    blocks of `layout` (a boolean (out_features // block, in_features // block) array, e.g.
    swlstm.mask(...)); weight [nnzb, block, block] in block-row order. Float32 or bfloat16, CPU
    or CUDA (.to() moves it); inputs must match the weight's dtype and device and be contiguous."""

    def __init__(self, in_features, out_features, layout, block=32, bias=True, device=None, dtype=None):
        super().__init__()
        if block not in (8, 16, 32):
            raise ValueError("swlstm.BlockSparseLinear: block = %r: expected 8, 16 or 32" % (block,))
        if in_features % block or out_features % block:
            raise ValueError("swlstm.BlockSparseLinear: in_features %d and out_features %d must be multiples of block %d"
                             % (in_features, out_features, block))
        self.in_features, self.out_features, self.block = in_features, out_features, block
        self._layout = Layout(layout, block)
        want = (out_features // block, in_features // block)
        if (self._layout.rows // block, self._layout.cols // block) != want:
            raise ValueError("swlstm.BlockSparseLinear: layout has shape %s: expected %s (out_features // block, "
                             "in_features // block)" % ((self._layout.rows // block, self._layout.cols // block), want))
        dtype = dtype or torch.float32
        if dtype not in _DTYPES:
            raise TypeError("swlstm.BlockSparseLinear: dtype %s: expected torch.float32 or torch.bfloat16" % dtype)
        self.register_buffer("layout", torch.from_numpy(self._layout.array()), persistent=True)
        self.weight = torch.nn.Parameter(torch.empty(self._layout.nnzb, block, block, device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.empty(out_features, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Uniform in +-1/sqrt(fan_in), fan_in the mean count of inputs an output row sees."""
        fan_in = self._layout.nnzb * self.block / (self.out_features // self.block)
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def forward(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError("swlstm.BlockSparseLinear: input is a %s: expected a torch.Tensor" % type(x).__name__)
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError("swlstm.BlockSparseLinear: input has shape %s: expected [..., %d]"
                             % (tuple(x.shape), self.in_features))
        _check_operand(x, "the input", self.weight.dtype, self.weight.device)
        y = product(x.reshape(-1, self.in_features), self.weight, self._layout)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def dense_weight(self):
        """The equivalent dense W [out_features, in_features] (zeros outside the stored blocks),
        differentiable in weight."""
        bs, L = self.block, self._layout
        w = self.weight.new_zeros(self.out_features // bs, self.in_features // bs, bs, bs)
        rows = torch.from_numpy(L.block_row).to(w.device)
        cols = torch.from_numpy(L.col_idx.astype(np.int64)).to(w.device)
        w = w.index_put((rows, cols), self.weight)
        return w.permute(0, 2, 1, 3).reshape(self.out_features, self.in_features)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, block=%d, blocks=%d of %d, bias=%s" % (
            self.in_features, self.out_features, self.block, self._layout.nnzb,
            (self.out_features // self.block) * (self.in_features // self.block), self.bias is not None)
