#!/usr/bin/env python3
"""Writes a small random Llama model as a GGUF file, for the tests of quiver-llm's GGUF reader.

Written from the GGUF specification and ggml's block layouts, independently of the C++ reader:
the tests compare what the reader finds with what this script says it wrote (--json sidecar).

GGUF layout (all little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count; the
metadata key/value pairs (key: u64 length + UTF-8; u32 value type; value); the tensor infos
(name; u32 n_dims; u64 dims, the row length first; u32 ggml type; u64 offset into the data
section); padding to the alignment (general.alignment, 32 by default); the data section, each
tensor at an aligned offset.

The sidecar holds the metadata written, the model's hyper-parameters, per tensor its type, dims,
offset and checksums of its dequantized values in fp64 (sum, sum of squares, a position-weighted
sum with weights (i % 251 + 1) / 251 and the weighted sum of magnitudes, for tolerances), a few
sampled values, and the file offsets of every header field so that tests can corrupt them.
"""
import argparse
import json
import struct

import numpy as np

# GGUF metadata value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FORMATS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
                  BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}

# ggml tensor types: id, elements per block, bytes per block.
GGML_TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
              "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2)}

Q8_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "i1", 32)])
Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
Q4_K_BLOCK = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)])
Q6_K_BLOCK = np.dtype([("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")])
assert [Q8_0_BLOCK.itemsize, Q4_0_BLOCK.itemsize, Q4_K_BLOCK.itemsize, Q6_K_BLOCK.itemsize] == [34, 18, 144, 210]


def half_and_inverse(scale):
    """The scale as stored (f16) and its inverse (0 where the scale is 0)."""
    d = scale.astype(np.float16)
    df = d.astype(np.float32)
    inv = np.divide(1.0, df, out=np.zeros_like(df), where=df > 0)
    return d, df, inv


# ---- quantizers: any valid encoding (a simple max-based one) ----

def quantize(x, type_name):
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if type_name == "F32":
        return x.astype("<f4").tobytes()
    if type_name == "F16":
        return x.astype("<f2").tobytes()
    if type_name == "BF16":
        return (x.view("<u4") >> 16).astype("<u2").tobytes()
    if type_name == "Q8_0":
        xb = x.reshape(-1, 32)
        d, _, inv = half_and_inverse(np.abs(xb).max(axis=1) / 127)
        out = np.zeros(len(xb), Q8_0_BLOCK)
        out["d"] = d
        out["qs"] = np.clip(np.rint(xb * inv[:, None]), -127, 127).astype(np.int8)
        return out.tobytes()
    if type_name == "Q4_0":
        xb = x.reshape(-1, 32)
        d, _, inv = half_and_inverse(np.abs(xb).max(axis=1) / 7)
        q = (np.clip(np.rint(xb * inv[:, None]), -8, 7) + 8).astype(np.uint8)
        out = np.zeros(len(xb), Q4_0_BLOCK)
        out["d"] = d
        out["qs"] = q[:, :16] | (q[:, 16:] << 4)   # byte j: element j low, element j + 16 high
        return out.tobytes()
    if type_name == "Q4_K":
        return quantize_q4_k(x.reshape(-1, 8, 32))
    if type_name == "Q6_K":
        return quantize_q6_k(x.reshape(-1, 16, 16))
    raise ValueError(type_name)


def quantize_q4_k(xb):
    nb = len(xb)
    lo = np.minimum(xb.min(axis=2), 0)           # (nb, 8): x = scale * q - min, min >= 0
    sub_scale = (xb.max(axis=2) - lo) / 15
    sub_min = -lo
    d, df, dinv = half_and_inverse(sub_scale.max(axis=1) / 63)
    dmin, dminf, dmininv = half_and_inverse(sub_min.max(axis=1) / 63)
    sc = np.clip(np.rint(sub_scale * dinv[:, None]), 0, 63).astype(np.uint8)
    mn = np.clip(np.rint(sub_min * dmininv[:, None]), 0, 63).astype(np.uint8)
    eff_scale = df[:, None] * sc
    eff_min = dminf[:, None] * mn
    inv = np.divide(1.0, eff_scale, out=np.zeros_like(eff_scale), where=eff_scale > 0)
    q = np.clip(np.rint((xb + eff_min[:, :, None]) * inv[:, :, None]), 0, 15).astype(np.uint8)
    scales = np.zeros((nb, 12), np.uint8)
    scales[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)   # sub-blocks 4..7 keep 4 bits in bytes 8..11
    scales[:, 4:8] = mn[:, 0:4] | ((mn[:, 4:8] >> 4) << 6)   # and their top 2 bits here
    scales[:, 8:12] = (sc[:, 4:8] & 0xF) | ((mn[:, 4:8] & 0xF) << 4)
    out = np.zeros(nb, Q4_K_BLOCK)
    out["d"], out["dmin"], out["scales"] = d, dmin, scales
    pairs = q.reshape(nb, 4, 2, 32)                  # 32 bytes hold sub-blocks 2p (low) and 2p+1 (high)
    out["qs"] = (pairs[:, :, 0, :] | (pairs[:, :, 1, :] << 4)).reshape(nb, 128)
    return out.tobytes()


def quantize_q6_k(xb):
    nb = len(xb)
    sub_scale = np.abs(xb).max(axis=2) / 31          # (nb, 16)
    d, df, dinv = half_and_inverse(sub_scale.max(axis=1) / 127)
    sc = np.clip(np.rint(sub_scale * dinv[:, None]), 0, 127).astype(np.int8)
    eff = df[:, None] * sc
    inv = np.divide(1.0, eff, out=np.zeros_like(eff), where=eff > 0)
    q = (np.clip(np.rint(xb * inv[:, :, None]), -32, 31) + 32).astype(np.uint8).reshape(nb, 2, 4, 32)
    lo, hi = q & 0xF, q >> 4                         # per half: 4 quarters of 32 elements
    out = np.zeros(nb, Q6_K_BLOCK)
    ql = np.concatenate([lo[:, :, 0] | (lo[:, :, 2] << 4), lo[:, :, 1] | (lo[:, :, 3] << 4)], axis=2)
    out["ql"] = ql.reshape(nb, 128)
    out["qh"] = (hi[:, :, 0] | (hi[:, :, 1] << 2) | (hi[:, :, 2] << 4) | (hi[:, :, 3] << 6)).reshape(nb, 64)
    out["scales"] = sc
    out["d"] = d
    return out.tobytes()


# ---- dequantizers: from the bytes alone, float32 arithmetic in ggml's order ----

def dequantize(data, type_name):
    if type_name == "F32":
        return np.frombuffer(data, "<f4").astype(np.float32)
    if type_name == "F16":
        return np.frombuffer(data, "<f2").astype(np.float32)
    if type_name == "BF16":
        return (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view(np.float32)
    if type_name == "Q8_0":
        b = np.frombuffer(data, Q8_0_BLOCK)
        return (b["d"].astype(np.float32)[:, None] * b["qs"].astype(np.float32)).reshape(-1)
    if type_name == "Q4_0":
        b = np.frombuffer(data, Q4_0_BLOCK)
        q = np.concatenate([b["qs"] & 0xF, b["qs"] >> 4], axis=1).astype(np.float32) - 8
        return (b["d"].astype(np.float32)[:, None] * q).reshape(-1)
    if type_name == "Q4_K":
        b = np.frombuffer(data, Q4_K_BLOCK)
        s = b["scales"].astype(np.uint32)
        sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)], axis=1)
        mn = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
        d1 = b["d"].astype(np.float32)[:, None] * sc.astype(np.float32)       # (nb, 8)
        m1 = b["dmin"].astype(np.float32)[:, None] * mn.astype(np.float32)
        qs = b["qs"].reshape(-1, 4, 32)
        q = np.stack([qs & 0xF, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
        return (d1[:, :, None] * q - m1[:, :, None]).astype(np.float32).reshape(-1)
    if type_name == "Q6_K":
        b = np.frombuffer(data, Q6_K_BLOCK)
        nb = len(b)
        ql = b["ql"].reshape(nb, 2, 2, 32)   # half, first/second 32 bytes, l
        qh = b["qh"].reshape(nb, 2, 32)
        quarters = []
        for k in range(4):                   # element 32k + l of a half
            lo = ql[:, :, k & 1, :]
            lo = (lo & 0xF) if k < 2 else (lo >> 4)
            quarters.append((lo | (((qh >> (2 * k)) & 3) << 4)).astype(np.int32) - 32)
        q = np.stack(quarters, axis=2).reshape(nb, 256).astype(np.float32)
        scale = b["d"].astype(np.float32)[:, None] * b["scales"].astype(np.float32)   # (nb, 16)
        return (np.repeat(scale, 16, axis=1) * q).astype(np.float32).reshape(-1)
    raise ValueError(type_name)


def checksums(values, rng):
    v = values.astype(np.float64)
    w = (np.arange(len(v)) % 251 + 1) / 251.0
    picks = sorted(set([0, len(v) - 1] + list(rng.integers(0, len(v), 6))))
    return {"sum": float(v.sum()), "sumsq": float((v * v).sum()), "wsum": float((v * w).sum()),
            "abs_wsum": float((np.abs(v) * w).sum()), "abs_sum": float(np.abs(v).sum()),
            "samples": [[int(i), float(v[i])] for i in picks]}


# ---- the file ----

class Writer:
    def __init__(self):
        self.buf = bytearray()

    def pos(self):
        return len(self.buf)

    def put(self, fmt, *values):
        self.buf += struct.pack(fmt, *values)

    def string(self, s):
        raw = s.encode("utf-8")
        self.put("<Q", len(raw))
        self.buf += raw

    def value(self, vtype, v):
        if vtype == STRING:
            self.string(v)
        elif vtype == ARRAY:
            etype, items = v
            self.put("<I", etype)
            self.put("<Q", len(items))
            for item in items:
                self.value(etype, item)
        else:
            self.put(SCALAR_FORMATS[vtype], v)

    def pad(self, alignment):
        self.buf += b"\0" * (-len(self.buf) % alignment)


def make_tokens(vocab):
    tokens = ["<unk>", "<s>", "</s>"]
    words = ["\u2581hello", "\u2581world", "\u2581h\u00e9llo", "\u2581", "ab\u2581cd"]
    while len(tokens) < vocab:
        i = len(tokens)
        if i - 3 < 256 and i < vocab - len(words) - 4:
            tokens.append("<0x%02X>" % (i - 3))
        elif words:
            tokens.append(words.pop(0))
        else:
            tokens.append("\u2581tok%d" % i)
    return tokens[:vocab]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the sidecar here")
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=300)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--rope-base", type=float, default=500000.0)
    ap.add_argument("--rope-dims", type=int, help="llama.rope.dimension_count (default: the head size)")
    ap.add_argument("--no-defaults", action="store_true",
                    help="omit head_count_kv, rope.freq_base and rope.dimension_count (the reader's defaults apply)")
    ap.add_argument("--no-tokens", action="store_true", help="omit tokenizer.ggml.tokens")
    ap.add_argument("--alignment", type=int, help="write general.alignment (default: absent, 32)")
    ap.add_argument("--version", type=int, default=3)
    ap.add_argument("--architecture", default="llama", help="general.architecture (the keys stay llama.*)")
    ap.add_argument("--rope-freqs", action="store_true",
                    help="write rope_freqs.weight (F32, rotary dims / 2 factors in [1, 4]: Llama 3's frequency divisors)")
    ap.add_argument("--rope-scaling", help="llama.rope.scaling.type (with --rope-scaling-factor)")
    ap.add_argument("--rope-scaling-factor", type=float, default=1.0)
    for cls in ["embd", "attn", "ffn", "norm", "output"]:
        ap.add_argument("--type-" + cls, default="F32", choices=sorted(GGML_TYPES))
    ap.add_argument("--type-attn-v", choices=sorted(GGML_TYPES),
                    help="attn_v.weight's type (default: --type-attn's; Q4_K_M files keep it in Q6_K)")
    ap.add_argument("--type-ffn-up", choices=sorted(GGML_TYPES),
                    help="ffn_up.weight's type (default: --type-ffn's)")
    ap.add_argument("--tied", action="store_true", help="no output.weight (tied to token_embd)")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    if a.no_defaults:
        a.kv_heads = a.heads   # what the reader assumes without llama.attention.head_count_kv

    head_dim = a.embd // a.heads
    E, F, V, KV = a.embd, a.ff, a.vocab, head_dim * a.kv_heads
    tokens = make_tokens(V)
    meta = [("general.architecture", STRING, a.architecture), ("general.name", STRING, "quiver test model")]
    if a.alignment is not None:
        meta.append(("general.alignment", U32, a.alignment))
    meta += [("llama.context_length", U32, a.ctx), ("llama.embedding_length", U32, E),
             ("llama.block_count", U32, a.layers), ("llama.feed_forward_length", U32, F),
             ("llama.attention.head_count", U32, a.heads)]
    if not a.no_defaults:
        meta += [("llama.attention.head_count_kv", U32, a.kv_heads),
                 ("llama.attention.key_length", U32, head_dim), ("llama.attention.value_length", U32, head_dim)]
    meta.append(("llama.attention.layer_norm_rms_epsilon", F32, a.eps))
    if not a.no_defaults:
        meta += [("llama.rope.freq_base", F32, a.rope_base),
                 ("llama.rope.dimension_count", U32, a.rope_dims or head_dim)]
    if a.rope_scaling:
        meta += [("llama.rope.scaling.type", STRING, a.rope_scaling),
                 ("llama.rope.scaling.factor", F32, a.rope_scaling_factor)]
    meta.append(("tokenizer.ggml.model", STRING, "llama"))
    if not a.no_tokens:
        meta += [("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
                 ("tokenizer.ggml.scores", ARRAY, (F32, [float(-i) for i in range(V)])),
                 ("tokenizer.ggml.token_type", ARRAY, (I32, [3 if i < 3 else 1 for i in range(V)]))]
    meta += [("test.u8", U8, 200), ("test.i8", I8, -100), ("test.u16", U16, 60000), ("test.i16", I16, -30000),
             ("test.u32", U32, 4000000000), ("test.i32", I32, -2000000000), ("test.f32", F32, 0.25),
             ("test.bool", BOOL, True), ("test.u64", U64, 1 << 40), ("test.i64", I64, -(1 << 40)),
             ("test.f64", F64, -1.5), ("test.string", STRING, "\u2581quiver"),
             ("test.nested", ARRAY, (ARRAY, [(STRING, ["a", "bc"]), (STRING, []), (STRING, ["\u2581d"])])),
             ("test.dup_a", U32, 1), ("test.dup_b", U32, 2)]

    tensors = [("token_embd.weight", [E, V], a.type_embd)]
    for i in range(a.layers):
        b = "blk.%d." % i
        tensors += [(b + "attn_norm.weight", [E], a.type_norm), (b + "attn_q.weight", [E, E], a.type_attn),
                    (b + "attn_k.weight", [E, KV], a.type_attn), (b + "attn_v.weight", [E, KV], a.type_attn_v or a.type_attn),
                    (b + "attn_output.weight", [E, E], a.type_attn), (b + "ffn_norm.weight", [E], a.type_norm),
                    (b + "ffn_gate.weight", [E, F], a.type_ffn), (b + "ffn_up.weight", [E, F], a.type_ffn_up or a.type_ffn),
                    (b + "ffn_down.weight", [F, E], a.type_ffn)]
    tensors.append(("output_norm.weight", [E], a.type_norm))
    if not a.tied:
        tensors.append(("output.weight", [E, V], a.type_output))
    if a.rope_freqs:
        tensors.append(("rope_freqs.weight", [(a.rope_dims or head_dim) // 2], "F32"))
    alignment = a.alignment or 32

    # Tensor data first (offsets are needed in the infos).
    blobs, offset, infos = [], 0, []
    for name, dims, tname in tensors:
        n = int(np.prod(dims))
        scale = 0.1 if len(dims) == 2 else 1.0
        x = rng.standard_normal(n).astype(np.float32) * scale + (1.0 if len(dims) == 1 else 0.0)
        if name == "rope_freqs.weight":
            x = rng.uniform(1.0, 4.0, n).astype(np.float32)
        data = quantize(x, tname)
        assert len(data) == n // GGML_TYPES[tname][1] * GGML_TYPES[tname][2]
        infos.append((name, dims, tname, offset, data))
        offset += len(data) + (-len(data) % alignment)

    w = Writer()
    w.buf += b"GGUF"
    w.put("<I", a.version)
    w.put("<Q", len(tensors))
    w.put("<Q", len(meta))
    layout = {"tensor_count": 8, "metadata_count": 16, "kv": [], "tensors": []}
    for key, vtype, v in meta:
        entry = {"key": key, "key_offset": w.pos()}
        w.string(key)
        entry["type_offset"] = w.pos()
        w.put("<I", vtype)
        entry["value_offset"] = w.pos()
        w.value(vtype, v)
        layout["kv"].append(entry)
    for name, dims, tname, off, _ in infos:
        entry = {"name": name, "name_offset": w.pos()}
        w.string(name)
        entry["n_dims_offset"] = w.pos()
        w.put("<I", len(dims))
        entry["dims_offset"] = w.pos()
        for d in dims:
            w.put("<Q", d)
        entry["type_offset"] = w.pos()
        w.put("<I", GGML_TYPES[tname][0])
        entry["offset_offset"] = w.pos()
        w.put("<Q", off)
        layout["tensors"].append(entry)
    w.pad(alignment)
    layout["data_offset"] = w.pos()
    sums = []
    for name, dims, tname, off, data in infos:
        assert w.pos() == layout["data_offset"] + off
        w.buf += data
        w.pad(alignment)
        sums.append(checksums(dequantize(data, tname), rng))
    layout["file_size"] = w.pos()
    with open(a.path, "wb") as f:
        f.write(w.buf)

    if a.json:
        def plain(vtype, v):
            if vtype == ARRAY:
                return [plain(v[0], item) for item in v[1]]
            return v
        side = {
            "metadata": {k: {"type": t, "value": plain(t, v)} for k, t, v in meta if not k.startswith("tokenizer.")},
            "config": {"context_length": a.ctx, "embedding_length": E, "block_count": a.layers,
                       "feed_forward_length": F, "head_count": a.heads,
                       "head_count_kv": a.kv_heads, "head_dim": head_dim,
                       "rope_dimension_count": head_dim if a.no_defaults else (a.rope_dims or head_dim),
                       "vocab_size": V, "rms_norm_epsilon": a.eps,
                       "rope_freq_base": 10000.0 if a.no_defaults else a.rope_base, "tied_output": a.tied},
            "tokens": [] if a.no_tokens else tokens,
            "alignment": alignment,
            "tensors": [{"name": name, "type": tname, "type_id": GGML_TYPES[tname][0], "dims": dims,
                         "offset": off, "bytes": len(data), **s}
                        for (name, dims, tname, off, data), s in zip(infos, sums)],
            "layout": layout,
        }
        with open(a.json, "w") as f:
            json.dump(side, f, indent=1)


if __name__ == "__main__":
    main()
