#!/usr/bin/env python3
"""bench_cudnn.py: the cuDNN baseline for `swlstm bench --train`: PyTorch nn.LSTM (cuDNN) with
the same model shape (byte embedding 256 x 64, one LSTM layer, head H x 256, cross-entropy,
Adam) at B=128, T=128. Prints ms/step and chars/s, median of 5 steps after 2 warm-up steps.
fp32 runs with TF32 off (as swlstm's fp32 mode); bf16 runs the whole model in bfloat16.
Usage: python3 tools/bench_cudnn.py [H ...]   (default: 2048 8192)"""
import statistics
import sys
import time

try:
    import torch
except ImportError:
    from need import missing
    missing("bench_cudnn", "torch", "python3-torch", "torch")


def bench(H, dtype, B=128, T=128, E=64, warmup=2, steps=5):
    dev = "cuda"
    emb = torch.nn.Embedding(256, E).to(dev, dtype)
    lstm = torch.nn.LSTM(E, H).to(dev, dtype)
    lstm.flatten_parameters()  # one contiguous weight buffer, as cuDNN wants (else it compacts every call)
    head = torch.nn.Linear(H, 256).to(dev, dtype)
    params = list(emb.parameters()) + list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    tok = torch.randint(0, 256, (T, B), device=dev)
    tgt = torch.randint(0, 256, (T, B), device=dev)
    times = []
    for s in range(warmup + steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out, _ = lstm(emb(tok))
        loss = torch.nn.functional.cross_entropy(head(out).float().view(-1, 256), tgt.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        torch.cuda.synchronize()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    ms = 1e3 * statistics.median(times)
    return ms, B * T / (ms / 1e3)


def main():
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    sizes = [int(a) for a in sys.argv[1:]] or [2048, 8192]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    print("| H | dtype | step ms | chars/s |\n|---|---|---|---|")
    for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        for H in sizes:
            ms, cps = bench(H, dtype)
            print(f"| {H} | {name} | {ms:.1f} | {cps:.0f} |", flush=True)


if __name__ == "__main__":
    main()
