"""python -m swlstm.bench: swlstm's block-sparse product from PyTorch beside torch's dense
product (cuBLAS) and torch's BSR product (cuSPARSE, or whatever torch runs for it), and
torch's Triton BSR kernel where it imports: y = x W^T, W 12288 x 12288 with a random layout of
32 x 32 blocks (the layout `swlstm bench` draws: random_<density>, seed 1), 32 and 4096 rows
of x, fp32 and bf16, on CUDA.

swlstm's and the dense calls are captured once in a CUDA graph and replayed (device time, as
`swlstm bench` measures; the eager column adds the Python and launch overhead of one call);
the BSR baselines, whose kernels are long, are issued eagerly. Weight sets rotate so that L2
cannot hold them; us per call, the median over groups."""
import argparse
import math
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


def row(dim, block, density, rows, dtype, l2, args, dense_cache):
    desc = "dense" if density >= 1 else "random_%g" % density
    layout = Layout(swlstm.mask(desc, dim, dim, block, 1), block)
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
        key = (rows, dtype)
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
    real_density = layout.nnzb / (dim // block) ** 2
    return real_density, res


def cli_figures(exe):
    """`swlstm bench --bs 32`'s forward at N = 32: {(dtype, density text): us}, fp32's "fwd" and
    bf16's "fwd, x bf16" (x already bf16, as the binding gets it; y in fp32, the binding's in bf16)."""
    out = subprocess.run([exe, "bench", "--bs", "32"], capture_output=True, text=True, check=True).stdout
    figs = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 6 and cells[0] == "32" and cells[2] in ("fp32", "bf16"):
            figs[(cells[2], cells[1])] = float(cells[3] if cells[2] == "fp32" else cells[6])
    return figs


def fmt(r):
    return r if isinstance(r, str) else "%.1f%s" % (r[0], "" if r[1] == "graph" else "*")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m swlstm.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=12288)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--densities", type=float, nargs="+", default=[1, 0.5, 0.25, 0.1, 0.05, 0.02])
    ap.add_argument("--rows", type=int, nargs="+", default=[32, 4096])
    ap.add_argument("--dtypes", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    ap.add_argument("--groups", type=int, default=11)
    ap.add_argument("--per-group", type=int, default=10)
    ap.add_argument("--swlstm", metavar="BIN", help="also run BIN bench --bs 32 and show the binding's overhead over "
                    "its forward at 32 rows (fp32: fwd; bf16: fwd, x bf16)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("swlstm.bench: torch sees no CUDA device")
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    print("device: %s; torch %s; W %d x %d, blocks of %d; us per call (median of %d groups of %d graph replays; "
          "* issued eagerly); fp32 dense with TF32 %s" % (props.name, torch.__version__, args.dim, args.dim, args.block,
                                                          args.groups, args.per_group,
                                                          "on" if torch.backends.cuda.matmul.allow_tf32 else "off"))
    cli = cli_figures(args.swlstm) if args.swlstm else {}
    print("| dtype | rows | density | swlstm us | swlstm eager us | torch dense us | torch BSR us | Triton BSR us "
          "| vs dense | vs BSR | swlstm bench us | overhead |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    dense_cache, beat_bsr, dense_at_10, overheads = {}, True, [], []
    for dt in args.dtypes:
        dtype = torch.bfloat16 if dt == "bf16" else torch.float32
        for rows in args.rows:
            for d in args.densities:
                dens, r = row(args.dim, args.block, d, rows, dtype, l2, args, dense_cache)
                us = r["swlstm"][0]
                vs_dense = r["dense"][0] / us
                vs_bsr = "-" if isinstance(r["bsr"], str) else "%.1fx" % (r["bsr"][0] / us)
                if not isinstance(r["bsr"], str) and r["bsr"][0] <= us:
                    beat_bsr = False
                if abs(d - 0.1) < 1e-9 and rows == 32:
                    dense_at_10.append((dt, vs_dense))
                ref = cli.get((dt, "%.1f%%" % (100 * dens))) if rows == 32 else None
                if ref:
                    overheads.append(us / ref - 1)
                print("| %s | %d | %.1f%% | %s | %.1f | %s | %s | %s | %.1fx | %s | %s | %s |" % (
                    dt, rows, 100 * dens, fmt(r["swlstm"]), r["eager"], fmt(r["dense"]), fmt(r["bsr"]), fmt(r["triton"]),
                    vs_dense, vs_bsr, "%.1f" % ref if ref else "-", "%+.0f%%" % (100 * (us / ref - 1)) if ref else "-"),
                    flush=True)
                torch.cuda.empty_cache()
    for dt, v in dense_at_10:
        print("target: >= 4x torch dense at 10%% of blocks, 32 rows, %s: %.1fx %s" % (dt, v, "met" if v >= 4 else "MISSED"))
    print("target: faster than torch BSR at every density measured: %s" % ("met" if beat_bsr else "MISSED"))
    if overheads:
        worst = max(overheads)
        print("target: within 10%% of swlstm bench's forward (32 rows): worst %+.0f%% %s"
              % (100 * worst, "met" if worst <= 0.10 else "MISSED"))


if __name__ == "__main__":
    main()
