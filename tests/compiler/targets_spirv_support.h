// Helpers for the spirv target's tests: compile hand-written neutral IR with the target, and read
// back what a Vulkan loader would see in the module (entry points, LocalSize, descriptor
// bindings) by parsing the SPIR-V words directly, independently of MLIR.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "targets/target.h"
#include "targets_spirv_kernels.h"

namespace quiver::test {

struct CompiledSpirv {
  compiler::TargetImage image;
  std::vector<uint32_t> words;
};

// Parses `module_text` (a whole `module { ... }`) and runs the spirv target on it; TargetError
// propagates, an IR parse error throws std::runtime_error. Every image the target returns.
std::vector<CompiledSpirv> compile_spirv_images(const std::string& module_text,
                                                const std::vector<format::Kernel>& kernels,
                                                const compiler::TargetOptions& options = {});
// The same, for a build that must give exactly one image (one kernel, one arch).
CompiledSpirv compile_spirv_ir(const std::string& module_text,
                               const std::vector<format::Kernel>& kernels,
                               const compiler::TargetOptions& options = {});
// The kernels' functions in one module, compiled together: one image per kernel, in order.
std::vector<CompiledSpirv> compile_spirv_each(const std::vector<TestKernel>& kernels);
// One kernel's image.
CompiledSpirv compile_spirv(const TestKernel& kernel);

// A resource variable as the module declares it.
struct SpirvBinding {
  uint32_t set = ~0u;
  uint32_t binding = ~0u;
  uint32_t storage_class = 0;   // 12 = StorageBuffer
  bool block_decorated = false; // the pointee struct carries Block
  bool runtime_array = false;   // struct { T data[]; } (buffer) vs struct { T value; } (scalar)
  std::string element;          // "i8", "f32", "v4f32", ...: the array element or the scalar
  uint32_t array_stride = 0;    // ArrayStride of the runtime array
  bool aliased = false;         // decorated Aliased (a buffer and its word views share a binding)
};

struct SpirvEntryPoint {
  uint32_t execution_model = 0;             // 5 = GLCompute
  std::string name;
  std::optional<std::array<uint32_t, 3>> local_size;
  std::vector<SpirvBinding> bindings;       // resources the entry function accesses
};

struct SpirvModuleInfo {
  uint32_t version = 0;                     // 0x00010300 for SPIR-V 1.3
  std::vector<uint32_t> capabilities;
  std::vector<SpirvEntryPoint> entry_points;
  const SpirvEntryPoint* find(const std::string& name) const;
};

// Throws std::runtime_error on a malformed word stream.
SpirvModuleInfo reflect_spirv(std::span<const uint32_t> words);

// The reflection's element spelling for a manifest parameter ("i8" for bool, "v4f32", ...).
std::string expected_element(const format::Param& param);

}  // namespace quiver::test
