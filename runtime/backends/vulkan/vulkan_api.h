// The Vulkan API, loaded at run time: dlopen("libvulkan.so.1") -> vkGetInstanceProcAddr ->
// everything in vulkan_symbols.h. The headers (libvulkan-dev) are used with VK_NO_PROTOTYPES,
// so nothing links against the loader and libquiver loads on machines without Vulkan.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan_core.h>

#include <string>

namespace quiver::backend::vulkan {

struct Api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define QV_VK_GLOBAL(name) PFN_##name name = nullptr;
#define QV_VK_INSTANCE(name) PFN_##name name = nullptr;
#define QV_VK_DEVICE(name) PFN_##name name = nullptr;
#define QV_VK_DEVICE_OPTIONAL(name) PFN_##name name = nullptr;
#include "vulkan_symbols.h"
#undef QV_VK_GLOBAL
#undef QV_VK_INSTANCE
#undef QV_VK_DEVICE
#undef QV_VK_DEVICE_OPTIONAL

  // Each step returns false and sets `why_not` naming the library or the missing command.
  // QUIVER_VULKAN_LIBRARY overrides the library name (default "libvulkan.so.1").
  bool load_global(std::string& why_not);
  bool load_instance(VkInstance instance, std::string& why_not);
  bool load_device(VkDevice device, std::string& why_not);
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" (or "VkResult -13" for codes this runtime does not name).
std::string result_name(VkResult result);

}  // namespace quiver::backend::vulkan
