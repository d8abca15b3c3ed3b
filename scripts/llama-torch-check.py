#!/usr/bin/env python3
"""quiver-llm's logits against a torch reference of the same GGUF model (the H100 check at the
Llama-3-8B shape; device-check runs it on the model scripts/llama-bench-model.py writes).

Usage: llama-torch-check.py MODEL.gguf --prompt-ids 1,2,3 -n N [DUMP ...] [--token-prefill-dumps DUMP ...]
Each DUMP is a quiver-llm --dump-logits file of that run (N rows of vocabulary floats), run with
the prompt as one batch or (--token-prefill-dumps) with --token-prefill. The
reference is written from the model's definition (as tests/tools/llama_ref.py, which is the fp64
numpy oracle for small models), in float32 on the GPU with TF32 off, reading the GGUF itself
(F32 / F16 / BF16 tensors); for batch-prefill dumps the prompt's layer products take the
roundings of quiver-llm's prefill (docs/llm.md: input and product rounded to the weights' 16-bit
type). It feeds back its own greedy ids; a row is compared only while every earlier id agreed.
Passes when every compared row's max |quiver - torch| is at most the bound (1e-4 of the row's
max |logit| for --token-prefill runs, BOUND_PREFILL for batch-prefill runs) and the ids agree
wherever torch's top-2 margin exceeds twice that bound.
"""
import argparse
import mmap
import struct
import sys

import numpy as np
import torch

TYPES = {0: ("<f4", 4), 1: ("<f2", 2), 30: ("bf16", 2)}   # ggml type id: numpy dtype, bytes
BOUND = 1e-4
# Runs whose prompt ran as one batch with bf16 products: the reference takes the same roundings,
# but a value within f32's error of a bf16 midpoint may round the other way (tests/tools/
# quiver_llm_test.py's bound for such models).
BOUND_PREFILL = 8 * 2.0 ** -8


def read_gguf(path):
    f = open(path, "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    at = 0

    def take(fmt):
        nonlocal at
        v = struct.unpack_from(fmt, m, at)
        at += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal at
        n = take("<Q")
        s = bytes(m[at:at + n]).decode("utf-8")
        at += n
        return s

    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    if bytes(m[0:4]) != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    at = 4
    take("<I")
    n_tensors, n_kv = take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = string()
        meta[k] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        infos.append((name, dims, take("<I"), take("<Q")))
    align = meta.get("general.alignment", 32)
    base = at + (-at % align)
    tensors, types = {}, {}
    for name, dims, tid, off in infos:
        types[name] = tid
        if tid not in TYPES:
            sys.exit("%s: tensor %s has type %d; this check reads F32, F16 and BF16" % (path, name, tid))
        dtype, size = TYPES[tid]
        n = int(np.prod(dims))
        raw = np.frombuffer(m, dtype="<u2" if dtype == "bf16" else dtype, count=n, offset=base + off)
        t = torch.from_numpy(raw.copy()).cuda()
        t = (t.to(torch.int32) << 16).view(torch.float32) if dtype == "bf16" else t.float()
        tensors[name] = t.reshape(dims[::-1]) if len(dims) == 2 else t
    return meta, tensors, types


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("dumps", nargs="*")
    ap.add_argument("--token-prefill-dumps", nargs="*", default=[])
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("-n", type=int, required=True)
    a = ap.parse_intermixed_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    meta, w, types = read_gguf(a.model)
    E, L = meta["llama.embedding_length"], meta["llama.block_count"]
    H, KVH = meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"]
    D, eps, base = E // H, meta["llama.attention.layer_norm_rms_epsilon"], meta["llama.rope.freq_base"]
    group = H // KVH
    out_w = w.get("output.weight", w["token_embd.weight"])
    freq = base ** (-2.0 * torch.arange(D // 2, device="cuda", dtype=torch.float64) / D)
    kc, vc, kp = [[] for _ in range(L)], [[] for _ in range(L)], [[] for _ in range(L)]

    def norm(x, g):
        return x * torch.rsqrt((x * x).mean() + eps) * g

    def rope(x, pos):   # (n, D): adjacent pairs
        th = (pos * freq).float()
        c, s = th.cos(), th.sin()
        x0, x1 = x[:, 0::2], x[:, 1::2]
        return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), -1).flatten(-2)

    prefilling = False   # the prompt's products take the prefill's roundings
    rounded = {1: torch.float16, 30: torch.bfloat16}   # ggml type id: its 16-bit torch type

    def product(name, x):
        t = rounded.get(types[name]) if prefilling else None
        if t is None:
            return w[name] @ x
        return (w[name] @ x.to(t).float()).to(t).float()

    def attention_type(b):
        """The 16-bit type layer b's prompt attention runs in: its Q, K, V and output weights'
        shared one (F16 or BF16 here), else None."""
        ts = {types[b + n + ".weight"] for n in ("attn_q", "attn_k", "attn_v", "attn_output")}
        return rounded.get(ts.pop()) if len(ts) == 1 else None

    def step(tok, pos):
        x = w["token_embd.weight"][tok].clone()
        for l in range(L):
            b = "blk.%d." % l
            n = norm(x, w[b + "attn_norm.weight"])
            q = rope(product(b + "attn_q.weight", n).view(H, D), pos)
            kc[l].append(rope(product(b + "attn_k.weight", n).view(KVH, D), pos))
            vc[l].append(product(b + "attn_v.weight", n).view(KVH, D))
            k, v = torch.stack(kc[l]), torch.stack(vc[l])   # (pos + 1, KVH, D)
            t = attention_type(b) if prefilling else None
            if t is not None:   # the prompt's attention in 16 bits: rotated Q and K rounded
                q = q.to(t).float()
                kp[l].append(kc[l][-1].to(t).float())
                k = torch.stack(kp[l])
            kh = k[:, torch.arange(H, device="cuda") // group, :]   # (pos + 1, H, D)
            vh = v[:, torch.arange(H, device="cuda") // group, :]
            p = torch.softmax(torch.einsum("hd,phd->hp", q, kh) / D ** 0.5, -1)
            x = x + product(b + "attn_output.weight", torch.einsum("hp,phd->hd", p, vh).reshape(-1))
            m = norm(x, w[b + "ffn_norm.weight"])
            g, u = product(b + "ffn_gate.weight", m), product(b + "ffn_up.weight", m)
            x = x + product(b + "ffn_down.weight", torch.nn.functional.silu(g) * u)
        return out_w @ norm(x, w["output_norm.weight"])

    prompt = [int(s) for s in a.prompt_ids.split(",")]

    def reference_rows(emulate_prefill):
        nonlocal prefilling
        for l in range(L):
            kc[l].clear()
            vc[l].clear()
            kp[l].clear()
        prefilling = emulate_prefill
        for i, t in enumerate(prompt):
            logits = step(t, i)
        prefilling = False
        rows, pos = [], len(prompt)
        while True:
            rows.append(logits.double().cpu().numpy())
            if len(rows) == a.n:
                return rows
            logits = step(int(torch.argmax(logits)), pos)
            pos += 1

    ok = True
    for dumps, emulate, bound in ((a.dumps, True, BOUND_PREFILL), (a.token_prefill_dumps, False, BOUND)):
        if not dumps:
            continue
        rows = reference_rows(emulate)
        V = rows[0].size
        for path in dumps:
            got = np.fromfile(path, dtype="<f4").reshape(-1, V)
            worst, compared = 0.0, 0
            for r, ref in enumerate(rows):
                if r >= len(got):
                    ok = False
                    print("%s: %d rows, expected %d" % (path, len(got), len(rows)))
                    break
                err = np.abs(got[r] - ref).max() / np.abs(ref).max()
                worst = max(worst, err)
                compared += 1
                top2 = np.sort(ref)[-2:]
                margin = (top2[1] - top2[0]) / np.abs(ref).max()
                same = int(np.argmax(got[r])) == int(np.argmax(ref))
                if not same and margin > 2 * bound:
                    ok = False
                    print("%s: row %d: quiver's id %d, torch's %d (margin %.2e)" %
                          (path, r, np.argmax(got[r]), np.argmax(ref), margin))
                if not same:
                    break   # the runs feed back different ids from here on
            ok = ok and worst <= bound
            print("%s: %d rows compared, max error %.2e of max|logit| (bound %.2e)" % (path, compared, worst, bound))
    print("llama-torch-check: %s" % ("passed" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
