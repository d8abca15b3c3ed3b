#!/usr/bin/python3
"""The op library on the CPU backend beside numpy (OpenBLAS) on the same machine, in one run.

Runs `quiver-bench --backend cpu --cpu-shapes` (and, with --before, a second quiver-bench, e.g.
an older build, on the shapes it has), times the same ops written in numpy, a copy of the
matvec weights (np.copyto, STREAM-like) and OpenBLAS's sgemm, and writes a Markdown table with
each goal of docs/perf/cpu.md and whether it is met.

Usage: /usr/bin/python3 scripts/cpu-bench.py [--bench build/default/bin/quiver-bench]
           [--before OTHER/quiver-bench] [--iters 30] [--out docs/perf/cpu-table.md] [--json out.json]
Debian's python3-numpy (OpenBLAS) is what the table names; numpy's own thread count is left as is.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def median_ms(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def numpy_times(iters):
    rng = np.random.default_rng(1)
    out = {}
    x = rng.standard_normal((2048, 4096), dtype=np.float32)
    w = rng.standard_normal(4096, dtype=np.float32)
    eps = np.float32(1e-6)
    out["rms_norm f32 2048x4096"] = median_ms(
        lambda: x * (np.float32(1) / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)) * w, iters)

    def softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
        return e

    out["softmax f32 2048x4096"] = median_ms(lambda: softmax(x), iters)
    a = rng.standard_normal(4096 * 1024, dtype=np.float32)
    g = rng.standard_normal(4096 * 1024, dtype=np.float32)
    out["silu_gate f32 4096x1024"] = median_ms(lambda: a / (np.float32(1) + np.exp(-a)) * g, iters)
    xs = rng.standard_normal((4096, 1024), dtype=np.float32)
    out["rms_norm f32 4096x1024"] = median_ms(
        lambda: xs * (np.float32(1) / np.sqrt(np.mean(xs * xs, axis=1, keepdims=True) + eps)) * w[:1024], iters)
    out["softmax f32 4096x1024"] = median_ms(lambda: softmax(xs), iters)
    weights = rng.standard_normal((4096, 4096), dtype=np.float32)
    v = rng.standard_normal(4096, dtype=np.float32)
    out["matvec f32 4096x4096"] = median_ms(lambda: weights @ v, iters)
    dst = np.empty_like(weights)
    out["copy of the weights"] = median_ms(lambda: np.copyto(dst, weights), iters)
    for n in (512, 1024):
        ma = rng.standard_normal((n, n), dtype=np.float32)
        mb = rng.standard_normal((n, n), dtype=np.float32)
        out["matmul f32 %dx%dx%d" % (n, n, n)] = median_ms(lambda: ma @ mb, iters)
    return out


def blas_library():
    """The BLAS shared object numpy loaded (Debian's libblas.so.3 alternative: OpenBLAS or the
    reference BLAS, an order of magnitude apart), from this process's memory map."""
    np.ones((2, 2), dtype=np.float32) @ np.ones((2, 2), dtype=np.float32)
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.lower() and line.split()[-1].startswith("/")}
    return ", ".join(sorted(os.path.realpath(p) for p in libs)) or "unknown"


def run_bench(path, iters, extra):
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "bench.json")
        cmd = [path, "--backend", "cpu", "--json", js, "--iters", str(iters), "--warm-ms", "200",
               "--rotate-mb", "64", "--load-repeats", "0"] + extra
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        with open(js) as f:
            data = json.load(f)
    return {"%s %s %s" % (r["op"], r["dtype"], r["shape"]): r for r in data["results"] if "median_ms" in r}, data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/default/bin/quiver-bench")
    ap.add_argument("--before", help="another quiver-bench (an older build) for a 'before' column")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--out", help="write the Markdown table here (default: stdout)")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args()

    after, after_data = run_bench(args.bench, args.iters, ["--cpu-shapes"])
    before = {}
    if args.before:
        before, _ = run_bench(args.before, args.iters, ["--filter", "f32 4096x1024"])
    ref = numpy_times(args.iters)

    copy_w_ms = ref["copy of the weights"]
    weight_bytes = 4096 * 4096 * 4
    copy_gbps = 2 * weight_bytes / (copy_w_ms * 1e-3) / 1e9
    rows = []
    goals = []

    def row(key, goal_kind):
        q = after.get(key)
        n = ref.get(key)
        if q is None or n is None:
            return
        b = before.get(key, {}).get("median_ms")
        speed = n / q["median_ms"]
        if goal_kind == "2x":
            goal, met = ">= 2x numpy", speed >= 2
        elif goal_kind == "1x":
            goal, met = ">= numpy", speed >= 1
        elif goal_kind == "matvec":
            gbps = weight_bytes / (q["median_ms"] * 1e-3) / 1e9
            frac = gbps / copy_gbps
            goal, met = ">= 80%% of copy (%.0f%%)" % (100 * frac), frac >= 0.8
        else:
            goal, met = ">= 70%% of sgemm (%.0f%%)" % (100 * speed), speed >= 0.7
        rows.append("| %s | %s | %.2f | %.2f | %.2fx | %s | %s |" % (
            key, "%.2f" % b if b else "-", q["median_ms"], n, speed, goal, "yes" if met else "**no**"))
        goals.append({"case": key, "quiver_ms": q["median_ms"], "before_ms": b, "numpy_ms": n, "speedup": speed,
                      "goal": goal, "met": met})

    for key, kind in [("rms_norm f32 2048x4096", "2x"), ("softmax f32 2048x4096", "2x"),
                      ("rms_norm f32 4096x1024", "1x"), ("softmax f32 4096x1024", "1x"),
                      ("silu_gate f32 4096x1024", "2x"), ("matvec f32 4096x4096", "matvec"),
                      ("matmul f32 512x512x512", "matmul"), ("matmul f32 1024x1024x1024", "matmul")]:
        row(key, kind)
    lines = [
        "CPU backend (%s, image %s) vs numpy %s on %s, median ms, one run:" % (
            after_data.get("device", "?"), after_data.get("module_load_ms", {}).get("image", "?"), np.__version__,
            blas_library()),
        "",
        "| case | quiver before | quiver | numpy | numpy / quiver | goal | met |",
        "|---|---|---|---|---|---|---|",
    ] + rows + [
        "",
        "Same run: np.copyto of the 64 MiB matvec weights %.2f ms (%.1f GB/s read + write); "
        "quiver's copy kernel %.1f GB/s." % (copy_w_ms, copy_gbps, after_data.get("copy_GBps", 0.0)),
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"goals": goals, "numpy_ms": ref, "copy_GBps_numpy": copy_gbps, "quiver": after_data}, f, indent=1)


if __name__ == "__main__":
    main()
