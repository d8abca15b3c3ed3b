#include "targets_spirv_vulkan.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace quiver::test {
namespace {

void check(VkResult result, const char* call) {
  if (result != VK_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed with VkResult " +
                             std::to_string(int(result)));
}
#define VK_CHECK(call) check((call), #call)

}  // namespace

struct VulkanCompute::State {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  std::string name;

  uint32_t host_memory_type(uint32_t allowed) const {
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
      if ((allowed & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
    throw std::runtime_error("no host-visible coherent Vulkan memory type");
  }
};

// Everything created for one dispatch, destroyed in reverse order however run() exits.
struct Dispatch {
  VkDevice device;
  std::vector<VkBuffer> buffers;
  std::vector<VkDeviceMemory> memories;
  VkShaderModule shader = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  ~Dispatch() {
    if (fence) vkDestroyFence(device, fence, nullptr);
    if (pool) vkDestroyDescriptorPool(device, pool, nullptr);
    if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
    if (pipeline_layout) vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
    if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
    if (shader) vkDestroyShaderModule(device, shader, nullptr);
    for (VkBuffer b : buffers) vkDestroyBuffer(device, b, nullptr);
    for (VkDeviceMemory m : memories) vkFreeMemory(device, m, nullptr);
  }
};

VulkanCompute& VulkanCompute::instance() {
  static VulkanCompute compute;
  return compute;
}

const std::string& VulkanCompute::device_name() const { return state_->name; }

VulkanCompute::VulkanCompute() : state_(std::make_unique<State>()) {
  State& s = *state_;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "quiver spirv target tests";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instance_info.pApplicationInfo = &app;
  VK_CHECK(vkCreateInstance(&instance_info, nullptr, &s.instance));

  uint32_t count = 0;
  VK_CHECK(vkEnumeratePhysicalDevices(s.instance, &count, nullptr));
  std::vector<VkPhysicalDevice> devices(count);
  VK_CHECK(vkEnumeratePhysicalDevices(s.instance, &count, devices.data()));
  for (VkPhysicalDevice d : devices) {
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &families, props.data());
    for (uint32_t f = 0; f < families && !s.physical; ++f)
      if (props[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        s.physical = d;
        s.queue_family = f;
      }
    if (s.physical) break;
  }
  if (!s.physical) throw std::runtime_error("no Vulkan device with a compute queue");
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(s.physical, &props);
  s.name = props.deviceName;
  vkGetPhysicalDeviceMemoryProperties(s.physical, &s.memory);

  // Enable the optional features the target's modules may declare (8/16/64-bit types).
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(s.physical, &supported);
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = f12.uniformAndStorageBuffer8BitAccess;
  e12.shaderInt8 = f12.shaderInt8;
  e12.shaderFloat16 = f12.shaderFloat16;
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  e11.pNext = &e12;
  e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enabled.pNext = &e11;
  enabled.features.shaderInt16 = supported.features.shaderInt16;
  enabled.features.shaderInt64 = supported.features.shaderInt64;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = s.queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.pNext = &enabled;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  VK_CHECK(vkCreateDevice(s.physical, &device_info, nullptr, &s.device));
  vkGetDeviceQueue(s.device, s.queue_family, 0, &s.queue);
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = s.queue_family;
  VK_CHECK(vkCreateCommandPool(s.device, &pool_info, nullptr, &s.command_pool));
}

VulkanCompute::~VulkanCompute() {
  if (!state_) return;
  if (state_->device) {
    vkDeviceWaitIdle(state_->device);
    vkDestroyCommandPool(state_->device, state_->command_pool, nullptr);
    vkDestroyDevice(state_->device, nullptr);
  }
  if (state_->instance) vkDestroyInstance(state_->instance, nullptr);
}

void VulkanCompute::run(std::span<const uint32_t> spirv, const std::string& entry,
                        std::array<uint32_t, 3> grid,
                        std::span<std::vector<std::byte>* const> bindings) {
  State& s = *state_;
  Dispatch d{s.device};
  const uint32_t n = uint32_t(bindings.size());

  for (uint32_t i = 0; i < n; ++i) {
    // Round up so that a one-byte scalar still gets a legal, 4-byte-addressable buffer.
    VkDeviceSize size = std::max<VkDeviceSize>(16, (bindings[i]->size() + 15) / 16 * 16);
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buffer;
    VK_CHECK(vkCreateBuffer(s.device, &info, nullptr, &buffer));
    d.buffers.push_back(buffer);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(s.device, buffer, &req);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = s.host_memory_type(req.memoryTypeBits);
    VkDeviceMemory memory;
    VK_CHECK(vkAllocateMemory(s.device, &alloc, nullptr, &memory));
    d.memories.push_back(memory);
    VK_CHECK(vkBindBufferMemory(s.device, buffer, memory, 0));
    void* mapped = nullptr;
    VK_CHECK(vkMapMemory(s.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped));
    std::memset(mapped, 0, size);
    std::memcpy(mapped, bindings[i]->data(), bindings[i]->size());
    vkUnmapMemory(s.device, memory);
  }

  VkShaderModuleCreateInfo shader_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shader_info.codeSize = spirv.size() * sizeof(uint32_t);
  shader_info.pCode = spirv.data();
  VK_CHECK(vkCreateShaderModule(s.device, &shader_info, nullptr, &d.shader));

  std::vector<VkDescriptorSetLayoutBinding> layout_bindings(n);
  for (uint32_t i = 0; i < n; ++i) {
    layout_bindings[i].binding = i;
    layout_bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    layout_bindings[i].descriptorCount = 1;
    layout_bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = n;
  set_info.pBindings = layout_bindings.data();
  VK_CHECK(vkCreateDescriptorSetLayout(s.device, &set_info, nullptr, &d.set_layout));
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &d.set_layout;
  VK_CHECK(vkCreatePipelineLayout(s.device, &layout_info, nullptr, &d.pipeline_layout));

  VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = d.shader;
  pipeline_info.stage.pName = entry.c_str();
  pipeline_info.layout = d.pipeline_layout;
  VK_CHECK(vkCreateComputePipelines(s.device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr,
                                    &d.pipeline));

  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(n, 1u)};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  VK_CHECK(vkCreateDescriptorPool(s.device, &pool_info, nullptr, &d.pool));
  VkDescriptorSetAllocateInfo set_alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_alloc.descriptorPool = d.pool;
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &d.set_layout;
  VkDescriptorSet set;
  VK_CHECK(vkAllocateDescriptorSets(s.device, &set_alloc, &set));
  std::vector<VkDescriptorBufferInfo> buffer_infos(n);
  std::vector<VkWriteDescriptorSet> writes(n);
  for (uint32_t i = 0; i < n; ++i) {
    buffer_infos[i] = {d.buffers[i], 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &buffer_infos[i];
  }
  vkUpdateDescriptorSets(s.device, n, writes.data(), 0, nullptr);

  VkCommandBufferAllocateInfo cmd_alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cmd_alloc.commandPool = s.command_pool;
  cmd_alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cmd_alloc.commandBufferCount = 1;
  VkCommandBuffer cmd;
  VK_CHECK(vkAllocateCommandBuffers(s.device, &cmd_alloc, &cmd));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CHECK(vkBeginCommandBuffer(cmd, &begin));
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline_layout, 0, 1, &set, 0,
                          nullptr);
  vkCmdDispatch(cmd, grid[0], grid[1], grid[2]);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
  VK_CHECK(vkEndCommandBuffer(cmd));

  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VK_CHECK(vkCreateFence(s.device, &fence_info, nullptr, &d.fence));
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  VkResult result = vkQueueSubmit(s.queue, 1, &submit, d.fence);
  if (result == VK_SUCCESS) result = vkWaitForFences(s.device, 1, &d.fence, VK_TRUE, 60'000'000'000ull);
  vkFreeCommandBuffers(s.device, s.command_pool, 1, &cmd);
  check(result, "vkQueueSubmit/vkWaitForFences");

  for (uint32_t i = 0; i < n; ++i) {
    void* mapped = nullptr;
    VK_CHECK(vkMapMemory(s.device, d.memories[i], 0, VK_WHOLE_SIZE, 0, &mapped));
    std::memcpy(bindings[i]->data(), mapped, bindings[i]->size());
    vkUnmapMemory(s.device, d.memories[i]);
  }
}

}  // namespace quiver::test
