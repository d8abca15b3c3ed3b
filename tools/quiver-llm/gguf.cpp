// GGUF reading (docs/llm.md, "Model files"). Every count and size read from the file is checked
// against the bytes that remain before anything is allocated or read for it, so that time and
// memory stay linear in the file's size whatever the file says.
#include "gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

namespace quiver::llm {
namespace {

// Known ggml type names, for errors about types this reader does not accept.
constexpr std::pair<uint32_t, const char*> kGgmlTypeNames[] = {
    {0, "F32"},      {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},    {6, "Q5_0"},     {7, "Q5_1"},
    {8, "Q8_0"},     {9, "Q8_1"},     {10, "Q2_K"},    {11, "Q3_K"},   {12, "Q4_K"},    {13, "Q5_K"},
    {14, "Q6_K"},    {15, "Q8_K"},    {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
    {20, "IQ4_NL"},  {21, "IQ3_S"},   {22, "IQ2_S"},   {23, "IQ4_XS"}, {24, "I8"},      {25, "I16"},
    {26, "I32"},     {27, "I64"},     {28, "F64"},     {29, "IQ1_M"},  {30, "BF16"},
};

constexpr TypeLayout kF32{"F32", 1, 4};
constexpr TypeLayout kF16{"F16", 1, 2};
constexpr TypeLayout kBF16{"BF16", 1, 2};
constexpr TypeLayout kQ8_0{"Q8_0", 32, 34};     // f16 scale, 32 x int8
constexpr TypeLayout kQ4_0{"Q4_0", 32, 18};     // f16 scale, 16 bytes of 4-bit pairs
constexpr TypeLayout kQ4_K{"Q4_K", 256, 144};   // f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of 4-bit
constexpr TypeLayout kQ6_K{"Q6_K", 256, 210};   // 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, f16 d

// Smallest encoding of one value of each type: bounds an array's count by the bytes left.
uint64_t min_value_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::String: return 8;   // its length
    case ValueType::Array: return 12;   // element type and count
  }
  return 1;
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

// A tensor info's smallest encoding: name length, n_dims, one dim, type, offset.
constexpr uint64_t kMinTensorInfoSize = 8 + 4 + 8 + 4 + 8;
// A key/value pair's smallest encoding: key length, value type, a one-byte value.
constexpr uint64_t kMinKeyValueSize = 8 + 4 + 1;
// A tensor's element count bound: its size in bytes (at most 4 per element) then fits 64 bits.
constexpr uint64_t kMaxElements = uint64_t{1} << 60;

std::string shape_string(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

constexpr std::string_view kIndexPlaceholder = "[#]";

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& label) : bytes_(bytes), label_(label) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw GgufError(label_ + ": invalid GGUF file: " + field + ": " + what);
  }
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  const std::byte* take(uint64_t n, const std::string& field) {
    if (n > remaining())
      fail(field, "truncated (needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                      ", the file has " + std::to_string(bytes_.size()) + ")");
    const std::byte* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T scalar(const std::string& field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field), sizeof(T));   // the format is little-endian, as is every host quiver runs on
    return v;
  }
  std::string string(const std::string& field) {
    uint64_t len = scalar<uint64_t>(field + " length");
    if (len > remaining())
      fail(field, "string length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                      " bytes left in the file");
    const std::byte* p = take(len, field);
    return std::string(reinterpret_cast<const char*>(p), len);
  }
  // A count of items of at least `min_size` bytes each, checked against the bytes left.
  uint64_t count(const std::string& field, uint64_t min_size) {
    uint64_t n = scalar<uint64_t>(field);
    if (n > remaining() / min_size)
      fail(field, std::to_string(n) + " items of at least " + std::to_string(min_size) +
                      " bytes each cannot fit in the " + std::to_string(remaining()) +
                      " bytes left in the file (a wrong count or a truncated file)");
    return n;
  }

  Value value(ValueType type, const std::string& field, uint32_t depth) {
    Value v;
    v.type = type;
    switch (type) {
      case ValueType::U8: v.data = uint64_t{scalar<uint8_t>(field)}; break;
      case ValueType::U16: v.data = uint64_t{scalar<uint16_t>(field)}; break;
      case ValueType::U32: v.data = uint64_t{scalar<uint32_t>(field)}; break;
      case ValueType::U64: v.data = scalar<uint64_t>(field); break;
      case ValueType::I8: v.data = int64_t{scalar<int8_t>(field)}; break;
      case ValueType::I16: v.data = int64_t{scalar<int16_t>(field)}; break;
      case ValueType::I32: v.data = int64_t{scalar<int32_t>(field)}; break;
      case ValueType::I64: v.data = scalar<int64_t>(field); break;
      case ValueType::F32: v.data = double{scalar<float>(field)}; break;
      case ValueType::F64: v.data = scalar<double>(field); break;
      case ValueType::Bool: {
        uint8_t b = scalar<uint8_t>(field);
        if (b > 1) fail(field, "a BOOL must be 0 or 1, not " + std::to_string(b));
        v.data = b == 1;
        break;
      }
      case ValueType::String: v.data = string(field); break;
      case ValueType::Array: {
        if (depth >= kMaxArrayNesting)
          fail(field, "arrays nested more than " + std::to_string(kMaxArrayNesting) + " deep");
        uint32_t et = scalar<uint32_t>(field + " element type");
        if (!known_value_type(et)) fail(field + " element type", "unknown metadata value type " + std::to_string(et));
        Array a;
        a.element_type = static_cast<ValueType>(et);
        uint64_t n = count(field + " count", min_value_size(a.element_type));
        a.items.reserve(n);
        // A vocabulary is hundreds of thousands of elements: their field names are made only for
        // an error, by putting the index in place of the innermost placeholder still there.
        const std::string element = field + std::string(kIndexPlaceholder);
        uint64_t i = 0;
        try {
          for (; i < n; ++i) a.items.push_back(value(a.element_type, element, depth + 1));
        } catch (const GgufError& e) {
          std::string what = e.what();
          const size_t at = what.rfind(kIndexPlaceholder);
          if (at == std::string::npos) throw;
          throw GgufError(what.replace(at, kIndexPlaceholder.size(), "[" + std::to_string(i) + "]"));
        }
        v.data = std::move(a);
        break;
      }
    }
    return v;
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& label_;
  uint64_t pos_ = 0;
};

}  // namespace

const TypeLayout* type_layout(uint32_t id) {
  switch (static_cast<GgmlType>(id)) {
    case GgmlType::F32: return &kF32;
    case GgmlType::F16: return &kF16;
    case GgmlType::BF16: return &kBF16;
    case GgmlType::Q8_0: return &kQ8_0;
    case GgmlType::Q4_0: return &kQ4_0;
    case GgmlType::Q4_K: return &kQ4_K;
    case GgmlType::Q6_K: return &kQ6_K;
  }
  return nullptr;
}

const TypeLayout& type_layout(GgmlType type) {
  const TypeLayout* l = type_layout(static_cast<uint32_t>(type));
  if (!l) throw GgufError("ggml type " + type_name(static_cast<uint32_t>(type)) + " is not supported");
  return *l;
}

std::string type_name(uint32_t id) {
  for (const auto& [n, name] : kGgmlTypeNames)
    if (n == id) return std::string(name) + " (" + std::to_string(id) + ")";
  return std::to_string(id);
}

const char* value_type_name(ValueType t) {
  static constexpr const char* kNames[] = {"U8",  "I8",     "U16",   "I16", "U32", "I32", "F32",
                                           "BOOL", "STRING", "ARRAY", "U64", "I64", "F64"};
  uint32_t i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

uint64_t Tensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;   // bounded when the file was read
  return n;
}

struct Gguf::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr) munmap(addr, size);
  }
};

Gguf::Gguf(Gguf&&) noexcept = default;
Gguf& Gguf::operator=(Gguf&&) noexcept = default;
Gguf::~Gguf() = default;

Gguf Gguf::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw GgufError(path + ": cannot open GGUF file: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError(path + ": cannot read GGUF file (not a regular file?)");
  }
  Gguf g;
  g.label_ = path;
  g.mapping_ = std::make_unique<Mapping>();
  size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw GgufError(path + ": cannot map GGUF file: " + std::strerror(err));
    }
    g.mapping_->addr = addr;
    g.mapping_->size = size;
  }
  ::close(fd);
  g.parse({static_cast<const std::byte*>(g.mapping_->addr), size});
  return g;
}

Gguf Gguf::view(std::span<const std::byte> bytes, std::string label) {
  Gguf g;
  g.label_ = std::move(label);
  g.parse(bytes);
  return g;
}

void Gguf::parse(std::span<const std::byte> bytes) {
  Reader r(bytes, label_);
  const std::byte* magic = r.take(4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) r.fail("magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  version_ = r.scalar<uint32_t>("version");
  // Version 2 has version 3's layout (3 only allowed big-endian files, which this reader refuses:
  // their version reads as 0x03000000 here).
  if (version_ != 2 && version_ != 3) {
    const bool swapped = version_ == 0x02000000 || version_ == 0x03000000;
    r.fail("version", "version " + std::to_string(version_) + " is not supported (this reader reads 2 and 3, "
                      "little-endian" + (swapped ? "; this is a big-endian file)" : ")"));
  }
  uint64_t n_tensors = r.count("tensor count", kMinTensorInfoSize);
  uint64_t n_kv = r.count("metadata count", kMinKeyValueSize);

  metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string field = "metadata[" + std::to_string(i) + "]";
    std::string key = r.string(field + " key");
    field = "metadata key '" + key + "'";
    uint32_t type = r.scalar<uint32_t>(field + " value type");
    if (!known_value_type(type)) r.fail(field + " value type", "unknown metadata value type " + std::to_string(type));
    Value v = r.value(static_cast<ValueType>(type), field, 0);
    if (metadata_index_.count(key)) r.fail(field, "the key appears twice");
    // The index's keys view the strings in metadata_, which never reallocates (reserved above).
    metadata_.emplace_back(std::move(key), std::move(v));
    metadata_index_.emplace(metadata_.back().first, metadata_.size() - 1);
  }

  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::U32)
      r.fail("metadata key 'general.alignment'", std::string("must be a U32, not a ") + value_type_name(a->type));
    uint64_t align = std::get<uint64_t>(a->data);
    if (align == 0 || !std::has_single_bit(align))
      r.fail("metadata key 'general.alignment'", std::to_string(align) + " is not a power of two");
    alignment_ = static_cast<uint32_t>(align);
  }

  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Tensor t;
    t.name = r.string("tensor[" + std::to_string(i) + "] name");
    const std::string field = "tensor '" + t.name + "'";
    uint32_t n_dims = r.scalar<uint32_t>(field + " n_dims");
    if (n_dims == 0 || n_dims > kMaxDims)
      r.fail(field + " n_dims", std::to_string(n_dims) + " dimensions (1 to " + std::to_string(kMaxDims) + " allowed)");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = r.scalar<uint64_t>(field + " dims[" + std::to_string(d) + "]");
      if (ne == 0) r.fail(field + " dims[" + std::to_string(d) + "]", "a dimension is 0");
      if (__builtin_mul_overflow(elements, ne, &elements) || elements > kMaxElements)
        r.fail(field + " dims", "the element count overflows (dims so far " + shape_string(t.dims) + " and " +
                                    std::to_string(ne) + ")");
      t.dims.push_back(ne);
    }
    uint32_t type = r.scalar<uint32_t>(field + " type");
    const TypeLayout* layout = type_layout(type);
    if (!layout)
      r.fail(field + " type", "ggml type " + type_name(type) +
                                  " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K are)");
    t.type = static_cast<GgmlType>(type);
    if (t.dims[0] % layout->block_elements != 0)
      r.fail(field + " dims[0]", "a row of " + std::to_string(t.dims[0]) + " elements is not a whole number of " +
                                     layout->name + " blocks of " + std::to_string(layout->block_elements));
    t.offset = r.scalar<uint64_t>(field + " offset");
    if (tensor_index_.count(t.name)) r.fail(field, "the tensor name appears twice");
    tensors_.push_back(std::move(t));   // reserved above: the index's views stay valid
    tensor_index_.emplace(tensors_.back().name, tensors_.size() - 1);
  }

  uint64_t data_offset = (r.pos() + alignment_ - 1) / alignment_ * alignment_;   // pos < 2^63: no overflow
  data_offset_ = data_offset;
  if (tensors_.empty()) return;
  if (data_offset > bytes.size())
    r.fail("data section", "truncated (it starts at offset " + std::to_string(data_offset) + ", the file has " +
                               std::to_string(bytes.size()) + " bytes)");
  const uint64_t data_size = bytes.size() - data_offset;
  for (Tensor& t : tensors_) {
    const std::string field = "tensor '" + t.name + "' offset";
    if (t.offset % alignment_ != 0)
      r.fail(field, std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
    const TypeLayout& layout = *type_layout(static_cast<uint32_t>(t.type));
    // elements <= 2^60 and at most 4 bytes per element: no overflow.
    uint64_t size = t.elements() / layout.block_elements * layout.block_bytes;
    if (t.offset > data_size || size > data_size - t.offset)
      r.fail(field, "its " + std::to_string(size) + " bytes at " + std::to_string(t.offset) +
                        " run past the data section's " + std::to_string(data_size) + " bytes");
    t.bytes = bytes.subspan(data_offset + t.offset, size);
  }
}

bool Gguf::has(std::string_view key) const { return metadata_index_.count(key) != 0; }

const Value* Gguf::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

void Gguf::fail_key(std::string_view key, const std::string& what) const {
  throw GgufError(label_ + ": GGUF metadata key '" + std::string(key) + "': " + what);
}

const Value& Gguf::require(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail_key(key, "missing");
  return *v;
}

namespace {
// An integer value's magnitude as a signed 128-bit number, or nothing for other types.
bool integer_value(const Value& v, __int128& out) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) return out = *u, true;
  if (const auto* i = std::get_if<int64_t>(&v.data)) return out = *i, true;
  return false;
}
}  // namespace

uint64_t Gguf::get_u64(std::string_view key) const {
  const Value& v = require(key);
  __int128 n;
  if (!integer_value(v, n)) fail_key(key, std::string("is a ") + value_type_name(v.type) + ", not an integer");
  if (n < 0) fail_key(key, "is negative");
  return static_cast<uint64_t>(n);
}

uint32_t Gguf::get_u32(std::string_view key) const {
  uint64_t n = get_u64(key);
  if (n > UINT32_MAX) fail_key(key, std::to_string(n) + " does not fit in 32 bits");
  return static_cast<uint32_t>(n);
}

int32_t Gguf::get_i32(std::string_view key) const {
  const Value& v = require(key);
  __int128 n;
  if (!integer_value(v, n)) fail_key(key, std::string("is a ") + value_type_name(v.type) + ", not an integer");
  if (n < INT32_MIN || n > INT32_MAX) fail_key(key, "does not fit in a signed 32-bit integer");
  return static_cast<int32_t>(n);
}

float Gguf::get_f32(std::string_view key) const {
  const Value& v = require(key);
  const auto* d = std::get_if<double>(&v.data);
  if (!d) fail_key(key, std::string("is a ") + value_type_name(v.type) + ", not a F32 or F64");
  return static_cast<float>(*d);
}

bool Gguf::get_bool(std::string_view key) const {
  const Value& v = require(key);
  const auto* b = std::get_if<bool>(&v.data);
  if (!b) fail_key(key, std::string("is a ") + value_type_name(v.type) + ", not a BOOL");
  return *b;
}

const std::string& Gguf::get_string(std::string_view key) const {
  const Value& v = require(key);
  const auto* s = std::get_if<std::string>(&v.data);
  if (!s) fail_key(key, std::string("is a ") + value_type_name(v.type) + ", not a STRING");
  return *s;
}

const Array& Gguf::get_array(std::string_view key) const {
  const Value& v = require(key);
  const auto* a = std::get_if<Array>(&v.data);
  if (!a) fail_key(key, std::string("is a ") + value_type_name(v.type) + ", not an ARRAY");
  return *a;
}

uint32_t Gguf::get_u32(std::string_view key, uint32_t fallback) const { return has(key) ? get_u32(key) : fallback; }
float Gguf::get_f32(std::string_view key, float fallback) const { return has(key) ? get_f32(key) : fallback; }

bool Gguf::has_tensor(std::string_view name) const { return tensor_index_.count(name) != 0; }

const Tensor& Gguf::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) throw GgufError(label_ + ": no tensor '" + std::string(name) + "' in the file");
  return tensors_[it->second];
}

std::vector<std::string> tokens(const Gguf& gguf) {
  const Array& a = gguf.get_array("tokenizer.ggml.tokens");
  if (a.element_type != ValueType::String)
    throw GgufError(gguf.label() + ": GGUF metadata key 'tokenizer.ggml.tokens': an ARRAY of " +
                    value_type_name(a.element_type) + ", not of STRING");
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const Value& v : a.items) out.push_back(std::get<std::string>(v.data));
  return out;
}

std::string render_token(std::string_view token) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (token.size() == 6 && token.substr(0, 3) == "<0x" && token[5] == '>' && hex(token[3]) >= 0 && hex(token[4]) >= 0)
    return std::string(1, static_cast<char>(hex(token[3]) * 16 + hex(token[4])));
  static constexpr std::string_view kSpace = "\xE2\x96\x81";   // U+2581 LOWER ONE EIGHTH BLOCK
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    if (token.substr(i, kSpace.size()) == kSpace) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += token[i++];
    }
  }
  return out;
}

// ---- Llama ------------------------------------------------------------------------------------

namespace {

struct LlamaChecker {
  const Gguf& gguf;
  [[noreturn]] void fail(const std::string& what) const { throw GgufError(gguf.label() + ": llama model: " + what); }
  void expect(const std::string& name, std::vector<uint64_t> shape) const {
    if (!gguf.has_tensor(name)) fail("tensor '" + name + "' is missing (expected shape " + shape_string(shape) + ")");
    const Tensor& t = gguf.tensor(name);
    if (t.dims != shape)
      fail("tensor '" + name + "': expected shape " + shape_string(shape) + ", found " + shape_string(t.dims));
  }
  uint32_t positive(std::string_view key) const {
    uint32_t v = gguf.get_u32(key);
    if (v == 0) fail("'" + std::string(key) + "' is 0");
    return v;
  }
};

}  // namespace

LlamaConfig from_gguf(const Gguf& gguf) {
  LlamaChecker c{gguf};
  const std::string& arch = gguf.get_string("general.architecture");
  if (arch != "llama") c.fail("general.architecture is '" + arch + "', not 'llama'");
  LlamaConfig cfg;
  cfg.context_length = c.positive("llama.context_length");
  cfg.embedding_length = c.positive("llama.embedding_length");
  cfg.block_count = c.positive("llama.block_count");
  cfg.feed_forward_length = c.positive("llama.feed_forward_length");
  cfg.head_count = c.positive("llama.attention.head_count");
  cfg.head_count_kv = gguf.has("llama.attention.head_count_kv") ? c.positive("llama.attention.head_count_kv")
                                                                : cfg.head_count;
  cfg.rms_norm_epsilon = gguf.get_f32("llama.attention.layer_norm_rms_epsilon");
  cfg.rope_freq_base = gguf.get_f32("llama.rope.freq_base", 10000.0f);
  if (!(cfg.rms_norm_epsilon > 0) || !(cfg.rope_freq_base > 0))
    c.fail("layer_norm_rms_epsilon and rope.freq_base must be positive");
  if (cfg.embedding_length % cfg.head_count != 0)
    c.fail("embedding_length " + std::to_string(cfg.embedding_length) + " is not a multiple of head_count " +
           std::to_string(cfg.head_count));
  if (cfg.head_count % cfg.head_count_kv != 0)
    c.fail("head_count " + std::to_string(cfg.head_count) + " is not a multiple of head_count_kv " +
           std::to_string(cfg.head_count_kv));
  cfg.head_dim = cfg.embedding_length / cfg.head_count;
  // Some converters write the head size too; quiver-llm's attention takes it as
  // embedding_length / head_count, so another value is refused rather than misread.
  for (const char* key : {"llama.attention.key_length", "llama.attention.value_length"})
    if (gguf.has(key) && gguf.get_u32(key) != cfg.head_dim)
      c.fail(std::string(key) + " " + std::to_string(gguf.get_u32(key)) + " is not embedding_length / head_count = " +
             std::to_string(cfg.head_dim) + " (not supported)");
  cfg.rope_dimension_count = gguf.get_u32("llama.rope.dimension_count", cfg.head_dim);
  if (cfg.rope_dimension_count == 0 || cfg.rope_dimension_count > cfg.head_dim || cfg.rope_dimension_count % 2)
    c.fail("rope.dimension_count " + std::to_string(cfg.rope_dimension_count) +
           " must be even and between 2 and the head size " + std::to_string(cfg.head_dim));

  if (!gguf.has_tensor("token_embd.weight")) c.fail("tensor 'token_embd.weight' is missing");
  const Tensor& embd = gguf.tensor("token_embd.weight");
  if (gguf.has("tokenizer.ggml.tokens")) {
    uint64_t n = gguf.get_array("tokenizer.ggml.tokens").items.size();
    if (n == 0 || n > UINT32_MAX) c.fail("tokenizer.ggml.tokens holds " + std::to_string(n) + " tokens");
    cfg.vocab_size = static_cast<uint32_t>(n);
  } else {
    if (embd.dims.size() != 2 || embd.dims[1] > UINT32_MAX)
      c.fail("tensor 'token_embd.weight': shape " + shape_string(embd.dims) + " is not [n_embd, n_vocab]");
    cfg.vocab_size = static_cast<uint32_t>(embd.dims[1]);
  }

  const uint64_t E = cfg.embedding_length, F = cfg.feed_forward_length, V = cfg.vocab_size;
  const uint64_t KV = uint64_t{cfg.head_dim} * cfg.head_count_kv;
  c.expect("token_embd.weight", {E, V});
  for (uint32_t i = 0; i < cfg.block_count; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    c.expect(b + "attn_norm.weight", {E});
    c.expect(b + "attn_q.weight", {E, E});
    c.expect(b + "attn_k.weight", {E, KV});
    c.expect(b + "attn_v.weight", {E, KV});
    c.expect(b + "attn_output.weight", {E, E});
    c.expect(b + "ffn_norm.weight", {E});
    c.expect(b + "ffn_gate.weight", {E, F});
    c.expect(b + "ffn_up.weight", {E, F});
    c.expect(b + "ffn_down.weight", {F, E});
  }
  c.expect("output_norm.weight", {E});
  cfg.tied_output = !gguf.has_tensor("output.weight");
  if (!cfg.tied_output) c.expect("output.weight", {E, V});
  return cfg;
}

}  // namespace quiver::llm
