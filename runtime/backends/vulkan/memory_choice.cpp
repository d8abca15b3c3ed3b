#include "memory_choice.h"

#include <algorithm>

namespace quiver::backend::vulkan {

std::vector<uint32_t> memory_type_candidates(const VkPhysicalDeviceMemoryProperties& properties, uint32_t type_bits,
                                             MemoryUse use) {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, preferred = 0;
  switch (use) {
    case MemoryUse::Device: break;
    // Host reads (downloads) are much faster from cached memory.
    case MemoryUse::Host: required = host, preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT; break;
    case MemoryUse::Unified:
      required = host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
    case MemoryUse::Upload: required = host, preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
  }
  std::vector<uint32_t> out;
  for (VkMemoryPropertyFlags want : {required | preferred, required})
    for (uint32_t i = 0; i < properties.memoryTypeCount && i < VK_MAX_MEMORY_TYPES; ++i)
      if ((type_bits & (1u << i)) && (properties.memoryTypes[i].propertyFlags & want) == want &&
          std::find(out.begin(), out.end(), i) == out.end())
        out.push_back(i);
  return out;
}

VkResult allocate_first_fitting(const std::vector<uint32_t>& candidates,
                                const std::function<VkResult(uint32_t type)>& allocate) {
  VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  for (uint32_t type : candidates) {
    r = allocate(type);
    if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY) break;
  }
  return r;
}

}  // namespace quiver::backend::vulkan
