#include "vulkan_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace quiver::backend::vulkan {

bool Api::load_global(std::string& why_not) {
  const char* override_name = std::getenv("QUIVER_VULKAN_LIBRARY");
  std::string library = override_name && *override_name ? override_name : "libvulkan.so.1";
  // Never dlclose()d: ICDs loaded by the loader may keep threads and exit handlers alive.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* detail = dlerror();
    why_not = library + " not found" + (detail ? std::string(" (") + detail + ")" : "");
    return false;
  }
  vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr) {
    why_not = library + " has no vkGetInstanceProcAddr";
    return false;
  }
#define QV_VK_GLOBAL(name)                                                                 \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(nullptr, #name));              \
  if (!name) {                                                                             \
    why_not = library + " does not provide " #name " (a Vulkan 1.1+ loader is required)";  \
    return false;                                                                          \
  }
#define QV_VK_INSTANCE(name)
#define QV_VK_DEVICE(name)
#define QV_VK_DEVICE_OPTIONAL(name)
#include "vulkan_symbols.h"
#undef QV_VK_GLOBAL
#undef QV_VK_INSTANCE
#undef QV_VK_DEVICE
#undef QV_VK_DEVICE_OPTIONAL
  return true;
}

bool Api::load_instance(VkInstance instance, std::string& why_not) {
#define QV_VK_GLOBAL(name)
#define QV_VK_INSTANCE(name)                                                       \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));     \
  if (!name) {                                                                     \
    why_not = "the Vulkan instance does not provide " #name;                       \
    return false;                                                                  \
  }
#define QV_VK_DEVICE(name)
#define QV_VK_DEVICE_OPTIONAL(name)
#include "vulkan_symbols.h"
#undef QV_VK_GLOBAL
#undef QV_VK_INSTANCE
#undef QV_VK_DEVICE
#undef QV_VK_DEVICE_OPTIONAL
  return true;
}

bool Api::load_device(VkDevice device, std::string& why_not) {
#define QV_VK_GLOBAL(name)
#define QV_VK_INSTANCE(name)
#define QV_VK_DEVICE(name)                                                     \
  name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));     \
  if (!name) {                                                                 \
    why_not = "the Vulkan device does not provide " #name;                     \
    return false;                                                              \
  }
#define QV_VK_DEVICE_OPTIONAL(name) name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
#include "vulkan_symbols.h"
#undef QV_VK_GLOBAL
#undef QV_VK_INSTANCE
#undef QV_VK_DEVICE
#undef QV_VK_DEVICE_OPTIONAL
  return true;
}

std::string result_name(VkResult result) {
  switch (result) {
#define QV_VK_RESULT(code) \
  case code:               \
    return #code;
    QV_VK_RESULT(VK_SUCCESS)
    QV_VK_RESULT(VK_NOT_READY)
    QV_VK_RESULT(VK_TIMEOUT)
    QV_VK_RESULT(VK_INCOMPLETE)
    QV_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    QV_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    QV_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    QV_VK_RESULT(VK_ERROR_DEVICE_LOST)
    QV_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    QV_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    QV_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    QV_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    QV_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    QV_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    QV_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    QV_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    QV_VK_RESULT(VK_ERROR_UNKNOWN)
    QV_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    QV_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    QV_VK_RESULT(VK_ERROR_FRAGMENTATION)
    QV_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    QV_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef QV_VK_RESULT
    default:
      return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

}  // namespace quiver::backend::vulkan
