#!/usr/bin/env python3
"""Writes a Llama-shaped GGUF model with random weights for quiver-llm --bench (docs/llm.md).

Defaults: the Llama-3-8B shape (32 layers, embedding 4096, FFN 14336, 32 query / 8 KV heads,
vocabulary 128256, RoPE base 500000). Every matrix in one type (F16, BF16, Q8_0 or Q4_0; or Q4_K_M's
mix of Q4_K and Q6_K), the
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
    elif type_name == "Q4_K":
        # 6-bit scales of 32-63, each sub-block's min equal to its scale and dmin = 7.5 d:
        # w = d scale (q - 7.5), mean 0, sd ~0.02.
        nb = blocks // 8
        b = np.empty(nb, gg.Q4_K_BLOCK)
        d = rng.uniform(0.9e-4, 1.1e-4, nb)
        b["d"] = d.astype(np.float16)
        b["dmin"] = (7.5 * d).astype(np.float16)
        sc = rng.integers(32, 64, (nb, 8), dtype=np.uint8)
        scales = np.empty((nb, 12), np.uint8)
        scales[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)   # gguf_gen.quantize_q4_k's packing
        scales[:, 4:8] = scales[:, 0:4]
        scales[:, 8:12] = (sc[:, 4:8] & 0xF) | ((sc[:, 4:8] & 0xF) << 4)
        b["scales"] = scales
        b["qs"] = rng.integers(0, 256, (nb, 128), dtype=np.uint8)
    elif type_name == "Q6_K":
        b = np.empty(blocks // 8, gg.Q6_K_BLOCK)
        b["ql"] = rng.integers(0, 256, (blocks // 8, 128), dtype=np.uint8)
        b["qh"] = rng.integers(0, 256, (blocks // 8, 64), dtype=np.uint8)
        b["scales"] = rng.integers(8, 24, (blocks // 8, 16), dtype=np.int8)
        b["d"] = rng.uniform(5e-5, 1e-4, blocks // 8).astype(np.float16)
    else:
        raise SystemExit("llama-bench-model: type %s is not offered (F16, BF16, F32, Q8_0, Q4_0, Q4_K_M)" % type_name)
    return b.tobytes()


def more_bits(layer, layers):
    """llama.cpp's Q4_K_M rule for attn_v and ffn_down: Q6_K in the first and last eighth of the
    layers and every third between, Q4_K elsewhere."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--type", default="Q4_0", help="of every matrix: F16, BF16, F32, Q8_0, Q4_0; or Q4_K_M: Q4_K "
                    "with llama.cpp's Q4_K_M choice of Q6_K (attn_v and ffn_down in half the layers, output)")
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
    mixed = a.type == "Q4_K_M"
    t = "Q4_K" if mixed else a.type
    tensors = [("token_embd.weight", [E, V], t)]
    for i in range(a.layers):
        b = "blk.%d." % i
        t6 = "Q6_K" if mixed and more_bits(i, a.layers) else t
        tensors += [(b + "attn_norm.weight", [E], "F32"), (b + "attn_q.weight", [E, E], t),
                    (b + "attn_k.weight", [E, KV], t), (b + "attn_v.weight", [E, KV], t6),
                    (b + "attn_output.weight", [E, E], t), (b + "ffn_norm.weight", [E], "F32"),
                    (b + "ffn_gate.weight", [E, F], t), (b + "ffn_up.weight", [E, F], t),
                    (b + "ffn_down.weight", [F, E], t6)]
    tensors += [("output_norm.weight", [E], "F32"), ("output.weight", [E, V], "Q6_K" if mixed else t)]

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
