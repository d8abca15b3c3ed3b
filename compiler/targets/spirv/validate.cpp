#include "targets/spirv/validate.h"

#include <spirv-tools/libspirv.hpp>

namespace quiver::compiler::spirv_target {

std::string validate_vulkan12(std::span<const uint32_t> words) {
  std::string messages;
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& position,
                               const char* message) {
    if (!messages.empty()) messages += "\n";
    messages += "word " + std::to_string(position.index) + ": " + message;
  });
  if (tools.Validate(words.data(), words.size())) return {};
  return messages.empty() ? std::string("spirv-val rejected the module") : messages;
}

}  // namespace quiver::compiler::spirv_target
