// Names of the manifest's enums and the manifest <-> JSON text mapping (docs/format.md,
// "Manifest"). Reading validates every field, because the text comes from an untrusted file.
#include "format/manifest.h"

#include <algorithm>
#include <bitset>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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

// info() indexes the table by enumerator: the table must list them in order.
constexpr bool targets_in_enum_order() {
  for (size_t i = 0; i < kTargetCount; ++i)
    if (static_cast<size_t>(kTargets[i].target) != i) return false;
  return true;
}
static_assert(targets_in_enum_order(), "format/targets.h: kTargets out of enum order");

using nlohmann::json;

// A field path as the message shows it: control characters (a key may hold an escaped NUL,
// which would end the C string of Error::what() mid-message) written as \u00XX.
std::string printable_field(const std::string& field) {
  std::string out;
  out.reserve(field.size());
  for (char c : field) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\u00";
    out += kHex[u >> 4];
    out += kHex[u & 15];
  }
  return out;
}

[[noreturn]] void fail(std::string_view label, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::InvalidFatBinary, std::string(label) + ": invalid fat binary: manifest field '" +
                                               printable_field(field) + "': " + what);
}

// The manifest's JSON as a compact tree. Reading a manifest is on the path of every
// Device::load, and nlohmann's DOM (a std::map per object, built through the callback parser
// that the duplicate-key check needed) cost ~2 ms for the op library's 48 KB manifest. Here
// PlainJson (below) feeds the tree, or, for any text it does not take, nlohmann's SAX parser:
// the same lexer as before, so the same syntax checks (UTF-8, escapes, numbers, trailing text)
// and the same error texts. The nodes lie in one vector in
// document order (a container's children follow it, each child's subtree `subtree` nodes long)
// and their strings in one character arena, so the whole tree takes a handful of allocations.
// Repeated keys are looked for when an object closes (TreeBuilder::check_keys), in time
// O(k log k) for an object of k keys: unknown keys are legal, so a hostile file may give one
// object a million of them.
struct Node {
  enum class Kind : uint8_t { Null, Boolean, Signed, Unsigned, Float, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  union {
    int64_t signed_value;
    uint64_t unsigned_value;   // what nlohmann calls number_unsigned: a non-negative integer
    double float_value = 0;
  };
  std::string_view text;       // String: the value; points into the arena
  std::string_view key;        // a member of an object: its key; points into the arena
  uint32_t subtree = 1;        // this node and all its descendants
  uint32_t count = 0;          // Array, Object: the number of children

  bool is_number() const { return kind == Kind::Signed || kind == Kind::Unsigned || kind == Kind::Float; }
  size_t size() const { return count; }

  // The children in order: for (const Node& c : node.children()).
  class Children {
   public:
    struct Iterator {
      const Node* at;
      uint32_t left;
      const Node& operator*() const { return *at; }
      Iterator& operator++() {
        at += at->subtree;
        --left;
        return *this;
      }
      bool operator!=(const Iterator& other) const { return left != other.left; }
    };
    Children(const Node* first, uint32_t count) : first_(first), count_(count) {}
    Iterator begin() const { return {first_, count_}; }
    Iterator end() const { return {nullptr, 0}; }

   private:
    const Node* first_;
    uint32_t count_;
  };
  Children children() const { return Children(this + 1, count); }

  const Node* find(std::string_view name) const {
    for (const Node& c : children())
      if (c.key == name) return &c;
    return nullptr;
  }
};

// nlohmann's name for the node's type ("number", "string", ...), as the messages always said.
std::string type_name(const Node& v) {
  switch (v.kind) {
    case Node::Kind::Null: return "null";
    case Node::Kind::Boolean: return "boolean";
    case Node::Kind::Signed: case Node::Kind::Unsigned: case Node::Kind::Float: return "number";
    case Node::Kind::String: return "string";
    case Node::Kind::Array: return "array";
    case Node::Kind::Object: return "object";
  }
  return "?";
}

// The node back as nlohmann JSON: error messages that quote a value print it as json::dump does.
json to_json(const Node& v) {
  switch (v.kind) {
    case Node::Kind::Null: return nullptr;
    case Node::Kind::Boolean: return v.boolean;
    case Node::Kind::Signed: return v.signed_value;
    case Node::Kind::Unsigned: return v.unsigned_value;
    case Node::Kind::Float: return v.float_value;
    case Node::Kind::String: return std::string(v.text);
    case Node::Kind::Array: {
      json a = json::array();
      for (const Node& c : v.children()) a.push_back(to_json(c));
      return a;
    }
    case Node::Kind::Object: {
      json o = json::object();
      for (const Node& c : v.children()) o[std::string(c.key)] = to_json(c);
      return o;
    }
  }
  return nullptr;
}
std::string dump(const Node& v) { return to_json(v).dump(); }

// A parsed document: nodes[0] is the root.
struct Tree {
  std::vector<Node> nodes;
  std::string arena;
};

// The SAX handler that builds a Tree. The arena is reserved at the text's length and never
// reallocates: a string's characters after unescaping are never more than its source text, so
// views into it stay valid. check_shape() has bounded the depth and the number of values.
class TreeBuilder final : public nlohmann::json_sax<json> {
 public:
  TreeBuilder(Tree& tree, size_t text_size) : tree_(tree) { tree_.arena.reserve(text_size); }

  bool null() override { add(Node::Kind::Null); return true; }
  bool boolean(bool v) override { add(Node::Kind::Boolean).boolean = v; return true; }
  bool number_integer(number_integer_t v) override { add(Node::Kind::Signed).signed_value = v; return true; }
  bool number_unsigned(number_unsigned_t v) override { add(Node::Kind::Unsigned).unsigned_value = v; return true; }
  bool number_float(number_float_t v, const string_t&) override { add(Node::Kind::Float).float_value = v; return true; }
  bool string(string_t& v) override { add_string(v); return true; }
  bool binary(binary_t&) override { add(Node::Kind::Null); return true; }   // JSON text has none
  bool start_object(std::size_t) override { return open(Node::Kind::Object); }
  bool key(string_t& k) override { add_key(k); return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Node::Kind::Array); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    syntax_error_ = e.what();   // what json::parse would have thrown
    return false;
  }

  void add_string(std::string_view v) { add(Node::Kind::String).text = store(v); }
  void add_key(std::string_view k) { pending_key_ = store(k); }

  const std::string& syntax_error() const { return syntax_error_; }
  // The node of the earliest key (in document order) that repeats an earlier key of its object;
  // kNoDuplicate when there is none.
  static constexpr size_t kNoDuplicate = static_cast<size_t>(-1);
  size_t duplicate() const { return duplicate_; }

 private:
  std::string_view store(std::string_view s) {
    const size_t at = tree_.arena.size();
    if (tree_.arena.capacity() - at < s.size())   // cannot happen (see above); never dangle
      throw std::length_error("manifest string arena overflow");
    tree_.arena += s;
    return std::string_view(tree_.arena).substr(at, s.size());
  }
  Node& add(Node::Kind kind) {
    if (!stack_.empty()) {
      Node& parent = tree_.nodes[stack_.back()];
      ++parent.count;
    }
    Node& n = tree_.nodes.emplace_back();
    n.kind = kind;
    if (!stack_.empty() && tree_.nodes[stack_.back()].kind == Node::Kind::Object) n.key = pending_key_;
    return n;
  }
  bool open(Node::Kind kind) {
    add(kind);
    stack_.push_back(tree_.nodes.size() - 1);
    return true;
  }
  bool close() {
    const size_t at = stack_.back();
    Node& n = tree_.nodes[at];
    n.subtree = static_cast<uint32_t>(tree_.nodes.size() - at);
    if (n.kind == Node::Kind::Object) check_keys(at);
    stack_.pop_back();
    return true;
  }

  // A key given twice would be read differently by readers that keep the first and those that
  // keep the last occurrence; such a manifest is refused (after the parse: a syntax error later
  // in the text is reported first, as json::parse with a callback did). The keys of the object
  // at `object`, with their node indices, sorted: equal keys become neighbours, and the second
  // of the first two equal ones in index order is the repeat. Sorting (rather than hashing)
  // keeps the worst case O(k log k) whatever keys a file chooses; a few keys are compared
  // pairwise.
  void check_keys(size_t object) {
    const uint32_t count = tree_.nodes[object].count;
    if (count < 2) return;
    keys_.clear();
    for (size_t child = object + 1, i = 0; i < count; ++i, child += tree_.nodes[child].subtree)
      keys_.emplace_back(tree_.nodes[child].key, child);
    constexpr uint32_t kPairwise = 8;
    if (count <= kPairwise) {
      for (size_t j = 1; j < keys_.size(); ++j)
        for (size_t i = 0; i < j; ++i)
          if (keys_[i].first == keys_[j].first) duplicate_ = std::min(duplicate_, keys_[j].second);
      return;
    }
    std::sort(keys_.begin(), keys_.end());
    for (size_t i = 1; i < keys_.size(); ++i)
      if (keys_[i].first == keys_[i - 1].first) duplicate_ = std::min(duplicate_, keys_[i].second);
  }

  Tree& tree_;
  std::vector<size_t> stack_;        // open arrays and objects (node indices)
  std::string_view pending_key_;     // the key of the member whose value comes next
  std::vector<std::pair<std::string_view, size_t>> keys_;   // check_keys' scratch: key, node
  std::string syntax_error_;
  size_t duplicate_ = kNoDuplicate;
};

// The writer's own JSON read without nlohmann's character-by-character lexer (which took half
// of the remaining parse time): structure, literals, strings of printable ASCII without escapes,
// and integers of at most 18 digits. Anything else (an escape, a byte >= 0x80, a control
// character, a fraction or exponent, a longer number, -0, a byte-order mark) and any syntax
// error make it give up (false), and the caller parses the whole text again with nlohmann, which
// accepts or refuses it and names the error. So it accepts only text that nlohmann accepts, and
// hands the builder the same events with the same values.
class PlainJson {
 public:
  PlainJson(std::string_view text, TreeBuilder& out) : p_(text.data()), end_(text.data() + text.size()), out_(out) {}

  bool parse() {
    skip_space();
    if (!value(0)) return false;
    skip_space();
    return p_ == end_;
  }

 private:
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }
  // At the opening quote.
  bool string(std::string_view& out) {
    const char* begin = ++p_;
    for (; p_ != end_; ++p_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(begin, static_cast<size_t>(p_ - begin));
        ++p_;
        return true;
      }
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
    }
    return false;
  }
  bool number() {
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    const char* digits = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    const size_t n = static_cast<size_t>(p_ - digits);
    if (n == 0 || n > 18 || (digits[0] == '0' && n > 1) || (negative && digits[0] == '0')) return false;
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v * 10 + static_cast<uint64_t>(digits[i] - '0');
    if (negative) out_.number_integer(-static_cast<int64_t>(v));
    else out_.number_unsigned(v);
    return true;
  }
  bool value(size_t depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': {
        std::string_view s;
        if (!string(s)) return false;
        out_.add_string(s);
        return true;
      }
      case 't': return literal("true") && out_.boolean(true);
      case 'f': return literal("false") && out_.boolean(false);
      case 'n': return literal("null") && out_.null();
      default: return (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) && number();
    }
  }
  bool object(size_t depth) {
    if (depth > limits::kMaxJsonDepth) return false;
    ++p_;
    out_.start_object(static_cast<std::size_t>(-1));
    skip_space();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return out_.end_object();
    }
    for (;;) {
      skip_space();
      std::string_view key;
      if (p_ == end_ || *p_ != '"' || !string(key)) return false;
      out_.add_key(key);
      skip_space();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_space();
      if (!value(depth)) return false;
      skip_space();
      if (p_ == end_) return false;
      if (*p_ == '}') {
        ++p_;
        return out_.end_object();
      }
      if (*p_++ != ',') return false;
    }
  }
  bool array(size_t depth) {
    if (depth > limits::kMaxJsonDepth) return false;
    ++p_;
    out_.start_array(static_cast<std::size_t>(-1));
    skip_space();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return out_.end_array();
    }
    for (;;) {
      skip_space();
      if (!value(depth)) return false;
      skip_space();
      if (p_ == end_) return false;
      if (*p_ == ']') {
        ++p_;
        return out_.end_array();
      }
      if (*p_++ != ',') return false;
    }
  }

  const char* p_;
  const char* end_;
  TreeBuilder& out_;
};

// Typed accessors: each names the JSON path of the field it could not accept.
class Reader {
 public:
  explicit Reader(std::string_view label) : label_(label) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    format::fail(label_, field, what);
  }

  const Node& member(const Node& obj, const std::string& path, const char* key) const {
    const Node* v = obj.find(key);
    if (!v) fail(path + key, "missing");
    return *v;
  }
  std::string_view string(const Node& obj, const std::string& path, const char* key, size_t max_len,
                            bool allow_empty) const {
    const Node& v = member(obj, path, key);
    if (v.kind != Node::Kind::String) fail(path + key, "expected a string, got " + type_name(v));
    const std::string_view s = v.text;
    if (!allow_empty && s.empty()) fail(path + key, "must not be empty");
    if (s.size() > max_len)
      fail(path + key, "longer than the limit of " + std::to_string(max_len) + " bytes");
    return s;
  }
  uint64_t unsigned_int(const Node& obj, const std::string& path, const char* key, uint64_t max) const {
    const Node& v = member(obj, path, key);
    // nlohmann reports non-negative integer literals as number_unsigned; negatives and
    // fractions arrive as the other number kinds and are refused.
    if (v.kind != Node::Kind::Unsigned)
      fail(path + key, "expected a non-negative integer, got " +
                           (v.is_number() ? std::string("number ") + dump(v) : type_name(v)));
    uint64_t x = v.unsigned_value;
    if (x > max) fail(path + key, std::to_string(x) + " exceeds the limit of " + std::to_string(max));
    return x;
  }
  bool boolean(const Node& obj, const std::string& path, const char* key) const {
    const Node& v = member(obj, path, key);
    if (v.kind != Node::Kind::Boolean) fail(path + key, "expected true or false, got " + type_name(v));
    return v.boolean;
  }
  const Node& array(const Node& obj, const std::string& path, const char* key, size_t max_count) const {
    const Node& v = member(obj, path, key);
    if (v.kind != Node::Kind::Array) fail(path + key, "expected an array, got " + type_name(v));
    if (v.size() > max_count)
      fail(path + key, std::to_string(v.size()) + " entries exceed the limit of " +
                           std::to_string(max_count));
    return v;
  }
  void object(const Node& v, const std::string& path) const {
    if (v.kind != Node::Kind::Object) fail(path, "expected an object, got " + type_name(v));
  }

 private:
  std::string_view label_;
};

// A set of targets, one bit per line of the target table: as wide as the table.
using TargetSet = std::bitset<kTargetCount>;

bool is_symbol(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

// The JSON path of node `target` ("kernels[2].params[0].name"): one descent from the root,
// stepping over whole subtrees, so O(nodes) however wide the objects on the way are.
std::string path_to(const std::vector<Node>& nodes, size_t target) {
  std::string path;
  for (size_t at = 0; at != target;) {
    size_t child = at + 1, index = 0;
    while (child + nodes[child].subtree <= target) {
      child += nodes[child].subtree;
      ++index;
    }
    if (nodes[at].kind == Node::Kind::Object) {
      if (!path.empty()) path += '.';
      path += nodes[child].key;
    } else {
      path += "[" + std::to_string(index) + "]";
    }
    at = child;
  }
  return path;
}

// nlohmann's parser is iterative, but a bounded nesting depth keeps PlainJson's recursion and
// every later walk over the tree shallow, and a bounded number of JSON values bounds the memory the parsed tree takes
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

Param read_param(const Reader& r, const Node& j, const std::string& path) {
  r.object(j, path);
  const std::string p = path + ".";
  Param param;
  param.name = r.string(j, p, "name", limits::kMaxNameBytes, /*allow_empty=*/true);
  const std::string_view type = r.string(j, p, "type", 64, false);
  auto t = scalar_type_from_string(type);
  if (!t) r.fail(p + "type", "unknown scalar type \"" + std::string(type) + "\"");
  param.type = *t;
  param.vec_width = static_cast<uint32_t>(r.unsigned_int(j, p, "vec_width", 1u << 16));
  if (param.vec_width != 1 && param.vec_width != 2 && param.vec_width != 4 && param.vec_width != 8)
    r.fail(p + "vec_width", "must be 1, 2, 4 or 8 (got " + std::to_string(param.vec_width) + ")");
  param.is_buffer = r.boolean(j, p, "buffer");
  const std::string_view access = r.string(j, p, "access", 64, false);
  if (access == "read") param.access = Access::Read;
  else if (access == "read_write") param.access = Access::ReadWrite;
  else r.fail(p + "access", "unknown access \"" + std::string(access) + "\" (expected read or read_write)");
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
  return static_cast<size_t>(t) < kTargetCount ? info(t).name : "?";
}

std::optional<Target> target_from_string(std::string_view s) {
  for (const TargetInfo& t : targets())
    if (t.name == s) return t.target;
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
  for (const Image& im : m.images) {
    json image = {{"target", to_string(im.target)},
                  {"arch", im.arch},
                  {"offset", im.offset},
                  {"size", im.size},
                  {"raw_size", im.raw_size},
                  {"checksum", checksum_hex(im.checksum)},
                  {"kernels", im.kernels}};
    if (!im.requirements.empty()) image["requires"] = im.requirements;   // absent: portable
    if (im.programmatic_launch) image["programmatic_launch"] = true;    // absent: false
    images.push_back(std::move(image));
  }
  json doc = {{"compiler_version", m.compiler_version},
              {"source_hash", m.source_hash},
              {"kernels", std::move(kernels)},
              {"images", std::move(images)}};
  // Strict UTF-8: a writer with invalid strings gets an exception rather than a bad file.
  return doc.dump(indent);
}

std::string describe_images(const Manifest& manifest) {
  if (manifest.images.empty()) return "no images";
  std::string out;
  for (const Image& image : manifest.images) {
    if (!out.empty()) out += ", ";
    out += std::string(to_string(image.target)) + " " + image.arch;
  }
  return out;
}

Manifest manifest_from_json(std::string_view text, std::string_view label, bool skip_unknown_targets) {
  check_shape(text, label);
  Tree tree;
  bool parsed = false;
  std::string syntax_error;
  size_t duplicate = TreeBuilder::kNoDuplicate;
  for (const bool plain : {true, false}) {   // the fast reader, then nlohmann when it gives up
    tree = Tree{};
    tree.nodes.reserve(text.size() / 8 + 16);   // the op library's manifest: a node per ~9 bytes
    TreeBuilder builder(tree, text.size());
    parsed = plain ? PlainJson(text, builder).parse()
                   : json::sax_parse(text.data(), text.data() + text.size(), &builder);
    syntax_error = builder.syntax_error();
    duplicate = builder.duplicate();
    if (parsed) break;
  }
  if (!parsed || tree.nodes.empty())
    fail(label, "(document)", "not valid JSON: " + (syntax_error.empty() ? std::string("no value") : syntax_error));
  if (duplicate != TreeBuilder::kNoDuplicate)
    fail(label, path_to(tree.nodes, duplicate), "the key appears twice in one object");
  const Node& doc = tree.nodes.front();
  Reader r(label);
  r.object(doc, "(document)");
  Manifest m;
  m.compiler_version = r.string(doc, "", "compiler_version", limits::kMaxNameBytes, true);
  m.source_hash = r.string(doc, "", "source_hash", limits::kMaxNameBytes, true);

  const Node& kernels = r.array(doc, "", "kernels", limits::kMaxKernels);
  std::unordered_set<std::string_view> names, symbols;   // views of strings in `nodes`
  names.reserve(kernels.size());
  symbols.reserve(kernels.size());
  size_t i = 0;
  for (const Node& kj : kernels.children()) {
    const std::string path = "kernels[" + std::to_string(i++) + "]";
    const std::string p = path + ".";
    r.object(kj, path);
    Kernel k;
    k.name = r.string(kj, p, "name", limits::kMaxNameBytes, false);
    if (!names.insert(kj.find("name")->text).second) r.fail(p + "name", "duplicate kernel name \"" + k.name + "\"");
    k.symbol = r.string(kj, p, "symbol", limits::kMaxSymbolBytes, false);
    if (!is_symbol(k.symbol))
      r.fail(p + "symbol", "\"" + k.symbol + "\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    if (!symbols.insert(kj.find("symbol")->text).second)
      r.fail(p + "symbol", "duplicate kernel symbol \"" + k.symbol + "\"");
    const Node& params = r.array(kj, p, "params", limits::kMaxParams);
    k.params.reserve(params.size());
    size_t a = 0;
    for (const Node& param : params.children())
      k.params.push_back(read_param(r, param, p + "params[" + std::to_string(a++) + "]"));
    const Node& block = r.array(kj, p, "block", 3);
    if (block.size() != 3) r.fail(p + "block", "expected 3 dimensions, got " + std::to_string(block.size()));
    uint64_t threads = 1;
    size_t d = 0;
    for (const Node& v : block.children()) {
      auto field = [&] { return p + "block[" + std::to_string(d) + "]"; };
      if (v.kind != Node::Kind::Unsigned) r.fail(field(), "expected a positive integer, got " + dump(v));
      uint64_t x = v.unsigned_value;
      if (x == 0 || x > limits::kMaxBlockThreads)
        r.fail(field(), "must be between 1 and " + std::to_string(limits::kMaxBlockThreads) +
                          " (got " + std::to_string(x) + ")");
      k.block[d++] = static_cast<uint32_t>(x);
      threads *= x;
    }
    if (threads > limits::kMaxBlockThreads)
      r.fail(p + "block", "block of " + std::to_string(threads) + " threads exceeds the limit of " +
                              std::to_string(limits::kMaxBlockThreads));
    k.shared_bytes = static_cast<uint32_t>(r.unsigned_int(kj, p, "shared_bytes", limits::kMaxSharedBytes));
    const Node& targets = r.array(kj, p, "targets", limits::kMaxTargetsPerKernel);
    size_t t = 0;
    for (const Node& entry : targets.children()) {
      const size_t index = t++;
      auto field = [&] { return p + "targets[" + std::to_string(index) + "]"; };
      if (entry.kind != Node::Kind::String) r.fail(field(), "expected a string, got " + type_name(entry));
      const std::string_view s = entry.text;
      auto target = target_from_string(s);
      if (!target) {
        if (skip_unknown_targets) continue;
        r.fail(field(), "unknown target \"" + std::string(s) + "\"");
      }
      if (std::find(k.targets.begin(), k.targets.end(), *target) != k.targets.end())
        r.fail(field(), "target \"" + std::string(s) + "\" listed twice");
      k.targets.push_back(*target);
    }
    k.uses_barrier = r.boolean(kj, p, "uses_barrier");
    m.kernels.push_back(std::move(k));
  }

  // Kernel symbol -> index into m.kernels, for the images' kernel lists.
  std::unordered_map<std::string_view, size_t> kernel_by_symbol;
  kernel_by_symbol.reserve(m.kernels.size());
  for (size_t k = 0; k < m.kernels.size(); ++k) kernel_by_symbol.emplace(m.kernels[k].symbol, k);

  // Per kernel, the targets whose images list it.
  std::vector<TargetSet> covered(m.kernels.size());
  // Per kernel, the (target, arch) pairs whose images list it: one image each at most (several
  // images may share a target and arch, e.g. the SPIR-V target's one image per kernel, but then
  // hold different kernels). Hashed, so a file of many images costs time linear in its size.
  std::vector<std::unordered_set<std::string>> arch_of_kernel(m.kernels.size());

  const Node& images = r.array(doc, "", "images", limits::kMaxImages);
  i = 0;
  for (const Node& ij : images.children()) {
    const std::string path = "images[" + std::to_string(i++) + "]";
    const std::string p = path + ".";
    r.object(ij, path);
    Image im;
    const std::string target(r.string(ij, p, "target", 64, false));
    auto t = target_from_string(target);
    if (!t) {
      if (skip_unknown_targets) continue;  // a newer minor's target this reader cannot use
      r.fail(p + "target", "unknown target \"" + target + "\"");
    }
    im.target = *t;
    im.arch = r.string(ij, p, "arch", limits::kMaxArchBytes, false);
    if (!is_printable_ascii(im.arch)) r.fail(p + "arch", "must be printable ASCII without spaces");
    im.offset = r.unsigned_int(ij, p, "offset", std::numeric_limits<uint64_t>::max());
    im.size = r.unsigned_int(ij, p, "size", std::numeric_limits<uint64_t>::max());
    im.raw_size = r.unsigned_int(ij, p, "raw_size", limits::kMaxImageRawBytes);
    if (im.raw_size == 0) r.fail(p + "raw_size", "an image cannot be empty");
    const std::string checksum(r.string(ij, p, "checksum", 16, false));
    if (checksum.size() != 16 || !std::all_of(checksum.begin(), checksum.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        }))
      r.fail(p + "checksum", "expected 16 lowercase hex digits, got \"" + checksum + "\"");
    im.checksum = std::stoull(checksum, nullptr, 16);
    const Node& syms = r.array(ij, p, "kernels", limits::kMaxKernels);
    std::unordered_set<std::string_view> listed;   // this image's symbols so far
    listed.reserve(syms.size());
    im.kernels.reserve(syms.size());
    size_t s = 0;
    for (const Node& entry : syms.children()) {
      const size_t index = s++;
      auto field = [&] { return p + "kernels[" + std::to_string(index) + "]"; };
      if (entry.kind != Node::Kind::String) r.fail(field(), "expected a string, got " + type_name(entry));
      const std::string_view sym = entry.text;
      auto found = kernel_by_symbol.find(sym);
      if (found == kernel_by_symbol.end()) r.fail(field(), "no kernel has the symbol \"" + std::string(sym) + "\"");
      const Kernel& kernel = m.kernels[found->second];
      if (std::find(kernel.targets.begin(), kernel.targets.end(), im.target) == kernel.targets.end())
        r.fail(field(), "kernel \"" + kernel.name + "\" does not list target " + target);
      if (!listed.insert(sym).second) r.fail(field(), "symbol \"" + std::string(sym) + "\" listed twice");
      if (!arch_of_kernel[found->second].insert(target + " " + im.arch).second)
        r.fail(field(), "kernel \"" + kernel.name + "\" is in a second image for " + target + " " + im.arch);
      im.kernels.emplace_back(sym);
      covered[found->second].set(static_cast<size_t>(im.target));
    }
    if (ij.find("requires")) {
      const Node& list = r.array(ij, p, "requires", limits::kMaxRequirements);
      size_t q = 0;
      for (const Node& entry : list.children()) {
        const std::string field = p + "requires[" + std::to_string(q++) + "]";
        if (entry.kind != Node::Kind::String) r.fail(field, "expected a string, got " + type_name(entry));
        if (entry.text.empty() || entry.text.size() > limits::kMaxRequirementBytes)
          r.fail(field, "must be 1 to " + std::to_string(limits::kMaxRequirementBytes) + " bytes");
        if (!is_printable_ascii(entry.text)) r.fail(field, "must be printable ASCII without spaces");
        im.requirements.emplace_back(entry.text);
      }
    }
    if (ij.find("programmatic_launch")) im.programmatic_launch = r.boolean(ij, p, "programmatic_launch");
    m.images.push_back(std::move(im));
  }

  // Every target a kernel claims must be backed by an image that contains it.
  for (i = 0; i < m.kernels.size(); ++i) {
    const Kernel& k = m.kernels[i];
    for (size_t t = 0; t < k.targets.size(); ++t) {
      if (!covered[i].test(static_cast<size_t>(k.targets[t])))
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
