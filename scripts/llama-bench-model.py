#!/usr/bin/env python3
"""Writes a Llama-shaped GGUF model with random weights for quiver-llm --bench (docs/llm.md).

Defaults: the Llama-3-8B shape (32 layers, embedding 4096, FFN 14336, 32 query / 8 KV heads,
vocabulary 128256, RoPE base 500000). Every matrix in one type (F16, BF16, Q8_0 or Q4_0), the
norms F32 near 1; quantized blocks hold random quants with scales that give weights of standard
deviation ~0.02, as a trained model's (16-bit weights: magnitudes of one binade, random signs). Written tensor by tensor (an 8B model in minutes, in
little memory), with gguf_gen.py's GGUF writer for the header; no tokenizer, so quiver-llm prints
ids only. Not a test fixture: gguf_gen.py writes those, with checksums.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
import gguf_gen as gg  # noqa: E402

ROWS_PER_CHUNK = 1024


def random_rows(rng, rows, cols, type_name):
    """`rows` rows of `cols` weights in `type_name`'s bytes."""
    if type_name in ("F16", "BF16"):
        # Random bits: a random sign and mantissa under one exponent, |w| in [1/128, 1/64) (BF16)
        # or [1/64, 1/32) (F16); drawing normals would take minutes at this size.
        bits = rng.integers(0, 1 << 16, rows * cols, dtype=np.uint16)
        bits = (bits & 0x807F) | 0x3C00 if type_name == "BF16" else (bits & 0x83FF) | 0x2400
        return bits.astype("<u2").tobytes()
    if type_name == "F32":
        return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02)).astype("<f4").tobytes()
    blocks = rows * cols // 32
    if type_name == "Q8_0":
        b = np.empty(blocks, gg.Q8_0_BLOCK)
        b["d"] = rng.uniform(2e-4, 4e-4, blocks).astype(np.float16)
        b["qs"] = rng.integers(-127, 128, (blocks, 32), dtype=np.int8)
    elif type_name == "Q4_0":
        b = np.empty(blocks, gg.Q4_0_BLOCK)
        b["d"] = rng.uniform(3e-3, 6e-3, blocks).astype(np.float16)
        b["qs"] = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
    else:
        raise SystemExit("llama-bench-model: type %s is not offered (F16, BF16, F32, Q8_0, Q4_0)" % type_name)
    return b.tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--type", default="Q4_0", help="of every matrix: F16, BF16, F32, Q8_0, Q4_0")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--embd", type=int, default=4096)
    ap.add_argument("--ff", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    E, F, V = a.embd, a.ff, a.vocab
    KV = E // a.heads * a.kv_heads
    meta = [("general.architecture", gg.STRING, "llama"), ("general.name", gg.STRING, "quiver bench model"),
            ("llama.context_length", gg.U32, a.ctx), ("llama.embedding_length", gg.U32, E),
            ("llama.block_count", gg.U32, a.layers), ("llama.feed_forward_length", gg.U32, F),
            ("llama.attention.head_count", gg.U32, a.heads), ("llama.attention.head_count_kv", gg.U32, a.kv_heads),
            ("llama.attention.layer_norm_rms_epsilon", gg.F32, 1e-5), ("llama.rope.freq_base", gg.F32, 500000.0),
            ("llama.vocab_size", gg.U32, V)]
    tensors = [("token_embd.weight", [E, V], a.type)]
    for i in range(a.layers):
        b = "blk.%d." % i
        tensors += [(b + "attn_norm.weight", [E], "F32"), (b + "attn_q.weight", [E, E], a.type),
                    (b + "attn_k.weight", [E, KV], a.type), (b + "attn_v.weight", [E, KV], a.type),
                    (b + "attn_output.weight", [E, E], a.type), (b + "ffn_norm.weight", [E], "F32"),
                    (b + "ffn_gate.weight", [E, F], a.type), (b + "ffn_up.weight", [E, F], a.type),
                    (b + "ffn_down.weight", [F, E], a.type)]
    tensors += [("output_norm.weight", [E], "F32"), ("output.weight", [E, V], a.type)]

    w = gg.Writer()
    w.buf += b"GGUF"
    w.put("<I", 3)
    w.put("<Q", len(tensors))
    w.put("<Q", len(meta))
    for key, vtype, v in meta:
        w.string(key)
        w.put("<I", vtype)
        w.value(vtype, v)
    offset = 0
    for name, dims, tname in tensors:
        w.string(name)
        w.put("<I", len(dims))
        for d in dims:
            w.put("<Q", d)
        w.put("<I", gg.GGML_TYPES[tname][0])
        w.put("<Q", offset)
        _, per_block, block_bytes = gg.GGML_TYPES[tname]
        n = int(np.prod(dims)) // per_block * block_bytes
        offset += n + (-n % 32)
    w.pad(32)
    with open(a.path, "wb") as f:
        f.write(w.buf)
        for name, dims, tname in tensors:
            cols, rows = dims[0], int(np.prod(dims[1:]))
            written = 0
            if len(dims) == 1:
                data = (1.0 + 0.1 * rng.standard_normal(cols)).astype("<f4").tobytes()
                f.write(data)
                written = len(data)
            else:
                for r in range(0, rows, ROWS_PER_CHUNK):
                    data = random_rows(rng, min(ROWS_PER_CHUNK, rows - r), cols, tname)
                    f.write(data)
                    written += len(data)
            f.write(b"\0" * (-written % 32))


if __name__ == "__main__":
    main()
