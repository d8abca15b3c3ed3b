// C++ sources generated from a fat binary for its users: the header that `quiverc --emit-header`
// / quiver_add_fatbin() produce (typed launch wrappers), and the .cpp that embeds the .qfb bytes
// (`quiverc --emit-embed`). Both are plain functions of the manifest / bytes so they can be
// unit-tested by compiling their output (tests/package/).
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "format/manifest.h"

namespace quiver::compiler {

// Input the generators cannot turn into valid C++ (a bad namespace, a kernel whose name clashes
// with a generated function, a parameter type a host wrapper cannot take). The message names
// the namespace, kernel and parameter at fault.
class HeaderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The header for namespace `ns` (a C++ namespace, possibly nested: "app::ops"):
//   std::span<const std::byte> ns::fatbin();          defined by generate_embed_source()
//   quiver::Module ns::load(const quiver::Device&);   the embedded .qfb, loaded once per Device
//   void ns::<kernel>(const quiver::Device&, quiver::Grid, <typed params>);   per non-template kernel
// Buffers become `const quiver::Buffer<T>&` (read-only) or `quiver::Buffer<T>&`; a buffer of
// qv::vec<T, N> is a Buffer<T> holding N scalars per element. Template instantiations
// ("scale_rows<float, 4096>") have no wrapper: use ns::load(dev).kernel("scale_rows<float, 4096>").
std::string generate_header(const format::Manifest& manifest, std::string_view ns);

// A .cpp defining `std::span<const std::byte> ns::fatbin()` over `fatbin`, as string literals
// (compiles in well under a second per MB, unlike a brace list of integers).
std::string generate_embed_source(std::span<const std::byte> fatbin, std::string_view ns);

}  // namespace quiver::compiler
