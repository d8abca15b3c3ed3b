// generate_header / generate_embed_source on input they must refuse, and the parts of their
// output that compiling it cannot show (what is left without a wrapper, and why).
#include <gtest/gtest.h>

#include <string>

#include "pack/header.h"
#include "test_manifests.h"

namespace {

using quiver::compiler::generate_embed_source;
using quiver::compiler::generate_header;
using quiver::compiler::HeaderError;
using S = quiver::format::ScalarType;

// Runs `f`, expecting a HeaderError whose message contains every one of `parts`.
template <typename F>
void expect_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << *parts.begin();
  } catch (const HeaderError& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

quiver::format::Manifest one_kernel(quiver::format::Kernel k) {
  quiver::format::Manifest m;
  m.kernels.push_back(std::move(k));
  return m;
}

TEST(GenerateHeader, RejectsBadNamespaces) {
  for (const char* ns : {"", "1ops", "my-ops", "ops::", "::ops", "a::::b", "class", "a::new", "__x", "_Ops"}) {
    SCOPED_TRACE(ns);
    expect_error([&] { generate_header(quiver::test::signature_manifest(), ns); }, {"namespace"});
    expect_error([&] { generate_embed_source({}, ns); }, {"namespace"});
  }
}

TEST(GenerateHeader, AcceptsNestedNamespace) {
  std::string h = generate_header(quiver::test::signature_manifest(), "app::ops_v2");
  EXPECT_NE(h.find("namespace app::ops_v2 {"), std::string::npos);
  EXPECT_NE(h.find("::app::ops_v2::load(device)"), std::string::npos);
}

TEST(GenerateHeader, KernelClashingWithGeneratedFunction) {
  for (const char* name : {"load", "fatbin"}) {
    expect_error([&] { generate_header(one_kernel(quiver::test::kernel(name, "qv_k0", {})), "ops"); },
                 {"kernel '" + std::string(name) + "'", "ops::" + std::string(name)});
  }
}

TEST(GenerateHeader, KernelNameNotAnIdentifier) {
  expect_error([] { generate_header(one_kernel(quiver::test::kernel("ns::saxpy", "qv_k0", {})), "ops"); },
               {"kernel 'ns::saxpy'", "identifier"});
}

TEST(GenerateHeader, DuplicateKernel) {
  quiver::format::Manifest m = one_kernel(quiver::test::kernel("saxpy", "qv_k0", {}));
  m.kernels.push_back(quiver::test::kernel("saxpy", "qv_k1", {}));
  expect_error([&] { generate_header(m, "ops"); }, {"kernel 'saxpy'", "twice"});
}

TEST(GenerateHeader, VectorScalarParameter) {
  quiver::format::Param p = quiver::test::scalar("v", S::F32);
  p.vec_width = 4;
  expect_error([&] { generate_header(one_kernel(quiver::test::kernel("k", "qv_k0", {p})), "ops"); },
               {"kernel 'k'", "parameter 0", "'v'", "scalar"});
}

TEST(GenerateHeader, BadVectorWidth) {
  quiver::format::Param p = quiver::test::buf("v", S::F32, true, 3);
  expect_error([&] { generate_header(one_kernel(quiver::test::kernel("k", "qv_k0", {p})), "ops"); },
               {"kernel 'k'", "parameter 0", "vector width 3"});
}

TEST(GenerateHeader, UnknownScalarType) {
  quiver::format::Param p = quiver::test::scalar("v", static_cast<S>(200));
  expect_error([&] { generate_header(one_kernel(quiver::test::kernel("k", "qv_k0", {p})), "ops"); },
               {"kernel 'k'", "parameter 0", "element type 200"});
}

TEST(GenerateHeader, TemplatesListedWithoutWrapper) {
  std::string h = generate_header(quiver::test::signature_manifest(), "ops");
  EXPECT_NE(h.find("//   scale_rows<float, 4096>\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("void scale_rows"), std::string::npos);
  EXPECT_NE(h.find("inline void saxpy("), std::string::npos);
}

// A newline in a kernel or parameter name must not end the comment it is printed in.
TEST(GenerateHeader, ControlCharactersStayInComments) {
  quiver::format::Manifest m = one_kernel(quiver::test::kernel("t<1>\nint oops;", "qv_k0", {}));
  m.compiler_version = "v\nint oops2;";
  std::string h = generate_header(m, "ops");
  EXPECT_EQ(h.find("\nint oops"), std::string::npos) << h;
}

TEST(GenerateEmbed, EscapesAreUnambiguous) {
  // A non-printable byte followed by digits, quotes, backslashes and "??=" (a trigraph in C++14).
  const char raw[] = "\x01" "7" "\"" "\\" "?" "?=" "\x7f" "0";
  std::vector<std::byte> bytes;
  for (size_t i = 0; i + 1 < sizeof(raw); ++i) bytes.push_back(static_cast<std::byte>(raw[i]));
  std::string s = generate_embed_source(bytes, "ops");
  // Everything but plain printable ASCII is a full 3-digit octal escape.
  EXPECT_NE(s.find(R"("\0017\042\134\077\077=\1770")"), std::string::npos) << s;
  EXPECT_NE(s.find("kFatbinSize = " + std::to_string(bytes.size()) + ";"), std::string::npos);
}

}  // namespace
