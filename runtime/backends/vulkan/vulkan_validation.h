// The Khronos validation layer, on request: with QUIVER_VULKAN_VALIDATION=1 the instance the
// backend creates (one per process and configuration, vulkan_context.cpp) enables VK_LAYER_KHRONOS_validation (with synchronization validation) and
// VK_EXT_debug_utils, and a messenger prints each warning or error the layer reports to stderr
// as "quiver: Vulkan validation <severity>: <message>" and counts it. ctest's vulkan.validation
// fails on that line (docs/reliability.md). Off by default: the layer costs time and is a
// separate package (vulkan-validationlayers).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "vulkan_api.h"

namespace quiver::backend::vulkan {

inline constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

class Validation {
 public:
  // Whether QUIVER_VULKAN_VALIDATION is "1".
  static bool requested();
  // Adds the layer, the extension and the messenger/feature structs (for vkCreateInstance and
  // vkDestroyInstance) to `info`. This object must outlive the vkCreateInstance call.
  void prepare(VkInstanceCreateInfo& info);
  // Creates the messenger on `instance`; false with `why_not` when the layer lacks it.
  bool attach(const Api& vk, VkInstance instance, std::string& why_not);
  // Destroys the messenger; call before vkDestroyInstance (the backend's shared instance is never
  // destroyed, so only an instance that failed half-way through its setup gets here).
  void detach(VkInstance instance) noexcept;

  // Warnings and errors reported in this process so far, by every instance.
  static size_t message_count();

 private:
  std::vector<const char*> layers_, extensions_;
  VkValidationFeatureEnableEXT enables_[1] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features_{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  VkDebugUtilsMessengerCreateInfoEXT messenger_info_{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_ = nullptr;
};

}  // namespace quiver::backend::vulkan
