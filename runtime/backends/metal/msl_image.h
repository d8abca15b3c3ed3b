// The MSL image of a fat binary (docs/abi.md "MSL / metallib"): written by quiverc's msl target,
// read by the Metal backend. Plain C++ with no Apple dependency, so the compiler links it too and
// the tests run it on any machine.
//
// The image is UTF-8 text: a first line naming the format and the MSL version, then one complete
// Metal translation unit per kernel, each introduced by a line
//   //@qv-kernel <symbol> function=<MSL function name> buffers=<n0>,<n1>,...
// where n_i is the [[buffer(n_i)]] index of manifest parameter i (buffer or scalar alike). The
// units are separate because SPIRV-Cross translates one entry point at a time and its helper
// declarations would collide in one file; every line is a comment, so each unit is valid MSL.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace quiver::msl_image {

inline constexpr std::string_view kMagicLine = "// quiver MSL image v1";
inline constexpr std::string_view kKernelMarker = "//@qv-kernel ";

struct KernelSource {
  std::string symbol;                   // the manifest symbol of the kernel
  std::string function;                 // the `kernel void` function's name in `source`
  std::vector<uint32_t> buffer_index;   // [[buffer(n)]] of each parameter, in manifest order
  std::string source;                   // one complete MSL translation unit
};

struct Image {
  uint32_t msl_major = 0;               // the MSL language version the sources need
  uint32_t msl_minor = 0;
  std::vector<KernelSource> kernels;
};

// The image text. Symbols and function names must be identifiers ([A-Za-z_][A-Za-z0-9_]*).
std::string write(const Image& image);

// Parses `text`; false with `error` saying what is malformed (and where) otherwise.
bool parse(std::string_view text, Image& image, std::string& error);

}  // namespace quiver::msl_image
