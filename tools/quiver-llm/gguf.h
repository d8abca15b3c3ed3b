// Reading a GGUF model file (the format llama.cpp writes; docs/llm.md): the header, the metadata
// key/value pairs and the tensor table are parsed and checked up front; the tensors' bytes stay
// in the memory-mapped file and are handed out as spans. Every check failure throws GgufError
// whose message names the file and the field, key or tensor at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace quiver::llm {

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ggml tensor types this reader accepts (ggml's `enum ggml_type` numbering).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 8,
  Q4_K = 12,
  Q6_K = 14,
  BF16 = 30,
};

// Elements per block and bytes per block: quantized types store their rows as whole blocks
// (32 elements for Q8_0/Q4_0, 256-element super-blocks for Q4_K/Q6_K); plain types are blocks
// of one element.
struct TypeLayout {
  const char* name;
  uint32_t block_elements;
  uint32_t block_bytes;
};
// nullptr for a type id this reader does not accept.
const TypeLayout* type_layout(uint32_t type_id);
const TypeLayout& type_layout(GgmlType type);
// "Q4_K (12)", or "99" for ids ggml does not define; known ggml types this reader does not
// accept (Q4_1, IQ2_XXS, ...) are named too, so that an error says what the file holds.
std::string type_name(uint32_t type_id);

// Dequantizes `n` elements (a whole number of blocks) stored as `type` in `bytes` into `out`.
// Throws GgufError when `n` is not a multiple of the block size or `bytes` is too short.
void dequantize_row(GgmlType type, std::span<const std::byte> bytes, size_t n, float* out);

// Metadata value types (GGUF's `gguf_metadata_value_type`).
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* value_type_name(ValueType type);

struct Value;
struct Array {
  ValueType element_type = ValueType::U8;
  std::vector<Value> items;
};
// One metadata value: unsigned integers are held as uint64_t, signed ones as int64_t, floats as
// double; `type` keeps the type the file declared.
struct Value {
  ValueType type = ValueType::U8;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;
};

struct Tensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> dims;      // dims[0] is the row length (fastest varying)
  uint64_t offset = 0;             // from the start of the data section
  std::span<const std::byte> bytes;   // the tensor's data, inside the file
  uint64_t elements() const;
};

// The format's limits this reader enforces beyond the file's own bounds.
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint32_t kMaxArrayNesting = 8;
inline constexpr uint32_t kDefaultAlignment = 32;

class Gguf {
 public:
  // Memory-maps the file; the mapping lives as long as this Gguf (and its moves).
  static Gguf open(const std::string& path);
  // The same checks over bytes the caller keeps alive; `label` names them in errors.
  static Gguf view(std::span<const std::byte> bytes, std::string label);

  Gguf(Gguf&&) noexcept;
  Gguf& operator=(Gguf&&) noexcept;
  ~Gguf();

  const std::string& label() const { return label_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  bool has(std::string_view key) const;
  const Value* find(std::string_view key) const;   // nullptr when absent
  // Typed getters: a missing key or a value of another type throws, naming the file and key.
  // Integer getters accept any integer type whose value fits; f32 accepts F32 and F64.
  uint32_t get_u32(std::string_view key) const;
  int32_t get_i32(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  float get_f32(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const Array& get_array(std::string_view key) const;
  // The same, with `fallback` only when the key is absent (a wrong type still throws).
  uint32_t get_u32(std::string_view key, uint32_t fallback) const;
  float get_f32(std::string_view key, float fallback) const;

  const std::vector<Tensor>& tensors() const { return tensors_; }
  bool has_tensor(std::string_view name) const;
  const Tensor& tensor(std::string_view name) const;   // throws, naming the tensor

 private:
  struct Mapping;
  Gguf() = default;
  void parse(std::span<const std::byte> bytes);
  [[noreturn]] void fail_key(std::string_view key, const std::string& what) const;
  const Value& require(std::string_view key) const;

  std::unique_ptr<Mapping> mapping_;
  std::string label_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::unordered_map<std::string_view, size_t> metadata_index_;   // keys point into metadata_
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;     // names point into tensors_
};

// A Llama-family model's hyper-parameters (`llama.*` keys) after every tensor the model needs
// was found with the shape these imply.
struct LlamaConfig {
  uint32_t context_length = 0;
  uint32_t embedding_length = 0;   // n_embd
  uint32_t block_count = 0;        // layers
  uint32_t feed_forward_length = 0;
  uint32_t head_count = 0;
  uint32_t head_count_kv = 0;
  uint32_t head_dim = 0;           // embedding_length / head_count
  uint32_t rope_dimension_count = 0;
  uint32_t vocab_size = 0;
  float rms_norm_epsilon = 0;
  float rope_freq_base = 10000.0f;
  bool tied_output = false;        // no output.weight: the output projection is token_embd.weight
};
LlamaConfig from_gguf(const Gguf& gguf);

// tokenizer.ggml.tokens, in id order.
std::vector<std::string> tokens(const Gguf& gguf);
// A token's text as it prints: SentencePiece's U+2581 becomes a space and a byte token
// `<0xNN>` becomes that byte.
std::string render_token(std::string_view token);

}  // namespace quiver::llm
