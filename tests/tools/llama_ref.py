#!/usr/bin/env python3
"""An fp64 numpy reference of a Llama model as llama.cpp runs it, for quiver-llm's tests.

Written from the model's definition, independently of quiver-llm and the op library: the tensors
are read from the GGUF file at the offsets gguf_gen.py's sidecar (--json) gives and dequantized
with gguf_gen.py's own numpy dequantizers; everything after is float64.

  token embedding; per layer: x += Wo attention(rope(Wq n(x)), rope(Wk n(x)), Wv n(x)) with
  n = RMSNorm(attn_norm); x += Wdown (silu(Wgate m(x)) * Wup m(x)) with m = RMSNorm(ffn_norm);
  logits = Woutput RMSNorm(output_norm)(x) (Woutput = token_embd when output.weight is absent).
  RoPE "normal" (llama.cpp's rope type 0 for llama): pairs (2i, 2i + 1) of the first
  rope.dimension_count elements of every head rotate by pos * freq_base^(-2i / dimension_count),
  divided by llama.rope.scaling.factor for linear scaling and by rope_freqs.weight[i] where
  present (llama.cpp's frequency factors).
  Attention: causal over the positions so far, scale 1 / sqrt(head size), query head h reads
  KV head h // (head_count / head_count_kv).
  Prefill (prefill()): the prompt's tokens take the same path, with the roundings docs/llm.md
  states for a prompt's layer products: F32 weights none; BF16 (F16) weights: the input rounded
  to bf16 (f16) and the product rounded to it; block-quantized weights: the weights, the input
  and the product rounded to f16. Where a layer's Q, K, V and output weights share a 16-bit
  product type, the prompt's attention takes the rotated Q and K rounded to it too (the cache
  keeps K unrounded). The output projection (of the last token) is not rounded.
  int8 activations (int8_activations=True, quiver-llm --int8-activations): outside a prefill (and
  in the prefill's output projection, which runs as a decode step's), the
  input of every Q8_0 / Q4_0 product whose rows are whole 1024-element chunks (the repacked
  matrices) and of every Q4_K / Q6_K product is first rounded as docs/numerics.md defines it: per 32-element block, x as float,
  d = max|x| / 127 (a float), q = x * 127 / max|x| rounded to nearest, ties away from zero; the
  product then reads d q.

Usage as a program: llama_ref.py MODEL.gguf MODEL.json --prompt-ids 1,2,3 -n N prints the
greedy continuation's ids.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_gen  # noqa: E402


def round_int8_blocks(x):
    """x rounded as int8 activations: d q per 32-element block (module doc); also the smallest
    distance of an unrounded |x| / d to a rounding midpoint (in units of q), which says how
    near the rounding came to going the other way."""
    b = np.asarray(x, dtype=np.float32).astype(np.float64).reshape(-1, 32)
    amax = np.abs(b).max(axis=1, keepdims=True)
    d = (amax / 127).astype(np.float32).astype(np.float64)
    scale = np.divide(127.0, amax, out=np.zeros_like(amax), where=amax > 0)
    v = np.abs(b) * scale
    margin = float(np.abs(v - np.floor(v) - 0.5).min()) if v.size else np.inf
    return (np.sign(b) * np.floor(v + 0.5) * d).reshape(-1), margin


def round_f16(x):
    """x rounded to the nearest f16 (ties to even), as float64."""
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def round_bf16(x):
    """x rounded to the nearest bf16 (ties to even) through its float32 value, as float64."""
    bits = np.asarray(x, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


class LlamaReference:
    def __init__(self, gguf_path, sidecar, int8_activations=False):
        with open(gguf_path, "rb") as f:
            data = f.read()
        c = sidecar["config"]
        self.E, self.H, self.KVH = c["embedding_length"], c["head_count"], c["head_count_kv"]
        self.D, self.L, self.V = c["head_dim"], c["block_count"], c["vocab_size"]
        self.eps, self.rot, self.base = c["rms_norm_epsilon"], c["rope_dimension_count"], c["rope_freq_base"]
        base_offset = sidecar["layout"]["data_offset"]
        self.w = {}
        self.types = {t["name"]: t["type"] for t in sidecar["tensors"]}
        self.rounded = {}   # name -> the weights rounded to f16 (block-quantized, for prefill)
        self.prefilling = False
        self.int8_activations = int8_activations
        # The smallest rounding margin of the int8 activations since the caller last set it
        # (round_int8_blocks): the test's evidence of a rounding the device may take the other way.
        self.int8_margin = np.inf
        for t in sidecar["tensors"]:
            raw = data[base_offset + t["offset"]: base_offset + t["offset"] + t["bytes"]]
            values = gguf_gen.dequantize(raw, t["type"]).astype(np.float64)
            dims = t["dims"]
            self.w[t["name"]] = values.reshape(dims[::-1]) if len(dims) == 2 else values
        if "output.weight" not in self.w:
            self.w["output.weight"] = self.w["token_embd.weight"]
            self.types["output.weight"] = self.types["token_embd.weight"]
        self.k_cache = [[] for _ in range(self.L)]
        self.v_cache = [[] for _ in range(self.L)]
        self.k_prompt = [[] for _ in range(self.L)]   # the prompt's keys as its attention reads them
        self.position = 0
        # Pair i turns by position * freq: freq_base^(-2i / dims), times 1 / factor for linear
        # scaling, divided by rope_freqs.weight[i] where the file has it (llama.cpp's freq_factors).
        i = np.arange(self.rot // 2)
        self.freq = self.base ** (-2.0 * i / self.rot)
        meta = sidecar["metadata"]
        if meta.get("llama.rope.scaling.type", {}).get("value") == "linear":
            self.freq = self.freq / meta["llama.rope.scaling.factor"]["value"]
        if "rope_freqs.weight" in self.w:
            self.freq = self.freq / self.w["rope_freqs.weight"]

    def rms_norm(self, x, name):
        return x / np.sqrt(np.mean(x * x) + self.eps) * self.w[name]

    def rope(self, heads):
        """heads: (n, D); rotates adjacent pairs of the first `rot` elements at self.position."""
        out = heads.copy()
        theta = self.position * self.freq
        cos, sin = np.cos(theta), np.sin(theta)
        x0, x1 = heads[:, 0:self.rot:2], heads[:, 1:self.rot:2]
        out[:, 0:self.rot:2] = x0 * cos - x1 * sin
        out[:, 1:self.rot:2] = x0 * sin + x1 * cos
        return out

    def product_rounding(self, name):
        """The prefill's rounding of the products of weight `name`: None (F32), bf16 or f16."""
        t = self.types[name]
        return None if t == "F32" else round_bf16 if t == "BF16" else round_f16

    def attention_rounding(self, b):
        """The rounding of layer b's prompt attention operands: its Q, K, V and output weights'
        shared 16-bit product rounding, else None (f32 attention)."""
        kinds = {self.types[b + n + ".weight"] if self.types[b + n + ".weight"] in ("F32", "BF16") else "half"
                 for n in ("attn_q", "attn_k", "attn_v", "attn_output")}
        if len(kinds) != 1 or kinds == {"F32"}:
            return None
        return self.product_rounding(b + "attn_q.weight")

    def product(self, name, x, prefill_rounding=True):
        """The layer product W x: in float64, or with the prefill's roundings (class doc)."""
        if (self.int8_activations and (not self.prefilling or not prefill_rounding) and
                (self.types[name] in ("Q4_K", "Q6_K") or
                 (self.types[name] in ("Q8_0", "Q4_0") and self.w[name].shape[1] % 1024 == 0))):
            rounded, margin = round_int8_blocks(x)
            self.int8_margin = min(self.int8_margin, margin)
            return self.w[name] @ rounded
        if not self.prefilling or not prefill_rounding or self.types[name] == "F32":
            return self.w[name] @ x
        if self.types[name] == "BF16":
            return round_bf16(self.w[name] @ round_bf16(x))
        if self.types[name] == "F16":
            return round_f16(self.w[name] @ round_f16(x))
        if name not in self.rounded:
            self.rounded[name] = round_f16(self.w[name])
        return round_f16(self.rounded[name] @ round_f16(x))

    def prefill(self, tokens):
        """Runs the prompt `tokens` with the prefill's roundings; returns the last logits."""
        self.prefilling = True
        try:
            for t in tokens:
                logits = self.step(t)
        finally:
            self.prefilling = False
        return logits

    def step(self, token):
        """Runs `token` at the next position; returns the logits (float64, vocabulary size)."""
        x = self.w["token_embd.weight"][token].copy()
        group = self.H // self.KVH
        for layer in range(self.L):
            b = "blk.%d." % layer
            n = self.rms_norm(x, b + "attn_norm.weight")
            q = self.rope(self.product(b + "attn_q.weight", n).reshape(self.H, self.D))
            k = self.rope(self.product(b + "attn_k.weight", n).reshape(self.KVH, self.D))
            v = self.product(b + "attn_v.weight", n).reshape(self.KVH, self.D)
            self.k_cache[layer].append(k)
            self.v_cache[layer].append(v)
            keys, values = np.stack(self.k_cache[layer]), np.stack(self.v_cache[layer])   # (pos, KVH, D)
            r = self.attention_rounding(b) if self.prefilling else None
            if r is not None:
                q = r(q)
                self.k_prompt[layer].append(r(k))
                keys = np.stack(self.k_prompt[layer])
            att = np.empty((self.H, self.D))
            for h in range(self.H):
                scores = keys[:, h // group, :] @ q[h] / np.sqrt(self.D)
                p = np.exp(scores - scores.max())
                att[h] = (p / p.sum()) @ values[:, h // group, :]
            x = x + self.product(b + "attn_output.weight", att.reshape(-1))
            m = self.rms_norm(x, b + "ffn_norm.weight")
            gate = self.product(b + "ffn_gate.weight", m)
            up = self.product(b + "ffn_up.weight", m)
            x = x + self.product(b + "ffn_down.weight", gate / (1.0 + np.exp(-gate)) * up)
        self.position += 1
        return self.product("output.weight", self.rms_norm(x, "output_norm.weight"), prefill_rounding=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("sidecar")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("-n", type=int, default=16)
    a = ap.parse_args()
    with open(a.sidecar) as f:
        ref = LlamaReference(a.model, json.load(f))
    logits = ref.prefill([int(s) for s in a.prompt_ids.split(",")])
    ids = []
    while True:
        ids.append(int(np.argmax(logits)))
        if len(ids) == a.n:
            break
        logits = ref.step(ids[-1])
    print("ids:", " ".join(map(str, ids)))


if __name__ == "__main__":
    main()
