"""python -m swlstm.bench: swlstm's block-sparse product from PyTorch beside torch's dense
product (cuBLAS) and torch's BSR product (cuSPARSE, or whatever torch runs for it), and
torch's Triton BSR kernel where it imports: y = x W^T on the rows of `swlstm bench`'s kernel
table (`swlstm bench --json --bs 32`: its weight size, mask descriptor and seed, drawn here by
swlstm.mask), at the table's N rows and at 4096, fp32 and bf16, on CUDA; beside each row at N
rows, the binary's own forward from the same table (the binding's overhead).

swlstm's and the dense calls are captured once in a CUDA graph and replayed (device time, as
`swlstm bench` measures; the eager column adds the Python and launch overhead of one call);
the BSR baselines, whose kernels are long, are issued eagerly. Weight sets rotate so that L2
cannot hold them; us per call, the median over groups."""
import argparse
import json
import math
import os
import subprocess
import sys

import torch

import swlstm
from .linear import product
from .masks import Layout


def timed(calls, groups, per_group, graph=True):
    """us per call of the callables `calls` (one pass over them each time), from CUDA-graph
    replays where graph (and the capture works), else issued eagerly (for kernels much longer
    than a launch, the same); returns (us, 'graph' or 'eager'). Groups last about 50 ms at most."""
    run_eager = lambda: [c() for c in calls]
    run_eager()
    torch.cuda.synchronize()
    run, how = run_eager, "eager"
    if graph:
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                run_eager()
            run, how = g.replay, "graph"
        except Exception:  # a library that allocates or syncs while capturing
            torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    run()
    b.record()
    b.synchronize()
    per_group = max(1, min(per_group, int(50.0 / max(a.elapsed_time(b), 1e-3))))
    times = []
    for _ in range(groups):
        a.record()
        for _ in range(per_group):
            run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / (per_group * len(calls)))
    return sorted(times)[len(times) // 2], how


def eager_us(call, reps):
    """One call's wall time issued from Python, back to back (launch-bound when kernels are short)."""
    call()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        call()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / reps


def triton_bsr_mm():
    try:
        from torch.sparse._triton_ops import bsr_dense_mm
        return bsr_dense_mm
    except Exception:
        return None


def attempt(fn):
    try:
        return fn()
    except Exception as e:  # a baseline that this torch does not run: say why, keep going
        return "n/a (%s)" % str(e).split("\n")[0][:60]


def row(k, rows, dtype, l2, args, dense_cache):
    """Times kernel-table row k (its W, mask descriptor, seed and block size) at `rows` rows of x."""
    dim, block = k["w"], k["bs"]
    layout = Layout(swlstm.mask(k["mask"], dim, dim, block, k["seed"]), block)
    nbytes = layout.nnzb * block * block * (2 if dtype == torch.bfloat16 else 4)
    nsets = min(64, max(2, math.ceil(4 * l2 / nbytes)))
    vals = torch.randn(nsets, layout.nnzb, block, block, device="cuda", dtype=dtype) * 0.05
    x = torch.randn(rows, dim, device="cuda", dtype=dtype)
    xt = x.t().contiguous()
    G, P = args.groups, args.per_group
    res = {}
    with torch.no_grad():
        res["swlstm"] = timed([lambda i=i: product(x, vals[i], layout) for i in range(nsets)], G, P)
        res["eager"] = eager_us(lambda: product(x, vals[0], layout), G * P)
        key = (dim, rows, dtype)
        if key not in dense_cache:
            n_dense = min(64, max(2, math.ceil(4 * l2 / (dim * dim * x.element_size()))))
            W = torch.randn(n_dense, dim, dim, device="cuda", dtype=dtype) * 0.05
            dense_cache[key] = timed([lambda i=i: torch.nn.functional.linear(x, W[i]) for i in range(n_dense)], G, P)
            del W
        res["dense"] = dense_cache[key]
        crow = torch.from_numpy(layout.row_ptr.astype("int64")).cuda()
        col = torch.from_numpy(layout.col_idx.astype("int64")).cuda()
        bsr = [torch.sparse_bsr_tensor(crow, col, vals[i], size=(dim, dim)) for i in range(min(nsets, 8))]
        res["bsr"] = attempt(lambda: timed([lambda w=w: w @ xt for w in bsr], G, P, graph=False))
        mm = triton_bsr_mm()
        res["triton"] = attempt(lambda: timed([lambda w=w: mm(w, xt) for w in bsr], G, P, graph=False)) if mm else "not installed"
    return res


def kernel_table(exe, dtypes):
    """The rows of `EXE bench --json --bs 32` (the kernel table) in the dtypes asked for."""
    out = subprocess.run([exe, "bench", "--json", "--bs", "32"], capture_output=True, text=True, check=True).stdout
    return [k for k in map(json.loads, out.splitlines()) if k["table"] == "kernels" and k["dtype"] in dtypes]


def cli_us(k):
    """The binary's forward of row k as the binding runs it: fp32's "fwd"; bf16's "fwd, x bf16" (x
    already bf16, as the binding gets it; y in fp32, the binding's in bf16)."""
    return k["fwd_us"] if k["dtype"] == "fp32" else k["fwd_x_bf16_us"]


def fmt(r):
    return r if isinstance(r, str) else "%.1f%s" % (r[0], "" if r[1] == "graph" else "*")


def default_binary():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "swlstm")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m swlstm.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[4096], help="rows of x besides the table's N")
    ap.add_argument("--dtypes", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    ap.add_argument("--groups", type=int, default=11)
    ap.add_argument("--per-group", type=int, default=10)
    ap.add_argument("--swlstm", metavar="BIN", default=default_binary(),
                    help="the swlstm binary whose kernel table gives the rows (default: the checkout's)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("swlstm.bench: torch sees no CUDA device")
    if not os.path.exists(args.swlstm):
        sys.exit("swlstm.bench: no swlstm binary at %s (run make, or give --swlstm BIN)" % args.swlstm)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    table = kernel_table(args.swlstm, args.dtypes)
    print("device: %s; torch %s; the rows of %s bench --bs 32; us per call (median of %d groups of %d graph "
          "replays; * issued eagerly); fp32 dense with TF32 %s" % (props.name, torch.__version__, args.swlstm,
                                                                   args.groups, args.per_group,
                                                                   "on" if torch.backends.cuda.matmul.allow_tf32 else "off"))
    print("| dtype | W | rows | mask | density | swlstm us | swlstm eager us | torch dense us | torch BSR us "
          "| Triton BSR us | vs dense | vs BSR | swlstm bench us | overhead |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    dense_cache, beat_bsr, dense_at_10, overheads = {}, True, [], []
    for k in table:
        dtype = torch.bfloat16 if k["dtype"] == "bf16" else torch.float32
        for rows in [k["n"]] + [r for r in args.rows if r != k["n"]]:
            r = row(k, rows, dtype, l2, args, dense_cache)
            us = r["swlstm"][0]
            vs_dense = r["dense"][0] / us
            vs_bsr = "-" if isinstance(r["bsr"], str) else "%.1fx" % (r["bsr"][0] / us)
            if not isinstance(r["bsr"], str) and r["bsr"][0] <= us:
                beat_bsr = False
            if k["mask"] == "random_0.1" and rows == k["n"]:
                dense_at_10.append((k["dtype"], vs_dense))
            ref = cli_us(k) if rows == k["n"] else None
            if ref:
                overheads.append(us / ref - 1)
            print("| %s | %d | %d | %s | %.1f%% | %s | %.1f | %s | %s | %s | %.1fx | %s | %s | %s |" % (
                k["dtype"], k["w"], rows, k["mask"], k["density"], fmt(r["swlstm"]), r["eager"], fmt(r["dense"]),
                fmt(r["bsr"]), fmt(r["triton"]), vs_dense, vs_bsr, "%.1f" % ref if ref else "-",
                "%+.0f%%" % (100 * (us / ref - 1)) if ref else "-"), flush=True)
            torch.cuda.empty_cache()
    for dt, v in dense_at_10:
        print("target: >= 4x torch dense at 10%% of blocks, the table's N rows, %s: %.1fx %s"
              % (dt, v, "met" if v >= 4 else "MISSED"))
    print("target: faster than torch BSR at every row measured: %s" % ("met" if beat_bsr else "MISSED"))
    if overheads:
        worst = max(overheads)
        print("target: within 10%% of swlstm bench's forward (the table's N rows): worst %+.0f%% %s"
              % (100 * worst, "met" if worst <= 0.10 else "MISSED"))


if __name__ == "__main__":
    main()
