// Private to the MSL target: from the spirv target's Vulkan 1.2 module to one Metal
// translation unit per kernel, through SPIRV-Cross's C++ library.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "msl_image.h"

namespace mlir { class ModuleOp; }

namespace quiver::compiler::msl {

// The MSL version quiver's sources are written for: 2.3 (macOS 11) is the first that allows
// 64-bit integers in buffers, and it has every simdgroup function the subgroup ops need.
inline constexpr uint32_t kMslMajor = 2;
inline constexpr uint32_t kMslMinor = 3;

// One SPIR-V module per kernel, each built by the spirv target from a copy of `module` holding
// only that kernel — so that it declares only that kernel's workgroup memory (SPIRV-Cross 2021
// declares every Workgroup variable of a module in each entry point). Throws the spirv
// target's TargetError.
std::vector<std::vector<uint32_t>> spirv_per_kernel(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                                    bool verbose);

// Translates the entry point of `words` (one kernel's module) into MSL
// with parameter i at [[buffer(i)]], checking that SPIRV-Cross honoured that mapping.
// Throws std::runtime_error with SPIRV-Cross's message or the mismatch.
msl_image::KernelSource translate_kernel(std::span<const uint32_t> words, const format::Kernel& kernel);

}  // namespace quiver::compiler::msl
