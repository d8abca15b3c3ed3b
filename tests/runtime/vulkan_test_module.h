// The Vulkan runtime tests' module: the four GLSL kernels of vulkan_*.comp (vulkan_test_spirv.h)
// with their manifest, packed into a .qfb in memory with format::write_fatbin.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/fatbin.h"
#include "test_manifest_parts.h"
#include "vulkan_test_spirv.h"

namespace quiver::test::vk {

using quiver::format::Access;
using quiver::format::ScalarType;
using quiver::format::Target;

inline std::vector<std::byte> spirv_module() { return quiver::test::to_bytes(quiver::test::kernel_spirv_words()); }

// The manifest for the four shaders; `block_override` replaces saxpy's block (to build a file
// that disagrees with the SPIR-V's LocalSize).
inline quiver::format::Manifest test_manifest(std::array<uint32_t, 3> saxpy_block = {256, 1, 1}) {
  quiver::format::Manifest m;
  m.compiler_version = "hand-written GLSL (glslangValidator)";
  m.source_hash = "0123456789abcdef";
  auto add = [&](std::string name, std::string symbol, std::vector<quiver::format::Param> params,
                 std::array<uint32_t, 3> block, uint32_t shared, bool barrier) {
    m.kernels.push_back(kernel_entry(std::move(name), std::move(symbol), std::move(params), block, shared, barrier,
                                     {Target::SPIRV}));
  };
  add("saxpy", "qv_k0_saxpy",
      {buffer_param("x", ScalarType::F32, Access::Read), buffer_param("y", ScalarType::F32, Access::ReadWrite),
       scalar_param("a", ScalarType::F32), scalar_param("n", ScalarType::U32)},
      saxpy_block, 0, false);
  add("block_sum", "qv_k1_block_sum",
      {buffer_param("in", ScalarType::F32, Access::Read), buffer_param("partial", ScalarType::F32, Access::ReadWrite),
       scalar_param("n", ScalarType::U32)},
      {256, 1, 1}, 256 * 4, true);
  add("int_mix", "qv_k2_int_mix",
      {buffer_param("in", ScalarType::I32, Access::Read), buffer_param("out", ScalarType::I32, Access::ReadWrite),
       scalar_param("mul", ScalarType::I32), scalar_param("bias", ScalarType::I32),
       scalar_param("mask", ScalarType::U32),
       scalar_param("n", ScalarType::U32)},
      {64, 1, 1}, 0, false);
  add("grid2d", "qv_k3_grid2d",
      {buffer_param("out", ScalarType::F32, Access::ReadWrite), scalar_param("width", ScalarType::U32),
       scalar_param("height", ScalarType::U32), scalar_param("scale", ScalarType::F32)},
      {16, 8, 1}, 0, false);
  return m;
}

inline const std::vector<std::string> kAllSymbols = {"qv_k0_saxpy", "qv_k1_block_sum", "qv_k2_int_mix",
                                                     "qv_k3_grid2d"};

inline std::vector<std::byte> make_fatbin(quiver::format::Manifest m, std::vector<std::byte> spirv,
                                   std::vector<std::string> symbols = kAllSymbols) {
  std::vector<quiver::format::ImageInput> images;
  images.push_back({Target::SPIRV, "vulkan1.2", std::move(spirv), std::move(symbols)});
  return quiver::format::write_fatbin(std::move(m), images, 3);
}

}  // namespace quiver::test::vk
