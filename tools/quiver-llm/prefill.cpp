// A prompt's prefill (docs/llm.md, "Prefill"): every prompt token at once, as rows. Each weight
// matrix runs one matrix product over the rows in its product type: f32 for F32 weights, the
// weights' own 16-bit type for F16 and BF16, half for block-quantized weights (dequantized into
// one scratch matrix first). Where a layer's Q, K, V and output matrices share a 16-bit product
// type P, the attention runs in P too (its operands are rounded to P as the products' are), and
// where gate, up and down share one, the SwiGLU runs in P between them; otherwise (mixed types)
// every product converts its input from and its output to f32 and attention runs in f32. The
// residual stream, the norms and the KV cache stay f32, as in a decode step.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "llama.h"

namespace quiver::llm {
namespace {

enum class Product { F32, BF16, F16 };

// The rows a 16-bit product runs over: from 128 prompt tokens on, rounded up to the matrix-unit
// kernels' tile of 128 rows (runtime/ops: whole tiles take them; any other shape, the SIMT kernel,
// several times slower at such sizes). The rows past the prompt are zeros (the scratch is zeroed
// when allocated, and only the prompt's rows of a product's input are ever written); their
// results are never read.
constexpr size_t kProductRows = 128;
size_t product_rows(size_t tokens) {
  return tokens < kProductRows ? tokens : (tokens + kProductRows - 1) / kProductRows * kProductRows;
}

Product product_type(const Matrix& m) {
  switch (m.type) {
    case GgmlType::F32: return Product::F32;
    case GgmlType::BF16: return Product::BF16;
    default: return Product::F16;   // F16, and the block types dequantized to half
  }
}

// The product type the matrices share, if they share a 16-bit one.
std::optional<Product> shared16(std::initializer_list<const Matrix*> ms) {
  Product p = product_type(**ms.begin());
  for (const Matrix* m : ms)
    if (product_type(*m) != p) return std::nullopt;
  if (p == Product::F32) return std::nullopt;
  return p;
}

// The prompt's causal attention: its T rows are positions 0 .. T - 1, over K and V buffers laid
// out for `capacity` positions (BSHD).
ops::AttentionShape prompt_attention(const LlamaConfig& cfg, size_t T, size_t capacity) {
  ops::AttentionShape s;
  s.q_heads = cfg.head_count;
  s.kv_heads = cfg.head_count_kv;
  s.q_len = s.kv_len = T;
  s.head_dim = cfg.head_dim;
  s.kv_capacity = capacity;
  s.layout = ops::AttentionLayout::BSHD;
  s.causal = true;
  return s;
}

}  // namespace

void LlamaModel::allocate_prefill_scratch() {
  const size_t T = product_rows(prompt_capacity_), E = cfg_.embedding_length, F = cfg_.feed_forward_length;
  const size_t KV = size_t(cfg_.head_dim) * cfg_.head_count_kv;
  bool bf16_products = false, half_products = false;
  size_t quantized = 0;
  for (const LlamaLayer& l : layers_) {
    for (const Matrix* m : l.matrices()) {
      if (m->rows == 0) continue;
      bf16_products |= product_type(*m) == Product::BF16;
      half_products |= product_type(*m) == Product::F16;
      if (m->blocks.size() > 0) quantized = std::max(quantized, m->rows * m->cols);
    }
  }
  auto allocate = [&]<typename P>(Activations16<P>& a) {
    auto zeros = [&](size_t n) {
      Buffer<P> b = dev_.alloc<P>(n);
      b.upload(std::vector<P>(n));   // bits 0: +0
      return b;
    };
    for (auto* b : {&a.x, &a.y}) *b = zeros(T * std::max({E, 2 * F, E + 2 * KV}));   // any product's input, output
    a.gate = zeros(T * 2 * F);   // the stacked gate and up product's rows, or gate's
    a.hidden = zeros(T * F);
    if (has_unstacked_gate_up()) a.up = zeros(T * F);
    for (auto* b : {&a.q, &a.q_rot, &a.att}) *b = zeros(T * E);
    for (auto* b : {&a.k, &a.k_rot, &a.v}) *b = zeros(T * KV);
    a.qkv = zeros(T * (E + 2 * KV));
  };
  if (bf16_products) allocate(bf16_);
  if (half_products) allocate(half_);
  if (quantized > 0) w_half_ = dev_.alloc<half>(quantized);
}

template <>
const LlamaModel::Activations16<bf16>& LlamaModel::activations16<bf16>() const { return bf16_; }
template <>
const LlamaModel::Activations16<half>& LlamaModel::activations16<half>() const { return half_; }

template <>
const Buffer<bf16>& LlamaModel::weights16<bf16>(const Matrix& m) const { return m.bf16; }
template <>
const Buffer<half>& LlamaModel::weights16<half>(const Matrix& m) const {
  switch (m.type) {
    case GgmlType::Q8_0:
      if (m.repacked) ops::dequantize_q8_0r(dev_, m.blocks, w_half_, m.rows, m.cols);
      else ops::dequantize_q8_0(dev_, m.blocks, w_half_, m.rows, m.cols);
      break;
    case GgmlType::Q4_0:
      if (m.repacked) ops::dequantize_q4_0r(dev_, m.blocks, w_half_, m.rows, m.cols);
      else ops::dequantize_q4_0(dev_, m.blocks, w_half_, m.rows, m.cols);
      break;
    case GgmlType::Q4_K: ops::dequantize_q4_k(dev_, m.blocks, w_half_, m.rows, m.cols); break;
    case GgmlType::Q6_K:
      if (m.repacked) ops::dequantize_q6_kr(dev_, m.blocks, w_half_, m.rows, m.cols);
      else ops::dequantize_q6_k(dev_, m.blocks, w_half_, m.rows, m.cols);
      break;
    default: return m.f16;
  }
  return w_half_;
}

void LlamaModel::linear_tokens(const Matrix& m, const Buffer<float>& x, const Buffer<float>& y, size_t tokens) const {
  const size_t R = m.rows, C = m.cols;
  // The activations rounded to P, the product (float sums) rounded to P and widened back.
  auto product16 = [&]<typename P>(const Activations16<P>& a) {
    ops::convert(dev_, x, a.x, tokens * C);
    ops::matmul_nt(dev_, a.x, weights16<P>(m), a.y, product_rows(tokens), R, C);
    ops::convert(dev_, a.y, y, tokens * R);
  };
  switch (product_type(m)) {
    case Product::F32: ops::matmul_nt(dev_, x, m.f32, y, tokens, R, C); return;
    case Product::BF16: product16(bf16_); return;
    case Product::F16: product16(half_); return;
  }
}

// Q, K, V and the output projection in P: xn converted once, Q rotated in P; K and V widened
// for the f32 cache (K rotated in f32, as a decode step does) and K's rotation rounded to P for
// the attention, which runs over the prompt's own rows in P and leaves its output in P as the
// output projection's input.
template <typename P>
void LlamaModel::attention_block16(const LlamaLayer& layer, size_t T) const {
  const Activations16<P>& a = activations16<P>();
  const size_t E = cfg_.embedding_length, H = cfg_.head_count, KVH = cfg_.head_count_kv, D = cfg_.head_dim;
  const size_t KV = KVH * D, M = product_rows(T);
  ops::convert(dev_, xn_, a.x, T * E);
  if (layer.fused_qkv()) {
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.qkv), a.qkv, M, E + 2 * KV, E);
    split_qkv(a.qkv, a.q, a.k, a.v, T);
  } else {
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.q), a.q, M, E, E);
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.k), a.k, M, KV, E);
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.v), a.v, M, KV, E);
  }
  ops::rope(dev_, a.q, prompt_positions_, inv_freq_, a.q_rot, T, H, D, ops::RopeStyle::GptJ);
  const ops::KvCacheShape cache{1, KVH, D, capacity_, ops::AttentionLayout::BSHD};
  ops::convert(dev_, a.k, k_, T * KV);
  ops::rope(dev_, k_, prompt_positions_, inv_freq_, k_rot_, T, KVH, D, ops::RopeStyle::GptJ);
  ops::kv_append(dev_, k_rot_, zero_, layer.k_cache, T, cache);
  ops::convert(dev_, a.v, v_, T * KV);
  ops::kv_append(dev_, v_, zero_, layer.v_cache, T, cache);
  ops::convert(dev_, k_rot_, a.k_rot, T * KV);
  ops::attention(dev_, a.q_rot, a.k_rot, a.v, a.att, prompt_attention(cfg_, T, T));
  ops::matmul_nt(dev_, a.att, weights16<P>(layer.o), a.y, M, E, E);
  ops::convert(dev_, a.y, proj_, T * E);
}

// Gate, up, SwiGLU and down in P: the gate and up products stay in P for silu_gate, whose P
// output is the down product's input (the same roundings as converting through f32).
template <typename P>
void LlamaModel::ffn_block16(const LlamaLayer& layer, size_t T) const {
  const Activations16<P>& a = activations16<P>();
  const size_t E = cfg_.embedding_length, F = cfg_.feed_forward_length, M = product_rows(T);
  ops::convert(dev_, xn_, a.x, T * E);
  if (layer.fused_gate_up()) {
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.gate_up), a.gate, M, 2 * F, E);
    swiglu(a.gate, a.hidden, T);
  } else {
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.gate), a.gate, M, F, E);
    ops::matmul_nt(dev_, a.x, weights16<P>(layer.up), a.up, M, F, E);
    ops::silu_gate(dev_, a.gate, a.up, a.hidden, T * F);
  }
  ops::matmul_nt(dev_, a.hidden, weights16<P>(layer.down), a.y, M, E, F);
  ops::convert(dev_, a.y, proj_, T * E);
}

void LlamaModel::set_prompt(std::span<const int32_t> ids) {
  if (ids.empty() || ids.size() > prompt_capacity_)
    throw std::invalid_argument("set_prompt: " + std::to_string(ids.size()) + " tokens; the model holds 1 to " +
                                std::to_string(prompt_capacity_));
  prompt_.upload(ids);
  // queue_prefill reads the last prompt token's row at this position and advances it.
  int32_t last = static_cast<int32_t>(ids.size() - 1);
  position_.upload(std::span<const int32_t>(&last, 1));
  prompt_size_ = ids.size();
}

void LlamaModel::queue_prefill() {
  const size_t E = cfg_.embedding_length, V = cfg_.vocab_size, T = prompt_size_;
  const size_t H = cfg_.head_count, KVH = cfg_.head_count_kv, D = cfg_.head_dim;
  const float eps = cfg_.rms_norm_epsilon;
  ops::embedding(dev_, token_embd_, prompt_, x_[0], T, V, E);
  int cur = 0;
  auto residual_then_norm = [&](const Buffer<float>& w) {
    ops::add_rms_norm(dev_, x_[cur], proj_, w, x_[1 - cur], xn_, T, E, eps);
    cur = 1 - cur;
  };
  const ops::KvCacheShape cache{1, KVH, D, capacity_, ops::AttentionLayout::BSHD};
  const ops::AttentionShape causal = prompt_attention(cfg_, T, capacity_);   // mixed types: over the f32 cache
  ops::rms_norm(dev_, x_[cur], layers_.empty() ? output_norm_ : layers_.front().attn_norm, xn_, T, E, eps);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LlamaLayer& layer = layers_[l];
    std::optional<Product> attention16 = layer.fused_qkv() ? shared16({&layer.qkv, &layer.o})
                                                           : shared16({&layer.q, &layer.k, &layer.v, &layer.o});
    if (attention16 == Product::BF16) {
      attention_block16<bf16>(layer, T);
    } else if (attention16 == Product::F16) {
      attention_block16<half>(layer, T);
    } else {
      if (layer.fused_qkv()) {
        linear_tokens(layer.qkv, xn_, qkv_, T);
        split_qkv(qkv_, q_, k_, v_, T);
      } else {
        linear_tokens(layer.q, xn_, q_, T);
        linear_tokens(layer.k, xn_, k_, T);
        linear_tokens(layer.v, xn_, v_, T);
      }
      ops::rope(dev_, q_, prompt_positions_, inv_freq_, q_rot_, T, H, D, ops::RopeStyle::GptJ);
      ops::rope(dev_, k_, prompt_positions_, inv_freq_, k_rot_, T, KVH, D, ops::RopeStyle::GptJ);
      ops::kv_append(dev_, k_rot_, zero_, layer.k_cache, T, cache);
      ops::kv_append(dev_, v_, zero_, layer.v_cache, T, cache);
      ops::attention(dev_, q_rot_, layer.k_cache, layer.v_cache, att_, causal);
      linear_tokens(layer.o, att_, proj_, T);
    }
    residual_then_norm(layer.ffn_norm);
    std::optional<Product> ffn16 = layer.fused_gate_up() ? shared16({&layer.gate_up, &layer.down})
                                                         : shared16({&layer.gate, &layer.up, &layer.down});
    if (ffn16 == Product::BF16) {
      ffn_block16<bf16>(layer, T);
    } else if (ffn16 == Product::F16) {
      ffn_block16<half>(layer, T);
    } else {
      if (layer.fused_gate_up()) {
        linear_tokens(layer.gate_up, xn_, gate_, T);
        swiglu(gate_, hidden_, T);
      } else {
        linear_tokens(layer.gate, xn_, gate_, T);
        linear_tokens(layer.up, xn_, up_, T);
        ops::silu_gate(dev_, gate_, up_, hidden_, T * cfg_.feed_forward_length);
      }
      linear_tokens(layer.down, hidden_, proj_, T);
    }
    residual_then_norm(l + 1 < layers_.size() ? layers_[l + 1].attn_norm : output_norm_);
  }
  // The last token's normed row (row T - 1, the position set_prompt left) is all the logits need.
  ops::embedding(dev_, xn_, position_, q_, 1, T, E);
  linear(output_, q_, logits_);
  argmax_and_advance();
}

double LlamaModel::prefill_matrix_flops(size_t tokens) const {
  double per_token = 0;
  for (const LlamaLayer& l : layers_)
    for (const Matrix* m : l.matrices()) per_token += double(m->rows) * double(m->cols);
  return 2.0 * (per_token * double(tokens) + double(output_.rows) * double(output_.cols));
}

}  // namespace quiver::llm
