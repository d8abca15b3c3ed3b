#!/usr/bin/env python3
"""The anchor of quiver-llm's prefill: how long cuBLAS (through torch, bf16) takes for the matrix
products of a Llama model's prefill of T tokens, each layer matrix as one product over the T rows
(torch.nn.functional.linear: x[T, in] w[out, in]^T), the output projection for one row: the whole
sequence, back to back, every layer with weights of its own (median of 20 runs, CUDA events), and
the TFLOP/s that makes; then each product shape alone. quiver-llm --bench prints its own prefill's device time;
the ratio cuBLAS time / quiver time is the fraction of cuBLAS's rate the prefill reaches.

Usage: llama-prefill-cublas.py --tokens 512 [--embd 4096 --ff 14336 --heads 32 --kv-heads 8
       --layers 32 --vocab 128256] [--quiver-ms MS]
"""
import argparse
import json

import torch


def median_ms(fn, iters=200, warmup=50):
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
    # One layer's products in order (out, in), every layer with weights of its own (as a model's
    # are: nothing stays in L2 from one layer to the next), then the output projection of the
    # last row.
    layer = [(E, E), (kv, E), (kv, E), (E, E), (F, E), (F, E), (E, F)]
    weights = [[torch.randn(o, i, device="cuda", dtype=torch.bfloat16) * 0.02 for o, i in layer]
               for _ in range(a.layers)]
    output = torch.randn(a.vocab, E, device="cuda", dtype=torch.bfloat16) * 0.02
    x = {i: torch.randn(T, i, device="cuda", dtype=torch.bfloat16) for i in (E, F)}
    last = torch.randn(1, E, device="cuda", dtype=torch.bfloat16)

    def prefill_products():
        for ws in weights:
            for w in ws:
                torch.nn.functional.linear(x[w.shape[1]], w)
        torch.nn.functional.linear(last, output)

    ms = median_ms(prefill_products, iters=20, warmup=3)
    flops = 2.0 * T * sum(o * i for o, i in layer) * a.layers + 2.0 * a.vocab * E
    # Each product shape alone, for the table (the same weights every run).
    rows = []
    for o, i in layer[:2] + layer[4:]:
        w = weights[0][[l for l in layer].index((o, i))]
        t = median_ms(lambda: torch.nn.functional.linear(x[i], w))
        rows.append({"rows": T, "out": o, "in": i, "ms": t, "tflops": 2.0 * T * o * i / t / 1e9})
    result = {"tokens": T, "cublas_ms": ms, "cublas_tflops": flops / ms / 1e9, "flops": flops,
              "products": rows, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    if a.quiver_ms:
        result["quiver_ms"] = a.quiver_ms
        result["fraction_of_cublas_rate"] = ms / a.quiver_ms
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
