#!/usr/bin/env python3
"""quiver vs torch, same machine, same call.

Reads the JSON quiver-bench just wrote (--json), runs every case it holds through torch
(and Triton's fused softmax for softmax) at the same shape and dtype, timed the same way
(median of event-timed runs, L2 flushed between runs by triton.testing.do_bench), and
writes a JSON + markdown table of ratios.  Ratio = torch_ms / quiver_ms: above 1 quiver is
faster.  Copy bandwidth is re-measured here too, so fractions of copy come from this run.

  python3 scripts/bench-vs-torch.py $OUT/bench-cuda.json $OUT/vs-torch.json $OUT/vs-torch.md

Cases without a torch counterpart (q8_0 / q4_0 matvec: llama.cpp block layouts) get the
bf16 gemv of the same shape as their reference, labelled so.
"""
import json
import math
import re
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.testing import do_bench

dev = torch.device("cuda")
DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def median_ms(fn):
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


@triton.jit
def _softmax_rows(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(inp + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    tl.store(out + row * stride + cols, (e / tl.sum(e, 0)).to(out.dtype.element_ty), mask=cols < n_cols)


def triton_softmax(x):
    out = torch.empty_like(x)
    m, n = x.shape
    block = triton.next_power_of_2(n)
    return lambda: _softmax_rows[(m,)](out, x, x.stride(0), n, BLOCK=block, num_warps=8 if block >= 2048 else 4)


def rope_eager(x, pos, inv_freq, head_dim):
    m, n = x.shape
    ang = pos.float()[:, None] * inv_freq[None, :]
    cos, sin = ang.cos().to(x.dtype)[:, None, :], ang.sin().to(x.dtype)[:, None, :]
    def run():
        h = x.view(m, n // head_dim, head_dim)
        x1, x2 = h[..., : head_dim // 2], h[..., head_dim // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)
    return run


def torch_cases(op, dtype, shape):
    """[(label, fn)] for one quiver case; empty when torch has nothing comparable."""
    dims = [int(v) for v in re.findall(r"\d+", shape)]
    if op in ("attention", "attention_causal"):
        b, h, s, d = dims
        q = torch.randn(b, h, s, d, device=dev, dtype=DT[dtype])
        k, v = torch.randn_like(q), torch.randn_like(q)
        causal = op == "attention_causal"
        return [("torch SDPA", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))]
    if op == "matmul":
        m, n, k = dims
        a = torch.randn(m, k, device=dev, dtype=DT[dtype])
        b = torch.randn(k, n, device=dev, dtype=DT[dtype])
        torch.backends.cuda.matmul.allow_tf32 = False
        return [("torch.matmul (cuBLAS)", lambda: a @ b)]
    if op == "matmul_w8a8":
        m, n, k = dims
        a = torch.randint(-127, 127, (m, k), device=dev, dtype=torch.int8)
        b = torch.randint(-127, 127, (n, k), device=dev, dtype=torch.int8).t()
        sa = torch.rand(m, 1, device=dev)
        sb = torch.rand(1, n, device=dev)
        return [("torch._int_mm", lambda: torch._int_mm(a, b)),
                ("torch._int_mm + scales", lambda: torch._int_mm(a, b).float() * sa * sb)]
    if op == "matvec":
        rows, cols = dims
        wdt = DT.get(dtype, torch.bfloat16)
        w = torch.randn(rows, cols, device=dev, dtype=wdt)
        v = torch.randn(cols, device=dev, dtype=wdt)
        label = "torch W @ v" if dtype in DT else "torch bf16 W @ v (no q8_0/q4_0 op in torch)"
        return [(label, lambda: w @ v)]
    m, n = dims
    t = DT[dtype]
    x = torch.randn(m, n, device=dev, dtype=t)
    g = torch.randn(m, n, device=dev, dtype=t)
    w = torch.randn(n, device=dev, dtype=t)
    bias = torch.randn(n, device=dev, dtype=t)
    if op == "rms_norm":
        return [("torch rms_norm", lambda: F.rms_norm(x, (n,), w, 1e-6))]
    if op == "layer_norm":
        return [("torch layer_norm", lambda: F.layer_norm(x, (n,), w, bias, 1e-5))]
    if op == "add_rms_norm":
        return [("torch eager add + rms_norm", lambda: F.rms_norm(x + g, (n,), w, 1e-6))]
    if op == "softmax":
        return [("torch softmax", lambda: torch.softmax(x, -1)), ("Triton fused softmax", triton_softmax(x))]
    if op == "log_softmax":
        return [("torch log_softmax", lambda: torch.log_softmax(x, -1))]
    if op == "silu_gate":
        return [("torch eager silu(x) * g", lambda: F.silu(x) * g)]
    if op == "gelu_erf":
        return [("torch gelu", lambda: F.gelu(x))]
    if op == "gelu_tanh":
        return [("torch gelu tanh", lambda: F.gelu(x, approximate="tanh"))]
    if op == "rope":
        pos = torch.arange(m, device=dev, dtype=torch.int32) % 8192
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 128, 2, device=dev, dtype=torch.float32) / 128))
        return [("torch eager rope (NeoX)", rope_eager(x, pos, inv_freq, 128))]
    return []


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: bench-vs-torch.py QUIVER_BENCH.json OUT.json OUT.md")
    bench = json.load(open(sys.argv[1]))
    torch.manual_seed(0)
    x = torch.randn(256 * 1024 * 1024, device=dev)
    y = torch.empty_like(x)
    copy_gbps = 2 * x.numel() * 4 / median_ms(lambda: y.copy_(x)) / 1e6
    del x, y
    # torch's copy moving each memory-bound or matvec case's bytes (half read, half written), timed
    # the same way: what a copy reaches at that size, beside the big copy above.
    copy_at = {}
    for r in bench["results"]:
        nbytes = int(r["bytes"])
        if "copy_same_size_GBps" not in r or nbytes in copy_at:   # the cases quiver-bench sizes a copy for
            continue
        src = torch.empty(nbytes // 8, device=dev)   # floats: nbytes / 2 read, nbytes / 2 written
        dst = torch.empty_like(src)
        copy_at[nbytes] = nbytes / median_ms(lambda: dst.copy_(src)) / 1e6
        del src, dst
    rows = []
    for r in bench["results"]:
        for label, fn in torch_cases(r["op"], r["dtype"], r["shape"]):
            ms = median_ms(fn)
            rows.append({"op": r["op"], "dtype": r["dtype"], "shape": r["shape"], "torch": label,
                         "quiver_ms": r["median_ms"], "torch_ms": ms, "ratio": ms / r["median_ms"],
                         "quiver_GBps": r["bytes"] / r["median_ms"] / 1e6,
                         "quiver_frac_copy": r["bytes"] / r["median_ms"] / 1e6 / copy_gbps,
                         "torch_copy_same_size_GBps": copy_at.get(int(r["bytes"])),
                         "quiver_TFLOPs": r["flops"] / r["median_ms"] / 1e9 if r["flops"] else None})
        torch.cuda.empty_cache()
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
           "copy_GBps_torch": copy_gbps, "copy_same_size_GBps_torch": {str(k): v for k, v in copy_at.items()},
           "quiver_backend": bench.get("backend"),
           "quiver_copy_GBps": bench.get("copy_GBps"), "rows": rows}
    json.dump(out, open(sys.argv[2], "w"), indent=1)
    lines = [f"Device: {out['device']}, torch {out['torch']}, Triton {out['triton']}; "
             f"copy (torch, this run) {copy_gbps:.0f} GB/s, quiver copy kernel {bench.get('copy_GBps', 0):.0f} GB/s.",
             "Ratio = torch ms / quiver ms (> 1: quiver faster).", "",
             "| op | dtype | shape | quiver ms | quiver GB/s (of copy) | TFLOP/s | vs | torch ms | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tf = f"{r['quiver_TFLOPs']:.1f}" if r["quiver_TFLOPs"] else ""
        lines.append(f"| {r['op']} | {r['dtype']} | {r['shape']} | {r['quiver_ms']:.4f} | "
                     f"{r['quiver_GBps']:.0f} ({r['quiver_frac_copy']:.0%}) | {tf} | {r['torch']} | "
                     f"{r['torch_ms']:.4f} | {r['ratio']:.2f} |")
    open(sys.argv[3], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    bad = [r for r in rows if not math.isfinite(r["ratio"])]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
