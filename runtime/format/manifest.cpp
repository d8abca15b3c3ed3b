// Names of the manifest's enums and the manifest <-> JSON text mapping (docs/format.md,
// "Manifest"). Reading validates every field, because the text comes from an untrusted file.
#include "format/manifest.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "quiver/runtime.h"

namespace quiver::format {
namespace {

constexpr std::pair<ScalarType, std::string_view> kScalarNames[] = {
    {ScalarType::Bool, "bool"},     {ScalarType::I8, "int8_t"},     {ScalarType::U8, "uint8_t"},
    {ScalarType::I16, "int16_t"},   {ScalarType::U16, "uint16_t"},  {ScalarType::I32, "int32_t"},
    {ScalarType::U32, "uint32_t"},  {ScalarType::I64, "int64_t"},   {ScalarType::U64, "uint64_t"},
    {ScalarType::F16, "half"},      {ScalarType::BF16, "bf16"},     {ScalarType::F32, "float"},
    {ScalarType::F64, "double"},
};

constexpr std::pair<Target, std::string_view> kTargetNames[] = {
    {Target::PTX, "ptx"},     {Target::CUBIN, "cubin"}, {Target::SPIRV, "spirv"},
    {Target::CPU, "cpu"},     {Target::HSACO, "hsaco"}, {Target::MSL, "msl"},
    {Target::METALLIB, "metallib"}, {Target::WGSL, "wgsl"},
};

using nlohmann::json;

[[noreturn]] void fail(std::string_view label, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::InvalidFatBinary, std::string(label) + ": invalid fat binary: manifest field '" +
                                               field + "': " + what);
}

std::string type_name(const json& v) { return v.type_name(); }

// Typed accessors: each names the JSON path of the field it could not accept.
class Reader {
 public:
  explicit Reader(std::string_view label) : label_(label) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    format::fail(label_, field, what);
  }

  const json& member(const json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path + key, "missing");
    return *it;
  }
  std::string string(const json& obj, const std::string& path, const char* key, size_t max_len,
                     bool allow_empty) const {
    const json& v = member(obj, path, key);
    if (!v.is_string()) fail(path + key, "expected a string, got " + type_name(v));
    const std::string& s = v.get_ref<const std::string&>();
    if (!allow_empty && s.empty()) fail(path + key, "must not be empty");
    if (s.size() > max_len)
      fail(path + key, "longer than the limit of " + std::to_string(max_len) + " bytes");
    return s;
  }
  uint64_t unsigned_int(const json& obj, const std::string& path, const char* key, uint64_t max) const {
    const json& v = member(obj, path, key);
    // nlohmann stores non-negative integer literals as number_unsigned; negatives and
    // fractions land in the other number kinds and are refused.
    if (!v.is_number_unsigned())
      fail(path + key, "expected a non-negative integer, got " +
                           (v.is_number() ? std::string("number ") + v.dump() : type_name(v)));
    uint64_t x = v.get<uint64_t>();
    if (x > max) fail(path + key, std::to_string(x) + " exceeds the limit of " + std::to_string(max));
    return x;
  }
  bool boolean(const json& obj, const std::string& path, const char* key) const {
    const json& v = member(obj, path, key);
    if (!v.is_boolean()) fail(path + key, "expected true or false, got " + type_name(v));
    return v.get<bool>();
  }
  const json& array(const json& obj, const std::string& path, const char* key, size_t max_count) const {
    const json& v = member(obj, path, key);
    if (!v.is_array()) fail(path + key, "expected an array, got " + type_name(v));
    if (v.size() > max_count)
      fail(path + key, std::to_string(v.size()) + " entries exceed the limit of " +
                           std::to_string(max_count));
    return v;
  }
  void object(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, "expected an object, got " + type_name(v));
  }

 private:
  std::string_view label_;
};

bool is_symbol(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

// nlohmann's parser is iterative, but a bounded nesting depth keeps every later walk over the
// tree shallow, and a bounded number of JSON values bounds the memory the parsed tree takes
// (a 16 MiB "[0,0,0,...]" would otherwise become a tree of 8 million nodes). The manifest
// itself nests 5 levels deep and has ~6 values per parameter.
void check_shape(std::string_view text, std::string_view label) {
  size_t depth = 0, values = 1;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits::kMaxJsonDepth)
        fail(label, "(document)", "JSON nested deeper than " + std::to_string(limits::kMaxJsonDepth) +
                                      " levels");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' || c == ':') {
      if (++values > limits::kMaxJsonValues)
        fail(label, "(document)", "more than " + std::to_string(limits::kMaxJsonValues) + " JSON values");
    }
  }
}

Param read_param(const Reader& r, const json& j, const std::string& path) {
  r.object(j, path);
  const std::string p = path + ".";
  Param param;
  param.name = r.string(j, p, "name", limits::kMaxNameBytes, /*allow_empty=*/true);
  std::string type = r.string(j, p, "type", 64, false);
  auto t = scalar_type_from_string(type);
  if (!t) r.fail(p + "type", "unknown scalar type \"" + type + "\"");
  param.type = *t;
  param.vec_width = static_cast<uint32_t>(r.unsigned_int(j, p, "vec_width", 1u << 16));
  if (param.vec_width != 1 && param.vec_width != 2 && param.vec_width != 4 && param.vec_width != 8)
    r.fail(p + "vec_width", "must be 1, 2, 4 or 8 (got " + std::to_string(param.vec_width) + ")");
  param.is_buffer = r.boolean(j, p, "buffer");
  std::string access = r.string(j, p, "access", 64, false);
  if (access == "read") param.access = Access::Read;
  else if (access == "read_write") param.access = Access::ReadWrite;
  else r.fail(p + "access", "unknown access \"" + access + "\" (expected read or read_write)");
  if (!param.is_buffer && param.access != Access::Read)
    r.fail(p + "access", "a scalar parameter is always read-only");
  return param;
}

}  // namespace

std::string_view to_string(ScalarType t) {
  for (auto& [k, name] : kScalarNames)
    if (k == t) return name;
  return "?";
}

std::optional<ScalarType> scalar_type_from_string(std::string_view s) {
  for (auto& [k, name] : kScalarNames)
    if (name == s) return k;
  return std::nullopt;
}

uint32_t size_of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: case ScalarType::I8: case ScalarType::U8: return 1;
    case ScalarType::I16: case ScalarType::U16: case ScalarType::F16: case ScalarType::BF16: return 2;
    case ScalarType::I32: case ScalarType::U32: case ScalarType::F32: return 4;
    case ScalarType::I64: case ScalarType::U64: case ScalarType::F64: return 8;
  }
  return 0;
}

std::string_view to_string(Target t) {
  for (auto& [k, name] : kTargetNames)
    if (k == t) return name;
  return "?";
}

std::optional<Target> target_from_string(std::string_view s) {
  for (auto& [k, name] : kTargetNames)
    if (name == s) return k;
  return std::nullopt;
}

const Kernel* Manifest::find_kernel(std::string_view name) const {
  for (const Kernel& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

std::string checksum_hex(uint64_t checksum) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, checksum >>= 4) s[static_cast<size_t>(i)] = kDigits[checksum & 15];
  return s;
}

std::string manifest_to_json(const Manifest& m, int indent) {
  json kernels = json::array();
  for (const Kernel& k : m.kernels) {
    json params = json::array();
    for (const Param& p : k.params)
      params.push_back({{"name", p.name},
                        {"type", to_string(p.type)},
                        {"vec_width", p.vec_width},
                        {"buffer", p.is_buffer},
                        {"access", p.access == Access::Read ? "read" : "read_write"}});
    json targets = json::array();
    for (Target t : k.targets) targets.push_back(to_string(t));
    kernels.push_back({{"name", k.name},
                       {"symbol", k.symbol},
                       {"params", std::move(params)},
                       {"block", {k.block[0], k.block[1], k.block[2]}},
                       {"shared_bytes", k.shared_bytes},
                       {"targets", std::move(targets)},
                       {"uses_barrier", k.uses_barrier}});
  }
  json images = json::array();
  for (const Image& im : m.images)
    images.push_back({{"target", to_string(im.target)},
                      {"arch", im.arch},
                      {"offset", im.offset},
                      {"size", im.size},
                      {"raw_size", im.raw_size},
                      {"checksum", checksum_hex(im.checksum)},
                      {"kernels", im.kernels}});
  json doc = {{"compiler_version", m.compiler_version},
              {"source_hash", m.source_hash},
              {"kernels", std::move(kernels)},
              {"images", std::move(images)}};
  // Strict UTF-8: a writer with invalid strings gets an exception rather than a bad file.
  return doc.dump(indent);
}

Manifest manifest_from_json(std::string_view text, std::string_view label, bool skip_unknown_targets) {
  check_shape(text, label);
  // A key given twice would be read differently by readers that keep the first and those that
  // keep the last occurrence; such a manifest is refused.
  std::vector<std::set<std::string>> keys_per_object;
  std::string duplicate;
  auto track_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys_per_object.emplace_back();
    } else if (event == json::parse_event_t::object_end && !keys_per_object.empty()) {
      keys_per_object.pop_back();
    } else if (event == json::parse_event_t::key && !keys_per_object.empty() && duplicate.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys_per_object.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), track_keys);
  } catch (const json::exception& e) {
    fail(label, "(document)", std::string("not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail(label, duplicate, "the key appears twice in one object");
  Reader r(label);
  r.object(doc, "(document)");
  Manifest m;
  m.compiler_version = r.string(doc, "", "compiler_version", limits::kMaxNameBytes, true);
  m.source_hash = r.string(doc, "", "source_hash", limits::kMaxNameBytes, true);

  const json& kernels = r.array(doc, "", "kernels", limits::kMaxKernels);
  std::set<std::string, std::less<>> names, symbols;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::string path = "kernels[" + std::to_string(i) + "]";
    const std::string p = path + ".";
    const json& kj = kernels[i];
    r.object(kj, path);
    Kernel k;
    k.name = r.string(kj, p, "name", limits::kMaxNameBytes, false);
    if (!names.insert(k.name).second) r.fail(p + "name", "duplicate kernel name \"" + k.name + "\"");
    k.symbol = r.string(kj, p, "symbol", limits::kMaxSymbolBytes, false);
    if (!is_symbol(k.symbol))
      r.fail(p + "symbol", "\"" + k.symbol + "\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    if (!symbols.insert(k.symbol).second)
      r.fail(p + "symbol", "duplicate kernel symbol \"" + k.symbol + "\"");
    const json& params = r.array(kj, p, "params", limits::kMaxParams);
    for (size_t a = 0; a < params.size(); ++a)
      k.params.push_back(read_param(r, params[a], p + "params[" + std::to_string(a) + "]"));
    const json& block = r.array(kj, p, "block", 3);
    if (block.size() != 3) r.fail(p + "block", "expected 3 dimensions, got " + std::to_string(block.size()));
    uint64_t threads = 1;
    for (size_t d = 0; d < 3; ++d) {
      const json& v = block[d];
      const std::string field = p + "block[" + std::to_string(d) + "]";
      if (!v.is_number_unsigned()) r.fail(field, "expected a positive integer, got " + v.dump());
      uint64_t x = v.get<uint64_t>();
      if (x == 0 || x > limits::kMaxBlockThreads)
        r.fail(field, "must be between 1 and " + std::to_string(limits::kMaxBlockThreads) +
                          " (got " + std::to_string(x) + ")");
      k.block[d] = static_cast<uint32_t>(x);
      threads *= x;
    }
    if (threads > limits::kMaxBlockThreads)
      r.fail(p + "block", "block of " + std::to_string(threads) + " threads exceeds the limit of " +
                              std::to_string(limits::kMaxBlockThreads));
    k.shared_bytes = static_cast<uint32_t>(r.unsigned_int(kj, p, "shared_bytes", limits::kMaxSharedBytes));
    const json& targets = r.array(kj, p, "targets", limits::kMaxTargetsPerKernel);
    for (size_t t = 0; t < targets.size(); ++t) {
      const std::string field = p + "targets[" + std::to_string(t) + "]";
      if (!targets[t].is_string()) r.fail(field, "expected a string, got " + type_name(targets[t]));
      const std::string& s = targets[t].get_ref<const std::string&>();
      auto target = target_from_string(s);
      if (!target) {
        if (skip_unknown_targets) continue;
        r.fail(field, "unknown target \"" + s + "\"");
      }
      if (std::find(k.targets.begin(), k.targets.end(), *target) != k.targets.end())
        r.fail(field, "target \"" + s + "\" listed twice");
      k.targets.push_back(*target);
    }
    k.uses_barrier = r.boolean(kj, p, "uses_barrier");
    m.kernels.push_back(std::move(k));
  }

  const json& images = r.array(doc, "", "images", limits::kMaxImages);
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string path = "images[" + std::to_string(i) + "]";
    const std::string p = path + ".";
    const json& ij = images[i];
    r.object(ij, path);
    Image im;
    std::string target = r.string(ij, p, "target", 64, false);
    auto t = target_from_string(target);
    if (!t) {
      if (skip_unknown_targets) continue;  // a newer minor's target this reader cannot use
      r.fail(p + "target", "unknown target \"" + target + "\"");
    }
    im.target = *t;
    im.arch = r.string(ij, p, "arch", limits::kMaxArchBytes, false);
    if (!is_printable_ascii(im.arch)) r.fail(p + "arch", "must be printable ASCII without spaces");
    for (const Image& other : m.images)
      if (other.target == im.target && other.arch == im.arch)
        r.fail(p + "arch", "a second image for " + target + " " + im.arch);
    im.offset = r.unsigned_int(ij, p, "offset", std::numeric_limits<uint64_t>::max());
    im.size = r.unsigned_int(ij, p, "size", std::numeric_limits<uint64_t>::max());
    im.raw_size = r.unsigned_int(ij, p, "raw_size", limits::kMaxImageRawBytes);
    if (im.raw_size == 0) r.fail(p + "raw_size", "an image cannot be empty");
    std::string checksum = r.string(ij, p, "checksum", 16, false);
    if (checksum.size() != 16 || !std::all_of(checksum.begin(), checksum.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        }))
      r.fail(p + "checksum", "expected 16 lowercase hex digits, got \"" + checksum + "\"");
    im.checksum = std::stoull(checksum, nullptr, 16);
    const json& syms = r.array(ij, p, "kernels", limits::kMaxKernels);
    for (size_t s = 0; s < syms.size(); ++s) {
      const std::string field = p + "kernels[" + std::to_string(s) + "]";
      if (!syms[s].is_string()) r.fail(field, "expected a string, got " + type_name(syms[s]));
      const std::string& sym = syms[s].get_ref<const std::string&>();
      auto kernel = std::find_if(m.kernels.begin(), m.kernels.end(),
                                 [&](const Kernel& k) { return k.symbol == sym; });
      if (kernel == m.kernels.end()) r.fail(field, "no kernel has the symbol \"" + sym + "\"");
      if (std::find(kernel->targets.begin(), kernel->targets.end(), im.target) == kernel->targets.end())
        r.fail(field, "kernel \"" + kernel->name + "\" does not list target " + target);
      if (std::find(im.kernels.begin(), im.kernels.end(), sym) != im.kernels.end())
        r.fail(field, "symbol \"" + sym + "\" listed twice");
      im.kernels.push_back(sym);
    }
    m.images.push_back(std::move(im));
  }

  // Every target a kernel claims must be backed by an image that contains it.
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const Kernel& k = m.kernels[i];
    for (size_t t = 0; t < k.targets.size(); ++t) {
      bool found = std::any_of(m.images.begin(), m.images.end(), [&](const Image& im) {
        return im.target == k.targets[t] &&
               std::find(im.kernels.begin(), im.kernels.end(), k.symbol) != im.kernels.end();
      });
      if (!found)
        r.fail("kernels[" + std::to_string(i) + "].targets", "kernel \"" + k.name + "\" lists target " +
                                                                 std::string(to_string(k.targets[t])) +
                                                                 " but no " +
                                                                 std::string(to_string(k.targets[t])) +
                                                                 " image contains it");
    }
  }
  return m;
}

}  // namespace quiver::format
