#!/usr/bin/env python3
"""The H100 performance goal table (docs/perf/h100.md) from one device run's files:

  python3 scripts/perf-table.py DIR > docs/perf/h100.md

DIR holds bench-cuda.json (quiver-bench --backend cuda), vs-torch.json (scripts/bench-vs-torch.py,
same call) and bench-vulkan.json (quiver-bench --backend vulkan, same call). Every ratio is
quiver against a figure measured in that same call; nothing is read from stored anchors.
"""
import json
import os
import sys

MEMORY_OPS = ["rms_norm", "layer_norm", "add_rms_norm", "softmax", "silu_gate", "gelu_erf", "gelu_tanh", "rope"]


def load(d, name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


def main():
    d = sys.argv[1]
    cuda, vs, vk = load(d, "bench-cuda.json"), load(d, "vs-torch.json"), load(d, "bench-vulkan.json")
    q = {(r["op"], r["dtype"], r["shape"]): r for r in cuda["results"]}
    torch_rows = {}
    for r in vs["rows"]:
        torch_rows.setdefault((r["op"], r["dtype"], r["shape"]), []).append(r)
    copy = vs["copy_GBps_torch"]
    rows = []   # goal, case, quiver, reference, ratio, target, met, copy at the case's size / copy

    def add(goal, case, quiver, ref_label, ref, target, same_size=None):
        ratio = quiver / ref if ref else float("nan")
        rows.append((goal, case, quiver, ref_label, ref, ratio, target, ratio >= target, same_size))

    torch_copy_at = vs.get("copy_same_size_GBps_torch", {})

    def same_size(r):
        # quiver's copy kernel (bench-cuda.json) and torch's copy (vs-torch.json) moving the case's
        # bytes, as fractions of torch's big copy.
        ours = r["copy_same_size_GBps"] / copy if "copy_same_size_GBps" in r else None
        theirs = torch_copy_at.get(str(int(r["bytes"])))
        return (ours, theirs / copy if theirs else None)

    for shape in ("32768x4096", "8192x4096"):
        for dt in ("f32", "bf16"):
            for op in MEMORY_OPS:
                r = q.get((op, dt, shape))
                if r:
                    add("memory-bound >= 97% of copy", f"{op} {dt} {shape}", r["bytes"] / r["median_ms"] / 1e6,
                        "torch copy GB/s", copy, 0.97, same_size(r))
    for dt in ("f32", "bf16"):
        for op in MEMORY_OPS:
            key = (op, dt, "4096x1024")
            if key in q and key in torch_rows:
                best = min(torch_rows[key], key=lambda t: t["torch_ms"])
                add(">= Triton (torch where no Triton kernel) at 4096x1024", f"{op} {dt} 4096x1024",
                    best["torch_ms"] / q[key]["median_ms"], best["torch"] + " (speed ratio)", 1.0, 1.0)
    for dt in ("bf16", "f16", "q8_0", "q4_0"):
        r = q.get(("matvec", dt, "14336x4096"))
        if r:
            add("matvec >= 90% of copy", f"matvec {dt} 14336x4096", r["bytes"] / r["median_ms"] / 1e6,
                "torch copy GB/s", copy, 0.90, same_size(r))
    for n in (4096, 8192):
        key = ("matmul", "bf16", f"{n}x{n}x{n}")
        if key in q and key in torch_rows:
            t = torch_rows[key][0]
            add("bf16 matmul >= 90% of cuBLAS", f"matmul bf16 {n}^3", q[key]["flops"] / q[key]["median_ms"] / 1e9,
                "cuBLAS TFLOP/s", q[key]["flops"] / t["torch_ms"] / 1e9, 0.90)
    for op in ("attention", "attention_causal"):
        key = (op, "bf16", "B4H32S4096D128")
        if key in q and key in torch_rows:
            t = torch_rows[key][0]
            add("attention >= 80% of SDPA", f"{op} bf16 B4H32S4096D128", q[key]["flops"] / q[key]["median_ms"] / 1e9,
                "torch SDPA TFLOP/s", q[key]["flops"] / t["torch_ms"] / 1e9, 0.80)
    if vk:
        for r in vk["results"]:
            c = q.get((r["op"], r["dtype"], r["shape"]))
            if c and r["op"] in MEMORY_OPS:
                add("Vulkan >= 85% of quiver CUDA", f"{r['op']} {r['dtype']} {r['shape']}",
                    r["bytes"] / r["median_ms"] / 1e6, "quiver CUDA GB/s", c["bytes"] / c["median_ms"] / 1e6, 0.85)
    load_ms = cuda.get("module_load_ms", {})
    lib = load_ms.get("op_library_median", load_ms.get("op_library_first"))
    if lib is not None:
        rows.append(("module load < 2 ms", f"op library ({load_ms.get('image')}), median of fresh loads", lib,
                     "limit ms", 2.0, 2.0 / lib, 1.0, lib < 2.0, None))
    met = sum(1 for r in rows if r[7])
    print("# H100 performance goals\n")
    print(f"Device {vs['device']}; torch {vs['torch']}, Triton {vs['triton']}; torch copy {copy:.0f} GB/s and quiver's "
          f"copy kernel {cuda.get('copy_GBps', 0):.0f} GB/s in this run. {met} of {len(rows)} rows meet their goal.\n")
    print("Made by `bash scripts/stage-device.sh <build>`, then on the device (carry .device .gl): "
          "`QUIVER_DEVICE_CONFIGS=\"\" QUIVER_DEVICE_BENCH=1 bash scripts/device-check.sh .device/build`, then "
          "`python3 scripts/perf-table.py <files>`. Speed ratios: the reference's time / quiver's time.\n")
    print("Last two columns: quiver's copy kernel (rotated past the L2 like the case) and torch's copy "
          "(L2 flushed between runs) moving the same number of bytes as the case, as fractions of the "
          "copy reference: what a plain copy reaches at that size.\n")
    print("| goal | case | quiver | reference | ref | ratio | target | met | quiver copy at this size | torch copy at this size |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda v: f"{v:.3f}" if v is not None else ""
    for goal, case, qv, ref_label, ref, ratio, target, ok, same in rows:
        ours, theirs = same if same is not None else (None, None)
        print(f"| {goal} | {case} | {qv:.2f} | {ref_label} | {ref:.2f} | {ratio:.3f} | {target:.2f} | "
              f"{'yes' if ok else 'no'} | {fmt(ours)} | {fmt(theirs)} |")
    print("\nWhat limits each unmet goal, with the profiler evidence: docs/perf/NOTES.md, "
          "\"Unmet goals: what limits them\".")


if __name__ == "__main__":
    main()
