#include "llama.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "launch_shapes.h"   // the op library's block shapes (kernels/)

namespace quiver::llm {
namespace {

std::vector<float> dequantized(const Tensor& t) {
  std::vector<float> out(t.elements());
  dequantize_row(t.type, t.bytes, out.size(), out.data());
  return out;
}

template <typename T>
Buffer<T> upload(const Device& dev, std::span<const T> host) {
  Buffer<T> b = dev.alloc<T>(host.size());
  b.upload(host);
  return b;
}

Buffer<float> upload_f32(const Device& dev, const std::vector<float>& host) {
  return upload(dev, std::span<const float>(host));
}

// The tensor's bytes as a device Buffer of T (the file's little-endian layout is the device's):
// uploaded from where they lie when that is aligned for T (the file's tensor data is, at its
// alignment), else through an aligned copy.
template <typename T>
Buffer<T> upload_bytes(const Device& dev, std::span<const std::byte> bytes) {
  const size_t n = bytes.size() / sizeof(T);
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(T) == 0)
    return upload(dev, std::span<const T>(reinterpret_cast<const T*>(bytes.data()), n));
  std::vector<T> host(n);
  std::memcpy(host.data(), bytes.data(), n * sizeof(T));
  return upload(dev, std::span<const T>(host));
}

// How a model's matrices go to the device: `repack` Q8_0 / Q4_0 rows of whole ops::kRepackCols
// chunks (and, with `int8_x`, Q6_K: its repacked order has int8-activation products only);
// `int8_x`: the products that have an int8-activation form take one.
struct Placement {
  bool repack = true, int8_x = false;
};

// Rows of `cols` weights of one type, as the file stores them, on the device (repacked where
// the placement and the rows allow).
Matrix upload_matrix(const Device& dev, GgmlType type, size_t rows, size_t cols, std::span<const std::byte> bytes,
                     Placement place) {
  Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.type = type;
  const bool chunked = (type == GgmlType::Q8_0 || type == GgmlType::Q4_0) && cols % ops::kRepackCols == 0;
  if (place.repack && (chunked || (type == GgmlType::Q6_K && place.int8_x))) {
    std::span<const uint8_t> blocks(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::vector<uint8_t> host = type == GgmlType::Q8_0   ? ops::repack_q8_0(blocks, rows, cols)
                                : type == GgmlType::Q4_0 ? ops::repack_q4_0(blocks, rows, cols)
                                                         : ops::repack_q6_k(blocks, rows, cols);
    m.blocks = upload(dev, std::span<const uint8_t>(host));
    m.repacked = true;
    m.int8_x = place.int8_x;
    return m;
  }
  m.int8_x = place.int8_x && type == GgmlType::Q4_K;
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: m.blocks = upload_bytes<uint8_t>(dev, bytes); break;
    case GgmlType::F16: m.f16 = upload_bytes<half>(dev, bytes); break;
    case GgmlType::BF16: m.bf16 = upload_bytes<bf16>(dev, bytes); break;
    case GgmlType::F32: m.f32 = upload_bytes<float>(dev, bytes); break;
  }
  return m;
}

Matrix load_matrix(const Device& dev, const Tensor& t, Placement place) {
  return upload_matrix(dev, t.type, t.elements() / t.dims[0], t.dims[0], t.bytes, place);
}

// The rows of several matrices of one type and row length, stacked in order (each type's rows
// are whole blocks, so the bytes simply follow each other).
Matrix load_stacked(const Device& dev, std::initializer_list<const Tensor*> ts, Placement place) {
  std::vector<std::byte> bytes;
  size_t rows = 0;
  for (const Tensor* t : ts) {
    bytes.insert(bytes.end(), t->bytes.begin(), t->bytes.end());
    rows += t->elements() / t->dims[0];
  }
  const Tensor& first = **ts.begin();
  return upload_matrix(dev, first.type, rows, first.dims[0], bytes, place);
}

// The rotary frequencies as llama.cpp applies them: pair i turns by
// position * freq_scale * freq_base^(-2i / dims) / freq_factor[i], where freq_scale is
// 1 / llama.rope.scaling.factor for linear scaling (1 without), and freq_factor is
// rope_freqs.weight where the file has it (Llama 3.1's long-context divisors), else 1.
std::vector<float> rope_frequencies(const Gguf& gguf, const LlamaConfig& cfg, const std::string& where) {
  std::vector<float> inv_freq = ops::rope_inv_freq(cfg.rope_dimension_count, cfg.rope_freq_base);
  double freq_scale = 1.0;
  if (gguf.has("llama.rope.scaling.type")) {
    const std::string& type = gguf.get_string("llama.rope.scaling.type");
    if (type == "linear") {
      float factor = gguf.get_f32("llama.rope.scaling.factor");
      if (!(factor > 0.0f))
        throw GgufError(where + "llama.rope.scaling.factor " + std::to_string(factor) + " is not positive");
      freq_scale = 1.0 / factor;
    } else if (type != "none") {
      throw GgufError(where + "llama.rope.scaling.type '" + type + "' is not supported (none and linear are)");
    }
  }
  std::vector<float> factors(inv_freq.size(), 1.0f);
  if (gguf.has_tensor("rope_freqs.weight")) {
    const Tensor& t = gguf.tensor("rope_freqs.weight");
    if (t.elements() != inv_freq.size())
      throw GgufError(where + "tensor 'rope_freqs.weight' has " + std::to_string(t.elements()) +
                      " elements, expected rope.dimension_count / 2 = " + std::to_string(inv_freq.size()));
    factors = dequantized(t);
    for (float f : factors)
      if (!(f > 0.0f))
        throw GgufError(where + "tensor 'rope_freqs.weight' holds " + std::to_string(f) + ", not a positive factor");
  }
  for (size_t i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] = static_cast<float>(double(inv_freq[i]) * freq_scale / double(factors[i]));
  return inv_freq;
}

// The fused Q, K, V products' blocks: kQuantRows rows each, one block per grid x (llm_kernels.cpp
// on the op library's walks, kernels/launch_shapes.h).
constexpr size_t kQkvBlockRows = qvops::kQuantRows;
size_t qkv_product_blocks(size_t rows) { return (rows + kQkvBlockRows - 1) / kQkvBlockRows; }

}  // namespace

size_t Matrix::bytes() const {
  switch (type) {
    case GgmlType::Q8_0: return ops::q8_0_bytes(rows, cols);
    case GgmlType::Q4_0: return ops::q4_0_bytes(rows, cols);
    case GgmlType::Q4_K: return ops::q4_k_bytes(rows, cols);
    case GgmlType::Q6_K: return ops::q6_k_bytes(rows, cols);
    case GgmlType::F16:
    case GgmlType::BF16: return rows * cols * 2;
    case GgmlType::F32: break;
  }
  return rows * cols * sizeof(float);
}

LlamaModel::LlamaModel(const Device& dev, const Gguf& gguf, const LlamaConfig& cfg, size_t capacity,
                       size_t prompt_tokens, bool repack_blocks, bool int8_activations)
    : dev_(dev), cfg_(cfg), capacity_(capacity), prompt_capacity_(std::max<size_t>(prompt_tokens, 1)),
      int8_activations_(int8_activations) {
  const std::string where = gguf.label() + ": llama model: ";
  if (cfg.head_dim != 64 && cfg.head_dim != 128)
    throw GgufError(where + "head size " + std::to_string(cfg.head_dim) +
                    " (embedding_length / head_count) is not supported: attention runs head sizes 64 and 128");
  if (capacity == 0 || capacity > cfg.context_length)
    throw GgufError(where + std::to_string(capacity) + " positions exceed llama.context_length " +
                    std::to_string(cfg.context_length));
  if (prompt_capacity_ > capacity)
    throw GgufError(where + "a prompt of " + std::to_string(prompt_capacity_) + " tokens exceeds the " +
                    std::to_string(capacity) + " positions of the cache");
  const size_t E = cfg.embedding_length, F = cfg.feed_forward_length, V = cfg.vocab_size;
  const size_t KV = size_t(cfg.head_dim) * cfg.head_count_kv;

  const Placement place{repack_blocks, int8_activations};
  const Tensor& embd = gguf.tensor("token_embd.weight");
  std::vector<float> table = dequantized(embd);
  token_embd_ = upload_f32(dev, table);
  output_norm_ = upload_f32(dev, dequantized(gguf.tensor("output_norm.weight")));
  if (cfg.tied_output && embd.type == GgmlType::F32) {
    output_ = Matrix{V, E, GgmlType::F32, token_embd_, {}, {}, {}};   // the same device table
  } else {   // output.weight, or a tied table of another type, which the projection reads in that type
    output_ = load_matrix(dev, cfg.tied_output ? embd : gguf.tensor("output.weight"), place);
  }
  for (uint32_t l = 0; l < cfg.block_count; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    auto matrix = [&](const char* name) { return load_matrix(dev, gguf.tensor(b + name), place); };
    LlamaLayer layer;
    layer.attn_norm = upload_f32(dev, dequantized(gguf.tensor(b + "attn_norm.weight")));
    layer.ffn_norm = upload_f32(dev, dequantized(gguf.tensor(b + "ffn_norm.weight")));
    const Tensor &q = gguf.tensor(b + "attn_q.weight"), &k = gguf.tensor(b + "attn_k.weight"),
                 &v = gguf.tensor(b + "attn_v.weight");
    if (q.type == k.type && k.type == v.type && E % KV == 0) {
      layer.qkv = load_stacked(dev, {&q, &k, &v}, place);
    } else {
      layer.q = load_matrix(dev, q, place);
      layer.k = load_matrix(dev, k, place);
      layer.v = load_matrix(dev, v, place);
    }
    layer.o = matrix("attn_output.weight");
    const Tensor &gate = gguf.tensor(b + "ffn_gate.weight"), &up = gguf.tensor(b + "ffn_up.weight");
    if (gate.type == up.type) {
      layer.gate_up = load_stacked(dev, {&gate, &up}, place);
    } else {
      layer.gate = load_matrix(dev, gate, place);
      layer.up = load_matrix(dev, up, place);
    }
    layer.down = matrix("ffn_down.weight");
    layer.k_cache = dev.alloc<float>(KV * capacity);
    layer.v_cache = dev.alloc<float>(KV * capacity);
    layers_.push_back(std::move(layer));
  }
  inv_freq_ = upload_f32(dev, rope_frequencies(gguf, cfg, where));
  {
    // qkv_rope_append: a thread per four pairs of a head row where they fit, else per pair.
    const size_t rot_half = inv_freq_.size(), rows = cfg.head_count + 2 * size_t(cfg.head_count_kv);
    const size_t per_thread = cfg.head_dim % 8 == 0 && rot_half % 4 == 0 ? 4 : 1;
    const size_t threads = rows * (cfg.head_dim / (2 * per_thread));
    rope_append_grid_ = Grid{static_cast<uint32_t>(std::min<size_t>((threads + 255) / 256, 65535))};
  }

  token_ = dev.alloc<int32_t>(1);
  position_ = dev.alloc<int32_t>(1);
  generated_ = dev.alloc<int32_t>(capacity);
  const size_t T = prompt_capacity_;
  prompt_ = dev.alloc<int32_t>(T);
  std::vector<int32_t> iota(T);
  for (size_t i = 0; i < T; ++i) iota[i] = static_cast<int32_t>(i);
  prompt_positions_ = dev.alloc<int32_t>(T);
  prompt_positions_.upload(std::span<const int32_t>(iota));
  // The rows of the stacked Q, K, V product, seen as rows of KV elements (R per token: E / KV
  // of Q, one of K, one of V): the gathers that split it (split_qkv).
  const size_t per_q = E / KV, R = per_q + 2;
  std::vector<int32_t> q_rows, k_rows, v_rows;
  for (size_t t = 0; t < T; ++t) {
    for (size_t j = 0; j < per_q; ++j) q_rows.push_back(static_cast<int32_t>(t * R + j));
    k_rows.push_back(static_cast<int32_t>(t * R + per_q));
    v_rows.push_back(static_cast<int32_t>(t * R + per_q + 1));
  }
  for (auto [buffer, rows] : {std::pair{&q_rows_, &q_rows}, std::pair{&k_rows_, &k_rows}, std::pair{&v_rows_, &v_rows}}) {
    *buffer = dev.alloc<int32_t>(rows->size());
    buffer->upload(std::span<const int32_t>(*rows));
  }
  qkv_ = dev.alloc<float>(T * (E + 2 * KV));
  zero_ = dev.alloc<int32_t>(1);
  zero_.upload(std::span<const int32_t>(iota.data(), 1));
  attn_work_ = dev.alloc<float>(ops::attention_decode_workspace(
      cfg.head_count, ops::KvCacheShape{1, cfg.head_count_kv, cfg.head_dim, capacity, ops::AttentionLayout::BSHD}));
  for (Buffer<float>* a : {&x_[0], &x_[1], &xn_, &q_, &q_rot_, &att_, &proj_}) *a = dev.alloc<float>(T * E);
  for (Buffer<float>* a : {&k_, &v_, &k_rot_}) *a = dev.alloc<float>(T * KV);
  gate_ = dev.alloc<float>(T * 2 * F);   // the stacked gate and up product's rows, or gate's
  hidden_ = dev.alloc<float>(T * F);
  if (has_unstacked_gate_up()) up_ = dev.alloc<float>(T * F);   // up's own product (else gate_ holds both)
  if (int8_activations_) x_q8_ = dev.alloc<uint8_t>(ops::activation_q8_bytes(std::max(E, F)));
  allocate_prefill_scratch();
  logits_ = dev.alloc<float>(V);
  argmax_pairs_ = dev.alloc<uint32_t>(2 * ((V + kArgmaxSlice - 1) / kArgmaxSlice));
  for (LlamaLayer& layer : layers_) layer.qkv_rope_product = choose_qkv_rope_product(layer);
}

void LlamaModel::linear(const Matrix& m, const Buffer<float>& x, const Buffer<float>& y, bool x_quantized) const {
  if (m.int8_x) {
    // x quantized here unless the kernel that wrote it did (add_rms_norm_q8, swiglu_halves_q8).
    if (!x_quantized) ops::quantize_activations_q8(dev_, x, x_q8_, m.cols);
    switch (m.type) {
      case GgmlType::Q8_0: ops::matvec_q8_0r_a8(dev_, m.blocks, x_q8_, y, m.rows, m.cols); break;
      case GgmlType::Q4_0: ops::matvec_q4_0r_a8(dev_, m.blocks, x_q8_, y, m.rows, m.cols); break;
      case GgmlType::Q4_K: ops::matvec_q4_k_a8(dev_, m.blocks, x_q8_, y, m.rows, m.cols); break;
      default: ops::matvec_q6_kr_a8(dev_, m.blocks, x_q8_, y, m.rows, m.cols); break;
    }
    return;
  }
  switch (m.type) {
    case GgmlType::Q8_0:
      if (m.repacked) ops::matvec_q8_0r(dev_, m.blocks, x, y, m.rows, m.cols);
      else ops::matvec_q8_0(dev_, m.blocks, x, y, m.rows, m.cols);
      break;
    case GgmlType::Q4_0:
      if (m.repacked) ops::matvec_q4_0r(dev_, m.blocks, x, y, m.rows, m.cols);
      else ops::matvec_q4_0(dev_, m.blocks, x, y, m.rows, m.cols);
      break;
    case GgmlType::Q4_K: ops::matvec_q4_k(dev_, m.blocks, x, y, m.rows, m.cols); break;
    case GgmlType::Q6_K: ops::matvec_q6_k(dev_, m.blocks, x, y, m.rows, m.cols); break;
    case GgmlType::F16: ops::matvec(dev_, m.f16, x, y, m.rows, m.cols); break;
    case GgmlType::BF16: ops::matvec(dev_, m.bf16, x, y, m.rows, m.cols); break;
    case GgmlType::F32: ops::matvec(dev_, m.f32, x, y, m.rows, m.cols); break;
  }
}

template <typename X>
void LlamaModel::split_qkv(const Buffer<X>& qkv, const Buffer<X>& q, const Buffer<X>& k, const Buffer<X>& v,
                           size_t tokens) const {
  const size_t KV = size_t(cfg_.head_dim) * cfg_.head_count_kv, per_q = cfg_.embedding_length / KV;
  const size_t rows = tokens * (per_q + 2);
  ops::embedding(dev_, qkv, q_rows_, q, tokens * per_q, rows, KV);
  ops::embedding(dev_, qkv, k_rows_, k, tokens, rows, KV);
  ops::embedding(dev_, qkv, v_rows_, v, tokens, rows, KV);
}
template void LlamaModel::split_qkv(const Buffer<float>&, const Buffer<float>&, const Buffer<float>&,
                                    const Buffer<float>&, size_t) const;
template void LlamaModel::split_qkv(const Buffer<bf16>&, const Buffer<bf16>&, const Buffer<bf16>&,
                                    const Buffer<bf16>&, size_t) const;
template void LlamaModel::split_qkv(const Buffer<half>&, const Buffer<half>&, const Buffer<half>&,
                                    const Buffer<half>&, size_t) const;

template <typename X>
void LlamaModel::swiglu(const Buffer<X>& gate_up, const Buffer<X>& hidden, size_t tokens) const {
  const size_t F = cfg_.feed_forward_length;
  const size_t threads = tokens * (F % 4 == 0 ? F / 4 : F);   // llm_kernels.cpp: four a thread where they fit
  const Grid grid{static_cast<uint32_t>(std::min<size_t>((threads + 255) / 256, 65535))};
  Buffer<X> out = hidden;   // a handle: the generated launcher takes the written buffer by reference
  const auto rows = static_cast<uint32_t>(tokens), n = static_cast<uint32_t>(F);
  if constexpr (std::is_same_v<X, float>) llm_kernels::swiglu_halves_f32(dev_, grid, gate_up, out, rows, n);
  else if constexpr (std::is_same_v<X, bf16>) llm_kernels::swiglu_halves_bf16(dev_, grid, gate_up, out, rows, n);
  else llm_kernels::swiglu_halves_f16(dev_, grid, gate_up, out, rows, n);
}
template void LlamaModel::swiglu(const Buffer<float>&, const Buffer<float>&, size_t) const;
template void LlamaModel::swiglu(const Buffer<bf16>&, const Buffer<bf16>&, size_t) const;
template void LlamaModel::swiglu(const Buffer<half>&, const Buffer<half>&, size_t) const;

void LlamaModel::swiglu_q8(const Buffer<float>& gate_up) const {
  const size_t F = cfg_.feed_forward_length;
  Buffer<uint32_t> words = x_q8_.as<uint32_t>();
  llm_kernels::swiglu_halves_q8(dev_, Grid{static_cast<uint32_t>((F / 4 + 255) / 256)}, gate_up, words,
                                static_cast<uint32_t>(F));
}

std::optional<Kernel> LlamaModel::choose_qkv_rope_product(const LlamaLayer& layer) const {
  const Matrix& m = layer.qkv;
  const size_t E = cfg_.embedding_length, H = cfg_.head_count, KVH = cfg_.head_count_kv, D = cfg_.head_dim;
  // The product's input is the int8 activations the norm before it writes (queue_step's norm_q8).
  if (!int8_activations_ || E % ops::kQuantBlock != 0) return std::nullopt;
  // QUIVER_LLM_FUSED_QKV=0: the product and qkv_rope_append as two launches (docs/llm.md).
  if (const char* e = std::getenv("QUIVER_LLM_FUSED_QKV"); e != nullptr && std::string_view(e) == "0")
    return std::nullopt;
  // The kernels take the rows as (H + 2 KVH) head_dim, qkv_product_blocks of them in x.
  if (!layer.fused_qkv() || !m.int8_x || D % 2 != 0 || m.rows != (H + 2 * KVH) * D ||
      qkv_product_blocks(m.rows) > 65535)
    return std::nullopt;
  // The fused launch reads rows x cols of blocks without the op library's size checks: a matrix
  // whose buffer is short of them takes the two-launch path, whose product names the shortfall.
  if (m.blocks.size() < m.bytes()) return std::nullopt;
  const bool q4_k = m.type == GgmlType::Q4_K && m.cols % 256 == 0;
  const bool repacked = m.repacked && (m.type == GgmlType::Q4_0 || m.type == GgmlType::Q8_0) && m.cols % 1024 == 0;
  if (!q4_k && !repacked) return std::nullopt;
  const Module module = llm_kernels::load(dev_);
  const std::string name = q4_k ? "qkv_q4_k_a8_rope_append"
                           : m.type == GgmlType::Q8_0 ? "qkv_q8_0r_a8_rope_append"
                           : module.has_kernel("qkv_q4_0r_a8_k4_rope_append") ? "qkv_q4_0r_a8_k4_rope_append"
                                                                                : "qkv_q4_0r_a8_rope_append";
  if (!module.has_kernel(name)) return std::nullopt;
  return module.kernel(name);
}

void LlamaModel::qkv_rope_append_product(const LlamaLayer& layer) const {
  const Matrix& m = layer.qkv;
  const size_t H = cfg_.head_count, KVH = cfg_.head_count_kv, D = cfg_.head_dim;
  const auto u32 = [](size_t v) { return static_cast<uint32_t>(v); };
  const Grid grid{u32(qkv_product_blocks(m.rows))};
  if (m.type == GgmlType::Q4_K)
    layer.qkv_rope_product->launch(grid, m.blocks.as<uint32_t>(), x_q8_.as<uint32_t>(), x_q8_.as<float>(), qkv_,
                                   u32(m.cols), position_, inv_freq_, q_rot_, layer.k_cache, layer.v_cache, u32(H),
                                   u32(KVH), u32(D), u32(inv_freq_.size()), u32(capacity_));
  else
    layer.qkv_rope_product->launch(grid, m.blocks.as<uint32_t>(), m.blocks.as<quiver::half>(),
                                   x_q8_.as<uint32_t>(), x_q8_.as<float>(), qkv_, u32(m.cols), position_, inv_freq_,
                                   q_rot_, layer.k_cache, layer.v_cache, u32(H), u32(KVH), u32(D),
                                   u32(inv_freq_.size()), u32(capacity_));
}

void LlamaModel::set_input(int32_t token, int32_t position) {
  token_.upload(std::span<const int32_t>(&token, 1));
  position_.upload(std::span<const int32_t>(&position, 1));
}

void LlamaModel::queue_step() {
  const size_t E = cfg_.embedding_length, F = cfg_.feed_forward_length, V = cfg_.vocab_size;
  const size_t H = cfg_.head_count, KVH = cfg_.head_count_kv, D = cfg_.head_dim;
  const float eps = cfg_.rms_norm_epsilon;
  // The residual stream alternates between two buffers: each residual add is fused with the
  // norm after it (add_rms_norm: the sum stored, the norm of the stored sum), and its sum goes to
  // the other buffer (no aliasing of an input with an output).
  ops::embedding(dev_, token_embd_, token_, x_[0], 1, V, E);
  int cur = 0;
  // With int8 activations the norm also writes xn_ quantized (x_q8_), which the products on
  // int8 activations that read xn_ take as it is.
  const bool norm_q8 = int8_activations_ && E % ops::kQuantBlock == 0;
  auto residual_then_norm = [&](const Buffer<float>& w) {
    if (norm_q8) ops::add_rms_norm_q8(dev_, x_[cur], proj_, w, x_[1 - cur], xn_, x_q8_, 1, E, eps);
    else ops::add_rms_norm(dev_, x_[cur], proj_, w, x_[1 - cur], xn_, 1, E, eps);
    cur = 1 - cur;
  };

  const ops::KvCacheShape cache{1, KVH, D, capacity_, ops::AttentionLayout::BSHD};
  ops::rms_norm(dev_, x_[cur], layers_.empty() ? output_norm_ : layers_.front().attn_norm, xn_, 1, E, eps);
  if (norm_q8) ops::quantize_activations_q8(dev_, xn_, x_q8_, E);
  for (size_t l = 0; l < layers_.size(); ++l) {
    LlamaLayer& layer = layers_[l];
    // Q, K, V rotated and appended in one launch (llm_kernels.cpp; llama.cpp's "normal" rope for
    // the llama architecture, adjacent pairs (2i, 2i + 1), as the op library's GPT-J style).
    auto rope_append = [&](const Buffer<float>& q, const Buffer<float>& k, const Buffer<float>& v, size_t k_at,
                           size_t v_at) {
      llm_kernels::qkv_rope_append(dev_, rope_append_grid_, q, k, v, static_cast<uint32_t>(k_at),
                                   static_cast<uint32_t>(v_at), position_, inv_freq_, q_rot_, layer.k_cache,
                                   layer.v_cache, static_cast<uint32_t>(H), static_cast<uint32_t>(KVH),
                                   static_cast<uint32_t>(D), static_cast<uint32_t>(inv_freq_.size()),
                                   static_cast<uint32_t>(capacity_));
    };
    if (layer.qkv_rope_product) {
      qkv_rope_append_product(layer);   // Q, K and V rotated and appended by the product's own launch
    } else if (layer.fused_qkv()) {
      linear(layer.qkv, xn_, qkv_, norm_q8);
      rope_append(qkv_, qkv_, qkv_, H * D, (H + KVH) * D);
    } else {
      linear(layer.q, xn_, q_, norm_q8);
      linear(layer.k, xn_, k_, norm_q8);
      linear(layer.v, xn_, v_, norm_q8);
      rope_append(q_, k_, v_, 0, 0);
    }
    // Keys 0 .. position, the length read on the device.
    // An output projection on int8 activations takes them from the attention's combine.
    if (layer.o.int8_x && E % ops::kQuantBlock == 0) {
      ops::attention_decode_q8(dev_, q_rot_, layer.k_cache, layer.v_cache, position_, att_, x_q8_, attn_work_, H,
                               cache);
      linear(layer.o, att_, proj_, true);
    } else {
      ops::attention_decode(dev_, q_rot_, layer.k_cache, layer.v_cache, position_, att_, attn_work_, H, cache);
      linear(layer.o, att_, proj_);
    }
    residual_then_norm(layer.ffn_norm);
    if (layer.fused_gate_up()) {
      linear(layer.gate_up, xn_, gate_, norm_q8);
      // A down product on int8 activations reads SwiGLU's result only as those: written so
      // (llm_kernels.cpp), it needs no float copy and no quantize launch.
      if (layer.down.int8_x && F % ops::kQuantBlock == 0) {
        swiglu_q8(gate_);
        linear(layer.down, hidden_, proj_, true);
        residual_then_norm(l + 1 < layers_.size() ? layers_[l + 1].attn_norm : output_norm_);
        continue;
      }
      swiglu(gate_, hidden_, 1);
    } else {
      linear(layer.gate, xn_, gate_, norm_q8);
      linear(layer.up, xn_, up_, norm_q8);
      ops::silu_gate(dev_, gate_, up_, hidden_, F);
    }
    linear(layer.down, hidden_, proj_);
    residual_then_norm(l + 1 < layers_.size() ? layers_[l + 1].attn_norm : output_norm_);
  }
  linear(output_, xn_, logits_, norm_q8);
  argmax_and_advance();
}

void LlamaModel::argmax_and_advance() {
  const uint32_t V = static_cast<uint32_t>(cfg_.vocab_size), slices = static_cast<uint32_t>(argmax_pairs_.size() / 2);
  llm_kernels::argmax_slices(dev_, Grid{slices}, logits_, argmax_pairs_, V, kArgmaxSlice);
  llm_kernels::argmax_advance(dev_, Grid{1}, argmax_pairs_, slices, token_, position_, generated_,
                              static_cast<uint32_t>(capacity_));
}

size_t LlamaModel::weight_bytes_per_token() const {
  const size_t E = cfg_.embedding_length;
  size_t bytes = E * sizeof(float) * 2 + output_.bytes();   // embedding row, output norm
  for (const LlamaLayer& l : layers_) {
    bytes += 2 * E * sizeof(float);
    for (const Matrix* m : l.matrices()) bytes += m->bytes();
  }
  return bytes;
}

}  // namespace quiver::llm
