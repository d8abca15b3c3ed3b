// Generates the user-facing C++ for a fat binary: a header of typed launch wrappers and a .cpp
// that embeds the .qfb bytes. Every name in the generated code is fully qualified (::quiver::,
// ::std::, ::<ns>::) so that neither a kernel parameter nor a user namespace called `quiver`,
// `std` or `load` can change what it refers to.
#include "pack/header.h"

#include <array>
#include <set>
#include <string>
#include <vector>

namespace quiver::compiler {
namespace {

// C++20 keywords and alternative tokens: none of them can name a namespace, function or parameter.
constexpr std::string_view kKeywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};

bool is_keyword(std::string_view s) {
  for (std::string_view k : kKeywords)
    if (k == s) return true;
  return false;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !digit(c)) return false;
  // Names with a double underscore or _Capital are reserved for the implementation.
  if (s.find("__") != std::string_view::npos) return false;
  if (s.size() > 1 && s[0] == '_' && s[1] >= 'A' && s[1] <= 'Z') return false;
  return !is_keyword(s);
}

// "app::ops" -> {"app", "ops"}; throws when any part is not a usable identifier.
std::vector<std::string_view> split_namespace(std::string_view ns) {
  std::vector<std::string_view> parts;
  std::string_view rest = ns;
  while (true) {
    size_t sep = rest.find("::");
    std::string_view part = rest.substr(0, sep);
    if (!is_identifier(part))
      throw HeaderError("namespace '" + std::string(ns) + "': '" + std::string(part) +
                        "' is not a valid C++ identifier (letters, digits and '_', not a keyword)");
    parts.push_back(part);
    if (sep == std::string_view::npos) break;
    rest = rest.substr(sep + 2);
  }
  return parts;
}

// Text safe inside a // comment: control characters would end the comment or hide code.
std::string comment_text(std::string_view s) {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return out;
}

std::string_view host_type(format::ScalarType t) {
  using format::ScalarType;
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I8: return "::std::int8_t";
    case ScalarType::U8: return "::std::uint8_t";
    case ScalarType::I16: return "::std::int16_t";
    case ScalarType::U16: return "::std::uint16_t";
    case ScalarType::I32: return "::std::int32_t";
    case ScalarType::U32: return "::std::uint32_t";
    case ScalarType::I64: return "::std::int64_t";
    case ScalarType::U64: return "::std::uint64_t";
    case ScalarType::F16: return "::quiver::half";
    case ScalarType::BF16: return "::quiver::bf16";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
  }
  return {};
}

// The kernel-language spelling of a parameter, for the wrapper's documentation comment.
std::string kernel_spelling(const format::Param& p) {
  std::string elem(format::to_string(p.type));
  if (p.type == format::ScalarType::F16 || p.type == format::ScalarType::BF16) elem = "qv::" + elem;
  if (p.vec_width != 1) elem = "qv::vec<" + elem + ", " + std::to_string(p.vec_width) + ">";
  if (!p.is_buffer) return elem;
  return (p.access == format::Access::Read ? "const " : "") + elem + "*";
}

constexpr std::string_view kDeviceParam = "device";
constexpr std::string_view kGridParam = "grid";

struct WrapperParam {
  std::string decl;   // "const ::quiver::Buffer<float>& x"
  std::string name;   // "x"
};

std::vector<WrapperParam> wrapper_params(const format::Kernel& k, std::string_view ns) {
  std::vector<WrapperParam> out;
  std::set<std::string> used{std::string(kDeviceParam), std::string(kGridParam)};
  for (size_t i = 0; i < k.params.size(); ++i) {
    const format::Param& p = k.params[i];
    std::string where = "namespace '" + std::string(ns) + "': kernel '" + k.name + "' parameter " +
                        std::to_string(i) + " ('" + comment_text(p.name) + "')";
    if (p.vec_width != 1 && p.vec_width != 2 && p.vec_width != 4 && p.vec_width != 8)
      throw HeaderError(where + ": vector width " + std::to_string(p.vec_width) +
                        " is not one of 1, 2, 4, 8");
    if (!p.is_buffer && p.vec_width != 1)
      throw HeaderError(where + ": a scalar parameter cannot be a qv::vec (vectors are passed "
                        "through buffers)");
    std::string_view type = host_type(p.type);
    if (type.empty())
      throw HeaderError(where + ": unknown element type " +
                        std::to_string(static_cast<int>(p.type)));
    // Keep the kernel's own parameter names (IDEs show them); rename only those that would not
    // compile or would collide with the wrapper's device/grid parameters.
    std::string name = p.name;
    if (!is_identifier(name) || used.count(name)) name = "arg" + std::to_string(i);
    while (used.count(name)) name += "_";
    used.insert(name);

    std::string decl;
    if (p.is_buffer)
      decl = std::string(p.access == format::Access::Read ? "const " : "") + "::quiver::Buffer<" +
             std::string(type) + ">& " + name;
    else
      decl = std::string(type) + " " + name;
    out.push_back({std::move(decl), std::move(name)});
  }
  return out;
}

void emit_wrapper(std::string& h, const format::Kernel& k, std::string_view ns) {
  std::vector<WrapperParam> params = wrapper_params(k, ns);
  h += "\n// " + k.name + ": block (" + std::to_string(k.block[0]) + ", " +
       std::to_string(k.block[1]) + ", " + std::to_string(k.block[2]) + ")";
  if (k.shared_bytes) h += ", " + std::to_string(k.shared_bytes) + " shared bytes";
  if (!k.targets.empty()) {
    h += ", targets";
    for (format::Target t : k.targets) h += " " + std::string(format::to_string(t));
  }
  h += "\n";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const format::Param& p = k.params[i];
    h += "//   " + params[i].name;
    if (params[i].name != p.name) h += " (kernel parameter '" + comment_text(p.name) + "')";
    h += ": " + comment_text(kernel_spelling(p));
    if (p.is_buffer && p.vec_width != 1)
      h += " (a Buffer<" + std::string(format::to_string(p.type)) + "> with " +
           std::to_string(p.vec_width) + " values per element)";
    h += "\n";
  }
  h += "inline void " + k.name + "(const ::quiver::Device& " + std::string(kDeviceParam) +
       ", ::quiver::Grid " + std::string(kGridParam);
  for (const WrapperParam& p : params) h += ",\n    " + p.decl;
  h += ") {\n  ::" + std::string(ns) + "::load(" + std::string(kDeviceParam) + ").kernel(\"" +
       k.name + "\").launch(" + std::string(kGridParam);
  for (const WrapperParam& p : params) h += ", " + p.name;
  h += ");\n}\n";
}

}  // namespace

std::string generate_header(const format::Manifest& manifest, std::string_view ns) {
  split_namespace(ns);  // validates
  std::string nss(ns);

  std::vector<const format::Kernel*> wrapped, unwrapped;
  std::set<std::string> wrapper_names;
  for (const format::Kernel& k : manifest.kernels) {
    if (k.name.find('<') != std::string::npos) {
      unwrapped.push_back(&k);
      continue;
    }
    if (!is_identifier(k.name))
      throw HeaderError("namespace '" + nss + "': kernel '" + comment_text(k.name) +
                        "' is not a valid C++ identifier, so it cannot have a wrapper function");
    if (k.name == "load" || k.name == "fatbin")
      throw HeaderError("namespace '" + nss + "': kernel '" + k.name + "' clashes with the "
                        "generated " + nss + "::" + k.name + "(); rename the kernel");
    if (!wrapper_names.insert(k.name).second)
      throw HeaderError("namespace '" + nss + "': kernel '" + k.name + "' appears twice in the "
                        "manifest");
    wrapped.push_back(&k);
  }

  std::string h;
  h += "// Generated by quiverc from a fat binary; do not edit.\n";
  if (!manifest.compiler_version.empty())
    h += "// Compiler: " + comment_text(manifest.compiler_version) + "\n";
  if (!manifest.source_hash.empty())
    h += "// Source hash: " + comment_text(manifest.source_hash) + "\n";
  h += "//\n"
       "// " + nss + "::fatbin() is the embedded .qfb; " + nss + "::load(device) loads it once per\n"
       "// device; each non-template kernel has a typed wrapper that launches it (asynchronously:\n"
       "// call device.synchronize() before reading results).\n";
  if (!unwrapped.empty()) {
    h += "// Template instantiations, launched with " + nss + "::load(device).kernel(\"name\"):\n";
    for (const format::Kernel* k : unwrapped) h += "//   " + comment_text(k->name) + "\n";
  }
  h += "#pragma once\n\n"
       "#include <cstddef>\n"
       "#include <cstdint>\n"
       "#include <span>\n\n"
       "#include <quiver/runtime.h>\n\n"
       "namespace " + nss + " {\n\n"
       "// The fat binary's bytes (defined in the generated _embed.cpp).\n"
       "::std::span<const ::std::byte> fatbin();\n\n"
       "// The embedded fat binary loaded on `device`. The first call per device loads it; later\n"
       "// calls return a Module sharing it. What is loaded belongs to the device and is released\n"
       "// with it. Thread-safe.\n"
       "inline ::quiver::Module load(const ::quiver::Device& device) {\n"
       "  return ::quiver::detail::load_cached(device, ::" + nss + "::fatbin(), \"" + nss + "::fatbin()\");\n"
       "}\n";
  for (const format::Kernel* k : wrapped) emit_wrapper(h, *k, nss);
  h += "\n}  // namespace " + nss + "\n";
  return h;
}

std::string generate_embed_source(std::span<const std::byte> fatbin, std::string_view ns) {
  split_namespace(ns);  // validates
  std::string nss(ns);

  // Printable ASCII stays as is; everything else is a 3-digit octal escape, which (unlike \x)
  // cannot swallow a following digit. '?' is escaped so no "??x" can read as a trigraph.
  std::array<std::string, 256> spelling;
  for (int c = 0; c < 256; ++c) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') {
      spelling[c] = std::string(1, static_cast<char>(c));
    } else {
      spelling[c] = {'\\', static_cast<char>('0' + ((c >> 6) & 7)),
                     static_cast<char>('0' + ((c >> 3) & 7)), static_cast<char>('0' + (c & 7))};
    }
  }

  std::string size = std::to_string(fatbin.size());
  std::string s;
  s.reserve(fatbin.size() * 3 + 1024);
  s += "// Generated by quiverc: the bytes of the fat binary behind " + nss + "::fatbin().\n"
       "// Do not edit. String literals compile far faster than brace-enclosed byte lists.\n"
       "#include <cstddef>\n"
       "#include <span>\n\n"
       "// One literal longer than the 65536 characters ISO C++ guarantees; GCC and Clang take any size.\n"
       "#if defined(__clang__)\n"
       "#pragma clang diagnostic ignored \"-Woverlength-strings\"\n"
       "#elif defined(__GNUC__)\n"
       "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
       "#endif\n\n"
       "namespace {\n"
       "constexpr ::std::size_t kFatbinSize = " + size + ";\n"
       "// The array size is explicit, so a literal longer than the data fails to compile.\n"
       "alignas(16) const char kFatbinBytes[kFatbinSize + 1] =\n";
  constexpr size_t kLineChars = 120;
  std::string line = "\"";
  for (std::byte b : fatbin) {
    line += spelling[static_cast<unsigned char>(b)];
    if (line.size() >= kLineChars) {
      s += line;
      s += "\"\n";
      line = "\"";
    }
  }
  if (line.size() > 1 || fatbin.empty()) s += line + "\"\n";
  s += ";\n}  // namespace\n\n"
       "namespace " + nss + " {\n"
       "::std::span<const ::std::byte> fatbin() {\n"
       "  return {reinterpret_cast<const ::std::byte*>(kFatbinBytes), kFatbinSize};\n"
       "}\n"
       "}  // namespace " + nss + "\n";
  return s;
}

}  // namespace quiver::compiler
