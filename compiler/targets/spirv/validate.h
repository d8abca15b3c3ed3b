// spirv-val inside the compiler: no module leaves the spirv target unless SPIRV-Tools accepts it
// for Vulkan 1.2.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace quiver::compiler::spirv_target {

// Empty when `words` is a valid Vulkan 1.2 SPIR-V module; otherwise the validator's messages.
std::string validate_vulkan12(std::span<const uint32_t> words);

}  // namespace quiver::compiler::spirv_target
