#include "vulkan_validation.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace quiver::backend::vulkan {
namespace {

std::atomic<size_t> g_messages{0};
std::atomic<bool> g_told_ignored{false};

// Reports of the layer that are wrong for quiver's modules, each with the check that stands in
// for it. VUID-RuntimeSpirv-Workgroup-06530: the layer (1.3.239, still so upstream:
// KhronosGroup/Vulkan-ValidationLayers#6961) adds up the Workgroup variables of every entry
// point of a module, not those in the pipeline's entry-point interface (SPIR-V 1.4); the op
// library is one module of many kernels, each with its own workgroup arrays. The backend checks
// each kernel's own shared_bytes against maxComputeSharedMemorySize (check_limits).
constexpr const char* kIgnored[] = {"VUID-RuntimeSpirv-Workgroup-06530"};

bool ignored(const VkDebugUtilsMessengerCallbackDataEXT* data) {
  if (!data || !data->pMessageIdName) return false;
  for (const char* id : kIgnored)
    if (std::strcmp(data->pMessageIdName, id) == 0) return true;
  return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL report(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                      VkDebugUtilsMessageTypeFlagsEXT,
                                      const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (ignored(data)) {
    if (!g_told_ignored.exchange(true))
      std::fprintf(stderr, "quiver: ignoring the layer's %s reports (whole-module count; see vulkan_validation.cpp)\n",
                   data->pMessageIdName);
    return VK_FALSE;
  }
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  g_messages.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr, "quiver: Vulkan validation %s: %s\n", level,
               data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;  // the call goes on as the application made it
}

}  // namespace

bool Validation::requested() {
  const char* v = std::getenv("QUIVER_VULKAN_VALIDATION");
  return v && std::strcmp(v, "1") == 0;
}

size_t Validation::message_count() { return g_messages.load(std::memory_order_relaxed); }

void Validation::prepare(VkInstanceCreateInfo& info) {
  layers_.assign(info.ppEnabledLayerNames, info.ppEnabledLayerNames + info.enabledLayerCount);
  layers_.push_back(kValidationLayer);
  extensions_.assign(info.ppEnabledExtensionNames, info.ppEnabledExtensionNames + info.enabledExtensionCount);
  extensions_.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  info.enabledLayerCount = static_cast<uint32_t>(layers_.size());
  info.ppEnabledLayerNames = layers_.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions_.size());
  info.ppEnabledExtensionNames = extensions_.data();
  messenger_info_.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info_.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info_.pfnUserCallback = report;
  // Chained into vkCreateInstance, the messenger also covers instance creation and destruction.
  features_.enabledValidationFeatureCount = 1;
  features_.pEnabledValidationFeatures = enables_;
  features_.pNext = info.pNext;
  messenger_info_.pNext = &features_;
  info.pNext = &messenger_info_;
}

bool Validation::attach(const Api& vk, VkInstance instance, std::string& why_not) {
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vk.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  destroy_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      vk.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
  if (!create || !destroy_) {
    why_not = "QUIVER_VULKAN_VALIDATION=1 but the instance has no vkCreateDebugUtilsMessengerEXT";
    return false;
  }
  VkDebugUtilsMessengerCreateInfoEXT info = messenger_info_;
  info.pNext = nullptr;
  VkResult result = create(instance, &info, nullptr, &messenger_);
  if (result != VK_SUCCESS) {
    messenger_ = VK_NULL_HANDLE;
    why_not = "vkCreateDebugUtilsMessengerEXT failed: " + result_name(result);
    return false;
  }
  return true;
}

void Validation::detach(VkInstance instance) noexcept {
  if (messenger_ && destroy_) destroy_(instance, messenger_, nullptr);
  messenger_ = VK_NULL_HANDLE;
}

}  // namespace quiver::backend::vulkan
