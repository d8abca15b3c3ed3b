#!/usr/bin/env python3
"""The anchor of quiver-llm's prefill: how long cuBLAS (through torch, bf16, TF32 irrelevant)
takes for the matrix products of a Llama model's prefill of T tokens, each layer matrix as one
product over the T rows (torch.nn.functional.linear: x[T, in] w[out, in]^T), the output projection
for one row, and the TFLOP/s that makes. quiver-llm --bench prints its own prefill's device time;
the ratio cuBLAS time / quiver time is the fraction of cuBLAS's rate the prefill reaches.

Usage: llama-prefill-cublas.py --tokens 512 [--embd 4096 --ff 14336 --heads 32 --kv-heads 8
       --layers 32 --vocab 128256] [--quiver-ms MS]
"""
import argparse
import json

import torch


def median_ms(fn, iters=50, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--embd", type=int, default=4096)
    ap.add_argument("--ff", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--quiver-ms", type=float, help="quiver-llm's prefill device time, for the ratio")
    a = ap.parse_args()
    T, E, F = a.tokens, a.embd, a.ff
    kv = E // a.heads * a.kv_heads
    # (out, in, rows, count per model)
    shapes = [(E, E, T, 2 * a.layers), (kv, E, T, 2 * a.layers), (F, E, T, 2 * a.layers), (E, F, T, a.layers),
              (a.vocab, E, 1, 1)]
    total_ms, flops, rows = 0.0, 0.0, []
    for out, inp, m, count in shapes:
        x = torch.randn(m, inp, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(out, inp, device="cuda", dtype=torch.bfloat16) * 0.02
        ms = median_ms(lambda: torch.nn.functional.linear(x, w))
        f = 2.0 * m * out * inp
        rows.append({"rows": m, "out": out, "in": inp, "count": count, "ms": ms, "tflops": f / ms / 1e9})
        total_ms += ms * count
        flops += f * count
    result = {"tokens": T, "cublas_ms": total_ms, "cublas_tflops": flops / total_ms / 1e9, "flops": flops,
              "products": rows, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    if a.quiver_ms:
        result["quiver_ms"] = a.quiver_ms
        result["fraction_of_cublas_rate"] = total_ms / a.quiver_ms
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
