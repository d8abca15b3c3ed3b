// A Llama-family model on the op library (docs/llm.md, "The runner"): the weights on the device
// (matrices as the file stores them: Q8_0 / Q4_0 / Q4_K / Q6_K in their blocks, F16 / BF16 as
// 16-bit, F32; norms and the embedding table dequantized on the host to f32), a KV cache per
// layer, the prompt's prefill (every prompt token at once: a matrix product per weight matrix,
// causal attention over the prompt) and one decode step: a token at a position in, the logits
// and their argmax out, on the device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <quiver/ops.h>
#include <quiver/runtime.h>

#include "quiver_llm_kernels.h"

#include "gguf.h"

namespace quiver::llm {

// A linear layer's weight, rows = outputs, cols = inputs, in the file's own type: the block
// types in `blocks` (matvec_q8_0 / q4_0 / q4_k / q6_k), F16 and BF16 in `f16` / `bf16` and F32 in
// `f32` (matvec, f32 x and y).
struct Matrix {
  size_t rows = 0, cols = 0;
  GgmlType type = GgmlType::F32;
  Buffer<float> f32;
  Buffer<quiver::half> f16;
  Buffer<quiver::bf16> bf16;
  Buffer<uint8_t> blocks;
  bool repacked = false;           // Q8_0 / Q4_0 / Q6_K blocks in ops::repack_q8_0 / q4_0 / q6_k's order
  bool int8_x = false;             // a decode step's product takes x as int8 activations (matvec_*_a8)
  size_t bytes() const;            // what one matvec reads of it
};

struct LlamaLayer {
  Buffer<float> attn_norm, ffn_norm;
  // Q, K and V: where the file stores the three in one type, one matrix of their rows stacked
  // (Q's, K's, V's), so a step runs one product for the three, split by three row gathers
  // (LlamaModel::split_qkv), and q, k, v are empty; else the three, and qkv empty.
  // Gate and up likewise: where the file stores both in one type, gate_up holds gate's rows then
  // up's, one product whose output rows are each token's gate values then its up values
  // (LlamaModel::swiglu), and gate, up are empty; else the two, and gate_up empty.
  Matrix qkv, q, k, v, o, gate_up, gate, up, down;
  bool fused_qkv() const { return qkv.rows > 0; }
  bool fused_gate_up() const { return gate_up.rows > 0; }
  std::array<const Matrix*, 9> matrices() const { return {&qkv, &q, &k, &v, &o, &gate_up, &gate, &up, &down}; }
  Buffer<float> k_cache, v_cache;   // capacity x kv_heads x head_dim (BSHD: a prompt's K rows append whole)
  // The decode step's kernel for qkv that also rotates Q, K and appends K, V
  // (LlamaModel::choose_qkv_rope_product), where the layer has one.
  std::optional<Kernel> qkv_rope_product;
};

class LlamaModel {
 public:
  // Uploads the weights and allocates a KV cache of `capacity` positions per layer and the
  // activations of up to `prompt_tokens` prompt tokens. Throws GgufError naming the file for what
  // the runner does not support (head size, capacity).
  // repack_blocks: Q8_0 and Q4_0 matrices whose rows are whole chunks of ops::kRepackCols go to the
  // device repacked (the 16-byte loads of matvec_q8_0r / q4_0r); false keeps the file's order.
  // int8_activations: a decode step's products with repacked Q8_0 / Q4_0, Q4_K and Q6_K weights
  // take their input quantized to int8 per 32-element block (ops::quantize_activations_q8,
  // matvec_q8_0r_a8 / q4_0r_a8 / q4_k_a8 / q6_kr_a8; Q6_K then goes to the device repacked too).
  LlamaModel(const Device& dev, const Gguf& gguf, const LlamaConfig& cfg, size_t capacity, size_t prompt_tokens,
             bool repack_blocks = true, bool int8_activations = false);

  // Uploads a prompt (1 .. prompt_tokens ids) for queue_prefill, which runs it at positions
  // 0 .. size - 1.
  void set_prompt(std::span<const int32_t> ids);
  // Queues the prompt's prefill: its K and V fill cache positions 0 .. size - 1, the logits after
  // its last token go to logits(), their argmax to token() and generated()[size - 1], and the
  // position becomes size, so queue_step continues from there. Each weight matrix runs one
  // matrix product over all prompt tokens (docs/llm.md, "Prefill", says in which type).
  void queue_prefill();

  // Queues one step: the token in token() at the position in position() (both in device
  // memory; positions are filled in order from 0, each < capacity) appends its K and V to the
  // caches, leaves the logits in logits() and their argmax in token() (the next step's input),
  // records that argmax as generated()[position] and advances the position. Only launches, so
  // Device::record can record it: a decode step replays with no host work.
  void queue_step();
  // Sets the token and position the next step runs (uploads: not recordable).
  void set_input(int32_t token, int32_t position);

  const LlamaConfig& config() const { return cfg_; }
  const Buffer<int32_t>& token() const { return token_; }
  const Buffer<int32_t>& position() const { return position_; }
  const Buffer<int32_t>& generated() const { return generated_; }
  const Buffer<float>& logits() const { return logits_; }
  // Bytes of weights one step reads: every matrix, every norm, one embedding row.
  size_t weight_bytes_per_token() const;
  // The multiply-adds x 2 of a prefill of `tokens`: every layer matrix for each token, the output
  // projection for the last (attention's products not counted).
  double prefill_matrix_flops(size_t tokens) const;

 private:
  // y = m x. x_quantized: x_q8_ already holds x as int8 activations (written by the kernel that
  // wrote x), which the products of repacked matrices with int8_activations read instead of x.
  void linear(const Matrix& m, const Buffer<float>& x, const Buffer<float>& y, bool x_quantized = false) const;
  // The stacked Q, K, V product of `tokens` (tokens x (E + 2 KV)) into q, k, v.
  template <typename X>
  void split_qkv(const Buffer<X>& qkv, const Buffer<X>& q, const Buffer<X>& k, const Buffer<X>& v,
                 size_t tokens) const;
  // hidden[t] = silu(gate[t]) * up[t] from the stacked gate and up product of `tokens` rows
  // (tokens x 2 feed_forward_length) into hidden (tokens x feed_forward_length).
  template <typename X>
  void swiglu(const Buffer<X>& gate_up, const Buffer<X>& hidden, size_t tokens) const;
  // y[t] = m x[t] for `tokens` rows of x (tokens x m.cols) into y (tokens x m.rows).
  void linear_tokens(const Matrix& m, const Buffer<float>& x, const Buffer<float>& y, size_t tokens) const;

  Device dev_;
  LlamaConfig cfg_;
  size_t capacity_ = 0, prompt_capacity_ = 0, prompt_size_ = 0;
  Buffer<float> token_embd_;   // vocab x embd, f32 (the embedding op's table)
  Buffer<float> output_norm_;
  Matrix output_;
  std::vector<LlamaLayer> layers_;
  Buffer<float> inv_freq_;
  Grid rope_append_grid_;   // blocks of llm_kernels::qkv_rope_append
  Buffer<int32_t> token_, position_, generated_;
  // Greedy sampling in slices of the logits (llm_kernels' argmax_slices): each slice's best
  // (order key, index), then the token and the step's end (argmax_advance).
  static constexpr uint32_t kArgmaxSlice = 2048;
  Buffer<uint32_t> argmax_pairs_;
  Buffer<int32_t> prompt_, prompt_positions_, zero_;   // the prompt's ids, 0 .. prompt_tokens - 1, 0
  Buffer<int32_t> q_rows_, k_rows_, v_rows_;           // split_qkv's gathers
  Buffer<float> qkv_;                                  // the stacked Q, K, V product
  bool int8_activations_ = false;
  // A decode step's product input as int8 activations (ops::activation_q8_bytes); the runner's
  // kernel that writes it (swiglu_halves_q8) sees it as words (Buffer::as).
  Buffer<uint8_t> x_q8_;
  void swiglu_q8(const Buffer<float>& gate_up) const;   // swiglu_halves_q8 of a decode step into x_q8_
  // A decode step's stacked Q, K, V product with its rotation and cache append in one launch
  // (llm_kernels' qkv_*_a8_rope_append): the kernel where the layer's stacked matrix is repacked
  // q4_0 / q8_0 or q4_k on the int8 activations its norm writes and the loaded image has it,
  // chosen once when the model is loaded; launched by qkv_rope_append_product.
  std::optional<Kernel> choose_qkv_rope_product(const LlamaLayer& layer) const;
  void qkv_rope_append_product(const LlamaLayer& layer) const;
  void argmax_and_advance();   // the step's end: argmax_slices over logits_, then argmax_advance
  Buffer<float> attn_work_;   // attention_decode's partial results
  // Activations of prompt_tokens tokens (a decode step uses the first token's rows).
  Buffer<float> x_[2];   // the residual stream, alternating (queue_step, queue_prefill)
  Buffer<float> xn_, q_, k_, v_, q_rot_, k_rot_, att_, proj_, gate_, up_, hidden_, logits_;
  // A prompt's activations in a 16-bit product type P (prefill.cpp): the products' inputs and
  // outputs, and the attention's operands where the whole attention runs in P.
  template <typename P>
  struct Activations16 {
    Buffer<P> x, y, gate, up, hidden, qkv, q, q_rot, k, k_rot, v, att;
  };
  Activations16<quiver::bf16> bf16_;
  Activations16<quiver::half> half_;
  Buffer<quiver::half> w_half_;   // block-quantized weights dequantized for a prompt's product

  void allocate_prefill_scratch();
  // Whether a layer keeps gate and up as two products (types differ), which need up's own output.
  bool has_unstacked_gate_up() const {
    for (const LlamaLayer& l : layers_)
      if (!l.fused_gate_up()) return true;
    return false;
  }
  template <typename P>
  const Activations16<P>& activations16() const;
  template <typename P>
  const Buffer<P>& weights16(const Matrix& m) const;
  template <typename P>
  void attention_block16(const LlamaLayer& layer, size_t tokens) const;
  template <typename P>
  void ffn_block16(const LlamaLayer& layer, size_t tokens) const;
};

}  // namespace quiver::llm
