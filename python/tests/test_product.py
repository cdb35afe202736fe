"""BlockSparseLinear and swlstm.product on the device under test (cpu, or cuda with --cuda):
forward and both gradients against the dense masked product in float64, gradcheck, dtypes,
every bad input raising, and the C ABI's output types (bf16 outputs on CUDA)."""
import copy
import pickle
import unittest
import warnings

import numpy as np

import swlstm
from common import device_or_skip, need_torch, torch

CASES = [  # (in, out, block, mask kind, rows of x)
    (256, 256, 32, "ws_2_0.2", 32),
    (128, 512, 16, "random_0.3", 7),
    (64, 128, 8, "ba_2", 300),
]


def layout_for(kind, rows, cols, block, seed=2):
    if rows == cols:
        return swlstm.mask(kind, rows, cols, block, seed)
    return swlstm.mask("random_0.3", rows, cols, block, seed)


def rel_err(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()


@need_torch
class ProductTest(unittest.TestCase):
    def setUp(self):
        self.dev = device_or_skip(self)
        torch.manual_seed(0)

    def check_against_dense(self, dtype, tol):
        for fin, fout, bs, kind, n in CASES:
            lin = swlstm.BlockSparseLinear(fin, fout, layout_for(kind, fout, fin, bs), block=bs, dtype=dtype).to(self.dev)
            x = torch.randn(n, fin, dtype=dtype, device=self.dev, requires_grad=True)
            y = lin(x)
            self.assertEqual((y.dtype, y.shape, y.device.type), (dtype, (n, fout), self.dev))
            dy = torch.randn_like(y)
            y.backward(dy)
            # the reference: the same (rounded) operands, dense and masked, in float64
            xr = x.detach().double().requires_grad_()
            wr = lin.dense_weight().detach().double().requires_grad_()
            yr = xr @ wr.t() + lin.bias.detach().double()
            yr.backward(dy.double())
            blocks = wr.grad.reshape(fout // bs, bs, fin // bs, bs).permute(0, 2, 1, 3)
            L = lin._layout
            dvals_ref = blocks[torch.from_numpy(L.block_row), torch.from_numpy(L.col_idx.astype(np.int64))]
            what = "%s %dx%d block %d, %d rows" % (dtype, fout, fin, bs, n)
            self.assertLessEqual(rel_err(y, yr), tol, "forward " + what)
            self.assertLessEqual(rel_err(x.grad, xr.grad), tol, "input gradient " + what)
            self.assertLessEqual(rel_err(lin.weight.grad, dvals_ref), tol, "weight gradient " + what)
            self.assertLessEqual(rel_err(lin.bias.grad, dy.double().sum(0)), tol, "bias gradient " + what)
            outside = ~torch.from_numpy(np.kron(L.array(), np.ones((bs, bs), bool))).to(self.dev)
            self.assertFalse((lin.dense_weight().detach() != 0)[outside].any(), "dense_weight outside the layout")

    def test_fp32_against_dense(self):
        self.check_against_dense(torch.float32, 1e-5)

    def test_bf16_against_dense(self):
        # the same bf16 operands, fp32 sums; the output rounded to bf16 (2^-8 relative)
        self.check_against_dense(torch.bfloat16, 8e-3)

    def test_gradcheck(self):
        # The kernels are float32 (the double build is the C suite's): central differences of a
        # bilinear product are exact but for rounding, so a step of 1e-2 and tolerances of 1e-3.
        layout = swlstm.Layout(swlstm.mask("random_0.5", 32, 32, 8, 1), 8)
        x = torch.randn(3, 32, device=self.dev, requires_grad=True)
        vals = torch.randn(layout.nnzb, 8, 8, device=self.dev, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.assertTrue(torch.autograd.gradcheck(lambda a, b: swlstm.product(a, b, layout), (x, vals),
                                                     eps=1e-2, atol=1e-3, rtol=1e-3))

    def test_leading_dims_and_no_bias(self):
        lin = swlstm.BlockSparseLinear(64, 64, swlstm.mask("ws_2_0.2", 64, 64, 16, 1), block=16, bias=False).to(self.dev)
        x = torch.randn(2, 3, 64, device=self.dev)
        y = lin(x)
        self.assertEqual(y.shape, (2, 3, 64))
        self.assertLessEqual(rel_err(y, x.double() @ lin.dense_weight().double().t()), 1e-5)
        self.assertIsNone(lin.bias)
        self.assertIn("blocks=", repr(lin))

    def test_state_dict_round_trip(self):
        m = swlstm.mask("ws_2_0.2", 64, 64, 16, 3)
        a = swlstm.BlockSparseLinear(64, 64, m, block=16).to(self.dev)
        b = swlstm.BlockSparseLinear(64, 64, m, block=16).to(self.dev)
        b.load_state_dict(a.state_dict())
        x = torch.randn(4, 64, device=self.dev)
        self.assertTrue(torch.equal(a(x), b(x)))
        np.testing.assert_array_equal(a.layout.cpu().numpy(), m)
        for c in (copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
            self.assertTrue(torch.equal(c.to(self.dev)(x), a(x)))

    def test_bad_input_raises(self):
        m = swlstm.mask("ws_2_0.2", 64, 64, 16, 1)
        lin = swlstm.BlockSparseLinear(64, 64, m, block=16).to(self.dev)
        x = torch.randn(8, 64, device=self.dev)
        bad = {
            "wrong width": torch.randn(8, 32, device=self.dev),
            "float64": x.double(),
            "int": x.long(),
            "bf16 into fp32": x.bfloat16(),
            "non-contiguous": torch.randn(64, 8, device=self.dev).t(),
            "a list": [[0.0] * 64],
            "0-d": torch.tensor(1.0, device=self.dev),
        }
        other = "cpu" if self.dev == "cuda" else ("cuda" if torch.cuda.is_available() else None)
        if other:
            bad["other device"] = x.to(other)
        if self.dev == "cuda":
            bad["misaligned"] = torch.randn(8 * 64 + 1, device=self.dev)[1:].view(8, 64)
        for what, v in bad.items():
            with self.assertRaises((TypeError, ValueError), msg=what):
                lin(v)
        layout = lin._layout
        with self.assertRaises(ValueError):
            swlstm.product(x, lin.weight[:-1], layout)
        with self.assertRaises(TypeError):
            swlstm.product(x, lin.weight, m)
        with self.assertRaises(TypeError):
            swlstm.product(x.double(), lin.weight.double(), layout)
        ctor = [((64, 64, m), {"block": 12}), ((64, 64, m), {"block": 32}), ((60, 64, m), {"block": 16}),
                ((64, 64, m[:, :2]), {"block": 16}), ((64, 64, np.zeros((4, 4), bool)), {"block": 16}),
                ((64, 64, m), {"block": 16, "dtype": torch.float16})]
        for args, kw in ctor:
            with self.assertRaises((TypeError, ValueError), msg="%s %s" % (args[:2], kw)):
                swlstm.BlockSparseLinear(*args, **kw)
        self.assertTrue(torch.isfinite(lin(x)).all())  # still usable after the errors


# Shapes for each of the CUDA products' kernels: (features, block, mask, rows of x). Block 32 at
# 32 rows is the forward's weight stream and bwd_data's bulk kernel; at 100 rows both take the
# bulk kernel (a partial row tile); blocks 16 and 8 the cp.async kernel; the dense 4096 rows'
# lists are cut into pieces that the last CTA sums.
OUT_CASES = [(512, 32, "ws_2_0.2", 32), (512, 32, "ws_2_0.2", 100), (256, 16, "ba_2", 7), (128, 8, "ba_2", 300),
             (4096, 32, "dense", 32), (4096, 32, "dense", 64)]


def abi_product(op, layout, a, b, out, acc=0):
    """The C ABI's fwd or bwd_data: out (=|+=) a by b's blocks, out in its own dtype."""
    import swlstm._lib as L
    code = {torch.float32: L.F32, torch.bfloat16: L.BF16}
    fn = L.lib.swlstm_fwd if op == "fwd" else L.lib.swlstm_bwd_data
    cpu = a.device.type == "cpu"
    dev = L.CPU if cpu else L.CUDA + a.device.index
    stream = None if cpu else torch.cuda.current_stream(a.device).cuda_stream
    L.check(fn(layout._h, dev, code[a.dtype], code.get(out.dtype, 7), out.data_ptr(), a.data_ptr(), b.data_ptr(),
               a.shape[0], acc, stream))
    return out


@need_torch
class OutputDtypeTest(unittest.TestCase):
    def setUp(self):
        self.dev = device_or_skip(self)
        torch.manual_seed(1)

    def test_cpu_writes_fp32_only(self):
        layout = swlstm.Layout(swlstm.mask("ws_2_0.2", 64, 64, 16, 1), 16)
        x, vals = torch.randn(4, 64), torch.randn(layout.nnzb, 16, 16)
        y = abi_product("fwd", layout, x, vals, torch.empty(4, 64))
        self.assertTrue(torch.isfinite(y).all())
        for out in (torch.empty(4, 64, dtype=torch.bfloat16), torch.empty(4, 64, dtype=torch.float64)):
            for op in ("fwd", "bwd_data"):
                with self.assertRaises(ValueError, msg="%s into %s" % (op, out.dtype)):
                    abi_product(op, layout, x, vals, out)

    def test_bf16_output_is_the_fp32_sum_rounded(self):
        if self.dev != "cuda":
            self.skipTest("bf16 outputs are the CUDA products' (the CPU's write float32)")
        for dtype in (torch.bfloat16, torch.float32):
            for n_feat, bs, kind, n in OUT_CASES:
                lin = swlstm.BlockSparseLinear(n_feat, n_feat, swlstm.mask(kind, n_feat, n_feat, bs, 3), block=bs,
                                               bias=False, dtype=dtype).to(self.dev)
                w, L = lin.weight.detach(), lin._layout
                wd = lin.dense_weight().detach().double()
                a = torch.randn(n, n_feat, dtype=dtype, device=self.dev)
                for op, ref in (("fwd", a.double() @ wd.t()), ("bwd_data", a.double() @ wd)):
                    what = "%s %s, %s block %d, %d rows" % (op, dtype, kind, bs, n)
                    y32 = abi_product(op, L, a, w, torch.empty(n, n_feat, device=self.dev))
                    y16 = abi_product(op, L, a, w, torch.empty(n, n_feat, dtype=torch.bfloat16, device=self.dev))
                    self.assertTrue(torch.equal(y16, y32.to(torch.bfloat16)), "bf16 out is not fp32's rounded: " + what)
                    self.assertLessEqual(rel_err(y16, ref), 8e-3, what)  # 2^-8 relative, and bf16 inputs' sums
                    # += reads the bf16 value, adds the fp32 sum and rounds once
                    y0 = torch.randn(n, n_feat, device=self.dev).to(torch.bfloat16)
                    acc = abi_product(op, L, a, w, y0.clone(), acc=1)
                    self.assertTrue(torch.equal(acc, (y0.float() + y32).to(torch.bfloat16)), "bf16 += " + what)
