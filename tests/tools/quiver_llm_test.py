#!/usr/bin/env python3
"""quiver-llm against llama_ref.py (docs/llm.md, "The runner: tests").

For each model shape (every weight type, head sizes 64 and 128, grouped-query and multi-head
attention, tied and untied output, a partial rotary dimension): gguf_gen.py writes a fresh random
model (the seed is printed; QUIVER_LLM_SEED repeats a run), quiver-llm runs a random prompt with
--dump-logits on the backend QUIVER_BACKEND names, and the fp64 reference is fed the same tokens
(the prompt, then quiver-llm's own generated ids) so that every dumped row has its reference row.
Each row must be within the model's bound (below) * max|reference logit| of the reference; each
generated id must be
the reference's argmax wherever the reference's top-2 margin exceeds twice that bound. Then the
errors: every bad input exits 1 with a message naming what is wrong.

  quiver_llm_test.py QUIVER_LLM_EXE WORK_DIR
"""
import json
import os
import random
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from llama_ref import LlamaReference  # noqa: E402

# |quiver - reference| <= bound * max|reference logit| (docs/llm.md derives them): BOUND for models
# whose layer matrices are all F32; where the prompt's products run in 16 bits (F16, BF16, or
# quantized weights dequantized to half), every row depends on the K and V they made, and a
# rounding the reference's emulation takes the other way (a value within f32's error of a
# midpoint) moves an element by a unit of the 16-bit type, more often the more tokens there are:
# 8 units of its roundoff (measured over 8 runs on CPU and lavapipe: at most 37% of it for half,
# 32% for bf16).
BOUND = 2e-4
BOUND_F16_PRODUCTS = 8 * 2.0 ** -11
BOUND_BF16_PRODUCTS = 8 * 2.0 ** -8
# --int8-activations against the reference with the same int8 rounding of each product's input
# (llama_ref.py). An activation within the two sides' float difference of a rounding midpoint may
# round to the neighbouring integer on one side, which moves it by d = max|x_block| / 127 and
# everything after it (on these small random models by 0.5-5% of max|logit|). So each row is held
# to the float bound until the reference has rounded an activation within INT8_TIE (in units of
# q) of a midpoint, and to BOUND_INT8_AFTER_TIE from then on. Without such a tie the logits agree
# to ~4e-7 of max|logit| (CPU, lavapipe). Flips were seen in 3 of 16 runs of ~10^4 roundings
# (about one rounding in 5e4 flips, so the sides differ by ~1e-5 of a unit): 1e-4 leaves a
# tenfold margin, and a tie comes within a step or two. After a tie the bound still catches a
# wrong nibble offset, scale or block order (tens of percent). A run whose prompt is one batch
# carries the 16-bit products' error into every later activation: each row after its first int8
# rounding is bounded as after a tie.
INT8_TIE = 1e-4
BOUND_INT8_AFTER_TIE = 0.1


def model_bound(side):
    types = {t["type"] for t in side["tensors"] if len(t["dims"]) == 2 and t["name"].startswith("blk.")}
    if "BF16" in types:
        return BOUND_BF16_PRODUCTS
    if types - {"F32"}:
        return BOUND_F16_PRODUCTS
    return BOUND

# name, gguf_gen.py arguments
MODELS = [
    ("f32_hd64_gqa_untied", "--embd 128 --heads 2 --kv-heads 1 --ff 384 --vocab 300"),
    ("f32_rope_freqs_linear", "--embd 128 --heads 2 --kv-heads 1 --ff 384 --vocab 300 --rope-freqs "
     "--rope-scaling linear --rope-scaling-factor 2.5"),
    # 15 rotated pairs of 32 per head: the decode step's fused rope-and-append (llm_kernels.cpp)
    # takes one pair a thread, where 64- and 128-dimension rotations take four.
    ("f32_rope30_pair_per_thread", "--embd 128 --heads 2 --kv-heads 1 --ff 256 --vocab 300 --rope-dims 30 --layers 1"),
    # Greedy sampling over three slices of the logits (llm_kernels.cpp argmax_slices: 2048 a
    # block), the last of 705 (176 chunks of 4 and one more): the token from several blocks' pairs.
    ("f32_vocab_slices", "--embd 128 --heads 2 --kv-heads 1 --ff 256 --vocab 4801 --layers 1"),
    ("f16_bf16_hd128_mha_tied", "--embd 256 --heads 2 --kv-heads 2 --ff 384 --vocab 500 --tied "
     "--type-embd F16 --type-attn F16 --type-ffn BF16 --type-norm BF16"),
    ("q8_0_q4_0_hd64_gqa_untied", "--embd 256 --heads 4 --kv-heads 2 --ff 384 --vocab 400 "
     "--type-embd Q8_0 --type-attn Q8_0 --type-ffn Q4_0 --type-output Q4_0 --type-norm Q8_0"),
    # attn_v in Q6_K beside Q4_K (as Q4_K_M files): Q, K, V are three products, not one stacked;
    # likewise ffn_up in Q4_K beside a Q6_K gate: gate and up are two products.
    ("q4_k_q6_k_hd128_gqa_tied", "--embd 256 --heads 2 --kv-heads 1 --ff 512 --vocab 700 --tied "
     "--type-embd Q6_K --type-attn Q4_K --type-attn-v Q6_K --type-ffn Q6_K --type-ffn-up Q4_K --type-norm F16"),
    ("q4_0_tied_q6_k_rope32", "--embd 256 --heads 4 --kv-heads 1 --ff 512 --vocab 1000 --tied --rope-dims 32 "
     "--type-embd Q4_0 --type-attn Q6_K --type-ffn Q4_K --type-norm Q4_K --rope-base 10000"),
    ("q8_0_tied_bf16_output", "--embd 128 --heads 2 --kv-heads 2 --ff 384 --vocab 600 --tied "
     "--type-embd Q8_0 --type-attn BF16 --type-ffn F16 --no-tokens"),
    # Attention matrices of two 16-bit product types: its prompt products convert through f32
    # and the prompt's attention runs in f32.
    ("f16_bf16_v_mixed_attention", "--embd 128 --heads 2 --kv-heads 2 --ff 384 --vocab 300 "
     "--type-attn F16 --type-attn-v BF16 --type-ffn F16"),
    # A prompt of 129 - 140 tokens: the prefill's 16-bit products run over rows rounded up to 256.
    ("bf16_q8_0_long_prompt", "--embd 128 --heads 2 --kv-heads 1 --ff 384 --vocab 300 "
     "--type-attn BF16 --type-ffn Q8_0"),
    # Rows of whole 1024-element chunks: Q8_0 and Q4_0 matrices go to the device repacked
    # (matvec_q8_0r / q4_0r, dequantize_*r in the prefill); 1024 columns (one chunk) and 2048 (down).
    ("q8_0_q4_0_repacked", "--embd 1024 --heads 8 --kv-heads 2 --ff 2048 --vocab 300 --layers 1 "
     "--type-attn Q8_0 --type-ffn Q4_0 --type-output Q4_0"),
    # Q, K and V stacked in repacked Q4_0: with --int8-activations the decode step's product also
    # rotates and appends them (llm_kernels.cpp qkv_q4_0r_a8_rope_append; q8_0_q4_0_repacked
    # runs Q8_0's).
    ("q4_0_attn_repacked", "--embd 1024 --heads 8 --kv-heads 2 --ff 1024 --vocab 300 --layers 2 "
     "--type-attn Q4_0 --type-ffn Q8_0 --type-output Q8_0"),
    # The same in Q4_K (qkv_q4_k_a8_rope_append).
    ("q4_k_attn_stacked", "--embd 512 --heads 4 --kv-heads 2 --ff 512 --vocab 300 --layers 1 "
     "--type-attn Q4_K --type-ffn Q8_0 --type-output Q8_0"),
]
LONG_PROMPT = {"bf16_q8_0_long_prompt": (129, 140)}
INT8_ACTIVATIONS = {"q8_0_q4_0_repacked", "q4_0_attn_repacked", "q4_k_attn_stacked", "q4_k_q6_k_hd128_gqa_tied", "q4_0_tied_q6_k_rope32"}
# Also with the prompt as one batch: its products read the repacked Q6_K (dequantize_q6_kr).
INT8_BATCH_PREFILL = {"q4_k_q6_k_hd128_gqa_tied"}
# Q, K and V stacked in a type whose int8 product also rotates and appends them: the logits the
# same bits as with the two launches (QUIVER_LLM_FUSED_QKV=0), both products then taking the walk
# of more than 4096 rows (QUIVER_QUANT_SPLIT_ROWS=0; the test models' are shorter).
FUSED_QKV = {"q8_0_q4_0_repacked", "q4_0_attn_repacked", "q4_k_attn_stacked"}

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def generate(path, args, seed):
    subprocess.run([sys.executable, os.path.join(HERE, "gguf_gen.py"), path, "--json", path + ".json",
                    "--seed", str(seed)] + args.split(), check=True)
    with open(path + ".json") as f:
        return json.load(f)


def run_llm(exe, args, text=True, env=None):
    env = dict(os.environ, **env) if env else None
    if not text:
        return subprocess.run([exe] + args, capture_output=True, env=env)
    return subprocess.run([exe] + args, capture_output=True, text=True, errors="replace", env=env)


def check_model(exe, work, name, gen_args, seed):
    path = os.path.join(work, name + ".gguf")
    side = generate(path, gen_args, seed)
    vocab = side["config"]["vocab_size"]
    rng = random.Random(seed)
    prompt = [rng.randrange(vocab) for _ in range(rng.randint(*LONG_PROMPT.get(name, (1, 6))))]
    bound = model_bound(side)
    check_run(exe, path, name, side, prompt, bound, [])
    if bound != BOUND:   # the decode step's own numerics, with the prompt run through it
        check_run(exe, path, name + " --token-prefill", side, prompt, BOUND, ["--token-prefill"])
    if name in INT8_ACTIVATIONS:   # products on int8 activations (repacked Q8_0 / Q4_0, K-quants), every row
        check_run(exe, path, name + " --int8-activations", side, prompt, BOUND,
                  ["--token-prefill", "--int8-activations"], int8_tie=INT8_TIE)
    if name in INT8_BATCH_PREFILL:
        check_run(exe, path, name + " --int8-activations, batch prefill", side, prompt, bound,
                  ["--int8-activations"], int8_tie=np.inf)
    if name in FUSED_QKV:
        check_fused_qkv(exe, path, name, prompt)
    check_weight_bytes(exe, path, name, side)


def check_run(exe, path, name, side, prompt, bound, options, int8_tie=None):
    """quiver-llm's ids and logits against the reference, each row within `bound` of max|logit|;
    with int8_tie, as INT8_TIE's comment says."""
    vocab = side["config"]["vocab_size"]
    n = 7
    dump = path + ".logits"
    if os.path.exists(dump):
        os.remove(dump)
    r = run_llm(exe, [path, "--prompt-ids", ",".join(map(str, prompt)), "-n", str(n), "--dump-logits", dump] + options,
                text=False)
    if r.returncode != 0:
        check(False, "%s: quiver-llm exited %d: %s" % (name, r.returncode, r.stderr.decode(errors="replace").strip()))
        return
    first, _, rest = r.stdout.partition(b"\n")
    check(first.startswith(b"ids:"), "%s: first line is not 'ids: ...': %r" % (name, r.stdout))
    ids = [int(s) for s in first.split()[1:]]
    check(len(ids) == n, "%s: %d ids generated, expected %d" % (name, len(ids), n))
    # The text line: the generated tokens rendered (U+2581 as a space, <0xNN> as that byte).
    text = b""
    for t in side["tokens"] and ids:
        tok = side["tokens"][t]
        is_byte = len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">")
        text += bytes([int(tok[3:5], 16)]) if is_byte else tok.replace("\u2581", " ").encode()
    expected = b"text: " + text + b"\n" if side["tokens"] else b""
    check(rest == expected, "%s: after the ids, %r; expected %r" % (name, rest, expected))
    got = np.fromfile(dump, dtype="<f4")
    check(got.size == n * vocab, "%s: %d floats dumped, expected %d rows of %d" % (name, got.size, n, vocab))
    if got.size != n * vocab or len(ids) != n:
        return
    got = got.reshape(n, vocab).astype(np.float64)

    ref = LlamaReference(path, side, int8_activations="--int8-activations" in options)
    if "--token-prefill" in options:
        for t in prompt:
            logits = ref.step(t)
    else:
        logits = ref.prefill(prompt)
    worst = 0.0
    tie_row = None
    for i in range(n):
        row_bound = bound
        if int8_tie is not None and (tie_row is not None or ref.int8_margin < int8_tie):
            tie_row = i if tie_row is None else tie_row
            row_bound = BOUND_INT8_AFTER_TIE
        scale = np.abs(logits).max()
        err = np.abs(got[i] - logits).max() / scale
        worst = max(worst, err) if row_bound == bound else worst
        check(np.all(np.isfinite(got[i])) and err <= row_bound,
              "%s: logits row %d: max error %.3g of max|logit| %.3g, bound %g" % (name, i, err, scale, row_bound))
        top2 = np.sort(logits)[-2:]
        if top2[1] - top2[0] > 2 * row_bound * scale:
            check(ids[i] == int(np.argmax(logits)),
                  "%s: generated id %d is %d, reference argmax %d (margin %.3g)" %
                  (name, i, ids[i], int(np.argmax(logits)), top2[1] - top2[0]))
        if i + 1 < n:
            logits = ref.step(ids[i])
    shown = prompt if len(prompt) <= 8 else "of %d tokens" % len(prompt)
    tie = "" if tie_row is None else "; rows from %d after an int8 rounding tie, bound %g" % (tie_row, BOUND_INT8_AFTER_TIE)
    print("%s: prompt %s, ids %s, max error %.3g of max|logit| (bound %.3g%s)" % (name, shown, ids, worst, bound, tie))


def check_fused_qkv(exe, path, name, prompt):
    """The decode step's fused Q, K, V product against its two launches: the same logits, bit for bit."""
    dumps, launches = [], []
    for fused in ("1", "0"):
        dump = "%s.fused%s.logits" % (path, fused)
        if os.path.exists(dump):   # no earlier run's logits can stand in for this one's
            os.remove(dump)
        args = [path, "--prompt-ids", ",".join(map(str, prompt)), "-n", "5", "--token-prefill", "--int8-activations",
                "--bench", "--dump-logits", dump]
        r = run_llm(exe, args, env={"QUIVER_LLM_FUSED_QKV": fused, "QUIVER_QUANT_SPLIT_ROWS": "0"})
        check(r.returncode == 0, "%s fused QKV=%s: exit %d: %s" % (name, fused, r.returncode, r.stderr[-2000:]))
        dumps.append(open(dump, "rb").read() if r.returncode == 0 and os.path.exists(dump) else None)
        line = next((l for l in r.stdout.splitlines() if l.startswith("bench: launches per decode step ")), "")
        launches.append(int(line.split()[-1]) if line else None)
    # The switch took effect: one launch a layer fewer with the fused product.
    layers = int(re.search(r"--layers (\d+)", dict(MODELS)[name]).group(1))
    check(None not in launches and launches[1] - launches[0] == layers,
          "%s: launches per step fused / two launches %s, expected %d fewer fused" % (name, launches, layers))
    check(dumps[0] is not None and len(dumps[0]) > 0 and dumps[0] == dumps[1],
          "%s: the fused Q, K, V product's logits differ from the two launches'" % name)


def check_weight_bytes(exe, path, name, side):
    """--bench's weight bytes per step: every matrix as the file stores it (the runner keeps each
    in its own type: blocks, 16-bit, f32; a tied output reads token_embd in its type), the norms
    and one embedding row as f32."""
    r = run_llm(exe, [path, "--prompt-ids", "1", "-n", "2", "--bench"])
    line = next((l for l in r.stdout.splitlines() if l.startswith("bench: weights read per decoded token ")), "")
    got = int(line.split()[6]) if line else None
    c = side["config"]
    matrices = sum(t["bytes"] for t in side["tensors"] if len(t["dims"]) == 2 and
                   (t["name"] != "token_embd.weight" or c["tied_output"]))
    norms = sum(1 for t in side["tensors"] if t["name"].endswith("norm.weight"))
    expected = matrices + (norms + 1) * c["embedding_length"] * 4
    check(r.returncode == 0 and got == expected,
          "%s: --bench weight bytes %s, expected %d (exit %d: %s)" % (name, got, expected, r.returncode,
                                                                     r.stderr.strip()))


def expect_error(exe, label, args, needles):
    r = run_llm(exe, args)
    ok = r.returncode == 1 and r.stderr.startswith("quiver-llm: ") and all(s in r.stderr for s in needles)
    check(ok, "%s: expected exit 1 naming %s; got %d: %s" % (label, needles, r.returncode, r.stderr.strip()))


def check_errors(exe, work, seed):
    good = os.path.join(work, "errors_llama.gguf")
    generate(good, "--embd 128 --heads 2 --kv-heads 1 --ff 128 --vocab 300 --ctx 16", seed)
    expect_error(exe, "empty prompt", [good, "--prompt-ids", ""], ["--prompt-ids", "not a token id"])
    expect_error(exe, "non-numeric id", [good, "--prompt-ids", "1,x2,3"], ["--prompt-ids", "'x2'"])
    expect_error(exe, "empty item", [good, "--prompt-ids", "1,,3"], ["--prompt-ids", "item 2"])
    expect_error(exe, "negative id", [good, "--prompt-ids", "-4"], ["--prompt-ids", "'-4'"])
    expect_error(exe, "id >= vocab", [good, "--prompt-ids", "1,300"], ["token id 300", "vocabulary size 300"])
    expect_error(exe, "huge id", [good, "--prompt-ids", "99999999999999999999"], ["--prompt-ids"])
    expect_error(exe, "beyond context", [good, "--prompt-ids", "1,2,3", "-n", "14"],
                 [good, "llama.context_length 16"])
    expect_error(exe, "no tokens to generate", [good, "--prompt-ids", "1", "-n", "0"], ["-n", "0"])
    expect_error(exe, "huge -n", [good, "--prompt-ids", "1", "-n", "99999999999999999999"], ["-n"])
    expect_error(exe, "no --prompt-ids", [good], ["--prompt-ids", "required"])
    expect_error(exe, "missing file", [good + ".absent", "--prompt-ids", "1"], [good + ".absent"])

    gpt2 = os.path.join(work, "errors_gpt2.gguf")
    generate(gpt2, "--embd 128 --heads 2 --ff 128 --architecture gpt2", seed)
    expect_error(exe, "architecture gpt2", [gpt2, "--prompt-ids", "1"], [gpt2, "general.architecture", "gpt2"])

    head32 = os.path.join(work, "errors_head32.gguf")
    generate(head32, "--embd 128 --heads 4 --kv-heads 2 --ff 128", seed)
    expect_error(exe, "head size 32", [head32, "--prompt-ids", "1"], [head32, "head size 32"])

    q4_1 = os.path.join(work, "errors_q4_1.gguf")
    side = generate(q4_1, "--embd 128 --heads 2 --ff 128 --type-ffn Q8_0", seed)
    with open(q4_1, "r+b") as f:   # blk.0.ffn_up's ggml type -> Q4_1 (3): known to ggml, not accepted
        entry = next(t for t in side["layout"]["tensors"] if t["name"] == "blk.0.ffn_up.weight")
        f.seek(entry["type_offset"])
        f.write((3).to_bytes(4, "little"))
    expect_error(exe, "tensor type Q4_1", [q4_1, "--prompt-ids", "1"], [q4_1, "blk.0.ffn_up.weight", "Q4_1"])

    yarn = os.path.join(work, "errors_yarn.gguf")
    generate(yarn, "--embd 128 --heads 2 --ff 128 --rope-scaling yarn --rope-scaling-factor 4", seed)
    expect_error(exe, "rope scaling yarn", [yarn, "--prompt-ids", "1"], [yarn, "llama.rope.scaling.type 'yarn'"])

    truncated = os.path.join(work, "errors_truncated.gguf")
    with open(good, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[: len(data) // 2])
    expect_error(exe, "truncated file", [truncated, "--prompt-ids", "1"], [truncated])


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    seed = int(os.environ.get("QUIVER_LLM_SEED", random.SystemRandom().randrange(1 << 31)))
    print("backend %s, seed %d (QUIVER_LLM_SEED repeats it)" % (os.environ.get("QUIVER_BACKEND", "best"), seed))
    for k, (name, gen_args) in enumerate(MODELS):
        check_model(exe, work, name, gen_args, seed + k)
    check_errors(exe, work, seed)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
