// Reads the entry points of a SPIR-V module (name, execution model, LocalSize) before the
// module reaches the driver: a file whose image lacks a kernel's entry point, or whose LocalSize
// disagrees with the manifest's block, is rejected with an error instead of undefined behaviour
// inside vkCreateComputePipelines. Bounded parsing: never reads past the words it is given.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace quiver::backend::vulkan {

struct SpirvEntryPoint {
  std::string name;
  uint32_t execution_model = 0;   // 5 = GLCompute
  uint32_t id = 0;
  // The effective workgroup size: a BuiltIn WorkgroupSize constant if the module has one, else
  // OpExecutionMode LocalSize; nullopt when neither is a literal (specialization constants).
  std::optional<std::array<uint32_t, 3>> local_size;
};

struct SpirvInfo {
  uint32_t version = 0;   // 0x00010500 = SPIR-V 1.5
  std::vector<SpirvEntryPoint> entry_points;
  // The SpecId of every specialization constant, ascending, once each: quiver's SPIR-V target
  // makes one per QV_SPECIALIZE parameter, SpecId = the parameter's index (docs/abi.md).
  std::vector<uint32_t> spec_ids;
  const SpirvEntryPoint* find(const std::string& name) const;
};

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr uint32_t kExecutionModelGLCompute = 5;

// Throws std::invalid_argument describing the first malformation (the caller adds file and
// image), including a module with several BuiltIn WorkgroupSize objects (ambiguous sizes).
SpirvInfo inspect_spirv(std::span<const uint32_t> words);

}  // namespace quiver::backend::vulkan
