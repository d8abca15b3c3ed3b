#include "vulkan_context.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "image_choice.h"
#include "quiver/runtime.h"

namespace quiver::backend::vulkan {

namespace {

constexpr size_t kMaxInFlight = 32;               // launches queued before the host waits
constexpr VkDeviceSize kStagingBytes = 64 << 20;  // uploads/downloads go through in chunks of this
constexpr uint32_t kMinPoolDescriptors = 32;      // more than the language's 16 parameters

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v));
}

// Discrete > integrated > virtual > CPU (lavapipe) > other.
int type_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

// A global memory barrier from everything earlier on the queue (kernels, copies, host writes)
// to everything later: kernels run in submission order as far as memory is concerned.
void full_barrier(const Api& vk, VkCommandBuffer cb) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                          VK_ACCESS_HOST_READ_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                      VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT;
  vk.vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace

void record_full_barrier(const Api& vk, VkCommandBuffer cb) { full_barrier(vk, cb); }

void record_kernel_barrier(const Api& vk, VkCommandBuffer cb) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                          &barrier, 0, nullptr, 0, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Opening

namespace {

// What the loader was told about drivers, for messages about a missing one.
std::string driver_env() {
  std::string out;
  for (const char* name : {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0')
      out += std::string(out.empty() ? "" : ", ") + name + "=" + v;
  }
  return out;
}

// A physical device quiver can use: Vulkan 1.2+ with a compute queue.
struct Candidate {
  VkPhysicalDevice device;
  VkPhysicalDeviceProperties props;
  uint32_t family;
};

// ---------------------------------------------------------------------------------------------
// The process-wide instance
//
// One VkInstance serves every Context of the process. It is created on first use and kept until
// the process exits, never destroyed: NVIDIA's driver 580 refuses vkCreateInstance
// (VK_ERROR_INCOMPATIBLE_DRIVER) once about 30 instances have been created and destroyed in one
// process, and reference counting would still create and destroy one per open/close cycle of a
// program (or test binary) that uses one Device at a time. Destroying it at exit would race with
// Devices held by other static objects and with the driver's own exit handlers; the loader
// library is never dlclose()d either (vulkan_api.cpp), and the OS reclaims both at exit.
//
// What vkCreateInstance returns depends on the environment the loader and this backend read when
// it runs (which loader library, which drivers and layers, validation on or off), and programs
// (the backend's tests) change it to show that detection fails cleanly and then works again. So
// an instance belongs to one such configuration (instance_key()): a request made under another
// configuration gets, or creates, that configuration's instance, also kept. A failure is not
// kept: the next request tries again. A program that never changes these variables creates
// exactly one instance.

// The environment that decides what vkCreateInstance yields.
std::string instance_key() {
  std::string key;
  for (const char* name : {"QUIVER_VULKAN_LIBRARY", "QUIVER_VULKAN_VALIDATION", "VK_DRIVER_FILES",
                           "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", "VK_LAYER_PATH", "VK_ADD_LAYER_PATH",
                           "VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE", "VK_LOADER_LAYERS_DISABLE",
                           "VK_LOADER_DRIVERS_SELECT", "VK_LOADER_DRIVERS_DISABLE"}) {
    const char* v = std::getenv(name);
    key += name;
    key += v ? "=" + std::string(v) : std::string("(unset)");
    key += '\n';
  }
  return key;
}

struct SharedInstance {
  std::string key;
  Api vk;                                  // global and instance commands
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t api_version = 0;                // what the instance was created with
  std::unique_ptr<Validation> validation;  // its debug messenger, QUIVER_VULKAN_VALIDATION=1 only
};

// Leaked on purpose (see above): no destructor runs at exit while Devices may still use them.
std::mutex& instances_mutex() {
  static std::mutex* mutex = new std::mutex;
  return *mutex;
}
std::vector<SharedInstance*>& instances() {
  static auto* list = new std::vector<SharedInstance*>;
  return *list;
}
std::atomic<size_t> g_instances_created{0};

// Loads the loader, checks its version and creates an instance for the current environment.
// nullptr with `why_not` set; nothing is kept then.
std::unique_ptr<SharedInstance> create_instance(std::string key, std::string& why_not) {
  auto shared = std::make_unique<SharedInstance>();
  shared->key = std::move(key);
  Api& vk = shared->vk;
  if (!vk.load_global(why_not)) return nullptr;
  uint32_t loader_version = 0;
  if (vk.vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS ||
      loader_version < VK_API_VERSION_1_2) {
    why_not = "the Vulkan loader supports only Vulkan " + version_string(loader_version) +
              "; quiver needs 1.2";
    return nullptr;
  }
  shared->api_version = std::min(loader_version, VK_API_VERSION_1_3);

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "quiver";
  app.pEngineName = "quiver";
  app.apiVersion = shared->api_version;
  VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instance_info.pApplicationInfo = &app;
  if (Validation::requested()) {
    shared->validation = std::make_unique<Validation>();
    shared->validation->prepare(instance_info);
  }
  VkInstance instance = VK_NULL_HANDLE;
  VkResult result = vk.vkCreateInstance(&instance_info, nullptr, &instance);
  if (result != VK_SUCCESS) {
    why_not = "vkCreateInstance failed: " + result_name(result);
    if (shared->validation && (result == VK_ERROR_LAYER_NOT_PRESENT || result == VK_ERROR_EXTENSION_NOT_PRESENT))
      why_not += std::string(" (QUIVER_VULKAN_VALIDATION=1 needs ") + kValidationLayer +
                 ": Debian package vulkan-validationlayers)";
    // What the loader returns when it found no driver (ICD) at all.
    if (result == VK_ERROR_INCOMPATIBLE_DRIVER) {
      const std::string env = driver_env();
      why_not += " (the Vulkan loader found no usable driver; " +
                 (env.empty() ? std::string("is an ICD such as mesa-vulkan-drivers installed?")
                              : "the driver search was limited by " + env) +
                 ")";
    }
    return nullptr;
  }
  g_instances_created.fetch_add(1, std::memory_order_relaxed);
  // From here a failure destroys the instance again: it is never handed out, so nothing uses it.
  bool usable = vk.load_instance(instance, why_not) &&
                (!shared->validation || shared->validation->attach(vk, instance, why_not));
  if (!usable) {
    if (shared->validation) shared->validation->detach(instance);
    if (vk.vkDestroyInstance) vk.vkDestroyInstance(instance, nullptr);
    return nullptr;
  }
  shared->instance = instance;
  return shared;
}

// The instance for the current environment, created on first use. Call with instances_mutex()
// held; the result lives until the process exits.
const SharedInstance* shared_instance(std::string& why_not) {
  std::string key = instance_key();
  for (const SharedInstance* s : instances())
    if (s->key == key) return s;
  std::unique_ptr<SharedInstance> created = create_instance(std::move(key), why_not);
  if (!created) return nullptr;
  instances().push_back(created.get());
  return created.release();
}

// The usable devices, best type first (stable: the loader's order breaks ties); quiver's
// "vulkan:<i>" is the i-th of this list. `rejected` lists the others with the reason.
std::vector<Candidate> usable_devices(const SharedInstance& shared, std::string& why_not) {
  const Api& vk = shared.vk;
  uint32_t count = 0;
  VkResult result = vk.vkEnumeratePhysicalDevices(shared.instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (result == VK_SUCCESS && count) result = vk.vkEnumeratePhysicalDevices(shared.instance, &count, devices.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    why_not = "vkEnumeratePhysicalDevices failed: " + result_name(result);
    return {};
  }
  devices.resize(count);
  if (devices.empty()) {
    const std::string env = driver_env();
    why_not = "the Vulkan loader reports no physical device (is an ICD installed?" +
              (env.empty() ? std::string() : " " + env) + ")";
    return {};
  }
  std::vector<Candidate> usable;
  std::string rejected;
  for (size_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties props;
    vk.vkGetPhysicalDeviceProperties(devices[i], &props);
    uint32_t family_count = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &family_count, families.data());
    uint32_t family = UINT32_MAX;
    for (uint32_t f = 0; f < family_count && family == UINT32_MAX; ++f)
      if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) family = f;
    std::string reason;
    if (props.apiVersion < VK_API_VERSION_1_2)
      reason = "supports only Vulkan " + version_string(props.apiVersion);
    else if (family == UINT32_MAX)
      reason = "has no compute queue";
    if (!reason.empty()) {
      rejected += std::string("; ") + props.deviceName + " " + reason;
      continue;
    }
    usable.push_back({devices[i], props, family});
  }
  std::stable_sort(usable.begin(), usable.end(), [](const Candidate& a, const Candidate& b) {
    return type_rank(a.props.deviceType) < type_rank(b.props.deviceType);
  });
  if (usable.empty()) why_not = "no usable Vulkan device" + rejected;
  return usable;
}

// The device's feature structure F (sType `type`), as vkGetPhysicalDeviceFeatures2 fills it.
template <typename F>
F device_features(const Context& ctx, VkStructureType type) {
  F have{type};
  VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  query.pNext = &have;
  ctx.vk.vkGetPhysicalDeviceFeatures2(ctx.physical, &query);
  return have;
}

// The list a two-call enumeration entry point (`list(physical, &count, items)`) gives, each item
// of sType `type`; empty where the entry point is missing or fails.
template <typename P, typename Fn>
std::vector<P> device_list(const Context& ctx, Fn list, VkStructureType type) {
  uint32_t count = 0;
  if (!list || list(ctx.physical, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<P> items(count);
  for (auto& item : items) item = {type};
  if (list(ctx.physical, &count, items.data()) != VK_SUCCESS) return {};
  items.resize(count);
  return items;
}

// VK_KHR_cooperative_matrix: enabled when the device has the feature; its configurations (types,
// sizes, scope) become offers that an image's requirements name (image_choice.h).
void enable_cooperative_matrix(Context& ctx, VkPhysicalDeviceFeatures2& enabled,
                               VkPhysicalDeviceCooperativeMatrixFeaturesKHR& features,
                               std::vector<const char*>& extensions) {
  const Api& vk = ctx.vk;
  auto properties = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      vk.vkGetInstanceProcAddr(ctx.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  auto have = device_features<VkPhysicalDeviceCooperativeMatrixFeaturesKHR>(
      ctx, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
  if (!have.cooperativeMatrix || !properties) return;
  auto configs = device_list<VkCooperativeMatrixPropertiesKHR>(ctx, properties, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR);
  if (configs.empty()) return;
  features.cooperativeMatrix = VK_TRUE;
  features.pNext = enabled.pNext;
  enabled.pNext = &features;
  extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  ctx.offers.insert(std::string("extension:") + VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  for (const auto& c : configs)
    if (std::string r = cooperative_matrix_requirement(c); !r.empty()) ctx.offers.insert(r);
}

// VK_NV_cooperative_matrix2's workgroup scope and flexible sizes (block tiles, docs/matrix.md):
// enabled when the device has both; its flexible-dimensions configurations become granularity
// offers that "cooperative_matrix_workgroup:..." requirements are checked against (image_choice.h).
void enable_cooperative_matrix2(Context& ctx, VkPhysicalDeviceFeatures2& enabled,
                                VkPhysicalDeviceCooperativeMatrix2FeaturesNV& features,
                                std::vector<const char*>& extensions) {
  const Api& vk = ctx.vk;
  auto flexible = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      vk.vkGetInstanceProcAddr(ctx.instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  auto have = device_features<VkPhysicalDeviceCooperativeMatrix2FeaturesNV>(
      ctx, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV);
  if (!have.cooperativeMatrixWorkgroupScope || !have.cooperativeMatrixFlexibleDimensions || !flexible) return;
  VkPhysicalDeviceCooperativeMatrix2PropertiesNV limits{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &limits;
  vk.vkGetPhysicalDeviceProperties2(ctx.physical, &properties);
  auto configs = device_list<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      ctx, flexible, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV);
  if (configs.empty()) return;
  features.cooperativeMatrixWorkgroupScope = VK_TRUE;
  features.cooperativeMatrixFlexibleDimensions = VK_TRUE;
  features.pNext = enabled.pNext;
  enabled.pNext = &features;
  extensions.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  ctx.offers.insert(std::string("extension:") + VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  ctx.offers.insert("feature:cooperativeMatrixWorkgroupScope");
  ctx.offers.insert("feature:cooperativeMatrixFlexibleDimensions");
  ctx.offers.insert("cooperative_matrix_workgroup_max_dimension:" +
                    std::to_string(limits.cooperativeMatrixFlexibleDimensionsMaxDimension));
  for (const auto& c : configs)
    if (std::string r = cooperative_matrix_granularity_offer(c); !r.empty()) ctx.offers.insert(r);
}

}  // namespace

size_t instances_created() { return g_instances_created.load(std::memory_order_relaxed); }

size_t Context::count(std::string& why_not) {
  std::lock_guard lock(instances_mutex());
  const SharedInstance* shared = shared_instance(why_not);
  return shared ? usable_devices(*shared, why_not).size() : 0;
}

std::shared_ptr<Context> Context::open(size_t index, size_t& device_count, std::string& why_not) {
  device_count = 0;
  auto ctx = std::make_shared<Context>();
  Api& vk = ctx->vk;
  uint32_t api_version = 0;
  std::vector<Candidate> usable;
  {
    // The lock also covers the enumeration: the instance is shared by every thread.
    std::lock_guard lock(instances_mutex());
    const SharedInstance* shared = shared_instance(why_not);
    if (!shared) return nullptr;
    vk = shared->vk;   // device commands are loaded into this copy below
    ctx->instance = shared->instance;
    ctx->validation = shared->validation.get();
    api_version = shared->api_version;
    usable = usable_devices(*shared, why_not);
  }
  device_count = usable.size();
  if (usable.empty()) return nullptr;
  if (index >= usable.size()) {
    why_not = "the Vulkan loader lists " + std::to_string(usable.size()) + " usable device(s)";
    return nullptr;
  }
  const Candidate* chosen = &usable[index];
  ctx->physical = chosen->device;
  ctx->properties = chosen->props;
  ctx->queue_family = chosen->family;
  ctx->name = chosen->props.deviceName;
  vk.vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory_properties);
  const bool has13 = chosen->props.apiVersion >= VK_API_VERSION_1_3 && api_version >= VK_API_VERSION_1_3;
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties2.pNext = &ids;
  ids.pNext = has13 ? &p13 : nullptr;
  vk.vkGetPhysicalDeviceProperties2(ctx->physical, &properties2);
  std::memcpy(ctx->driver_uuid, ids.driverUUID, VK_UUID_SIZE);
  // SPIR-V 1.6 shaders may run with any subgroup size in [min, max]: only a device with one
  // size guarantees it to images that rely on it (lane shares of cooperative matrices).
  if (has13) {
    if (std::string r = subgroup_size_requirement(p13.minSubgroupSize, p13.maxSubgroupSize); !r.empty())
      ctx->offers.insert(r);
  }

  // Enable the optional features that compiled kernels may rely on (8/16-bit storage, half,
  // int64, float64, scalar block layout, the memory model, integer dot product), where supported.
  VkPhysicalDeviceVulkan13Features s13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features s12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features s11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &s11;
  s11.pNext = &s12;
  s12.pNext = has13 ? &s13 : nullptr;
  vk.vkGetPhysicalDeviceFeatures2(ctx->physical, &supported);

  VkPhysicalDeviceVulkan13Features e13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enabled.pNext = &e11;
  e11.pNext = &e12;
  e12.pNext = has13 ? &e13 : nullptr;
  enabled.features.shaderInt64 = supported.features.shaderInt64;
  enabled.features.shaderInt16 = supported.features.shaderInt16;
  enabled.features.shaderFloat64 = supported.features.shaderFloat64;
  e11.storageBuffer16BitAccess = s11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = s11.uniformAndStorageBuffer16BitAccess;
  e11.variablePointersStorageBuffer = s11.variablePointersStorageBuffer;
  e11.variablePointers = s11.variablePointers;
  e12.storageBuffer8BitAccess = s12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = s12.uniformAndStorageBuffer8BitAccess;
  e12.shaderFloat16 = s12.shaderFloat16;
  e12.shaderInt8 = s12.shaderInt8;
  e12.shaderBufferInt64Atomics = s12.shaderBufferInt64Atomics;
  e12.shaderSharedInt64Atomics = s12.shaderSharedInt64Atomics;
  e12.scalarBlockLayout = s12.scalarBlockLayout;
  e12.vulkanMemoryModel = s12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = s12.vulkanMemoryModelDeviceScope;
  e12.shaderSubgroupExtendedTypes = s12.shaderSubgroupExtendedTypes;
  e13.shaderIntegerDotProduct = s13.shaderIntegerDotProduct;
  e13.subgroupSizeControl = s13.subgroupSizeControl;
  e13.computeFullSubgroups = s13.computeFullSubgroups;
  e13.maintenance4 = s13.maintenance4;

  // Float atomics (qv::atomic_add / atomic_exchange on float) come from VK_EXT_shader_atomic_float.
  std::vector<const char*> extensions;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop_features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2_features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (e12.shaderFloat16) ctx->offers.insert("feature:shaderFloat16");
  if (e12.vulkanMemoryModel) ctx->offers.insert("feature:vulkanMemoryModel");
  if (e13.shaderIntegerDotProduct) ctx->offers.insert("feature:shaderIntegerDotProduct");
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_info{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  executable_info.pipelineExecutableInfo = VK_TRUE;
  {
    uint32_t count = 0;
    vk.vkEnumerateDeviceExtensionProperties(ctx->physical, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> props(count);
    vk.vkEnumerateDeviceExtensionProperties(ctx->physical, nullptr, &count, props.data());
    for (const auto& p : props)
      if (std::string_view(p.extensionName) == VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) {
        VkPhysicalDeviceShaderAtomicFloatFeaturesEXT have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
        VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        query.pNext = &have;
        vk.vkGetPhysicalDeviceFeatures2(ctx->physical, &query);
        atomic_float.shaderBufferFloat32Atomics = have.shaderBufferFloat32Atomics;
        atomic_float.shaderBufferFloat32AtomicAdd = have.shaderBufferFloat32AtomicAdd;
        atomic_float.shaderSharedFloat32Atomics = have.shaderSharedFloat32Atomics;
        atomic_float.shaderSharedFloat32AtomicAdd = have.shaderSharedFloat32AtomicAdd;
        extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
        atomic_float.pNext = enabled.pNext;
        enabled.pNext = &atomic_float;
      }
    for (const auto& p : props)
      if (std::string_view(p.extensionName) == VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)
        enable_cooperative_matrix(*ctx, enabled, coop_features, extensions);
    // The NV extension builds on the KHR one: only where that was enabled.
    if (coop_features.cooperativeMatrix)
      for (const auto& p : props)
        if (std::string_view(p.extensionName) == VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME)
          enable_cooperative_matrix2(*ctx, enabled, coop2_features, extensions);
    ctx->creation_feedback = has13;
    for (const auto& p : props)
      if (!has13 && std::string_view(p.extensionName) == VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME) {
        extensions.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
        ctx->creation_feedback = true;
      }
    const char* stats = std::getenv("QUIVER_VULKAN_PIPELINE_STATS");
    if (stats && std::string_view(stats) == "1")
      for (const auto& p : props)
        if (std::string_view(p.extensionName) == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) {
          extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
          executable_info.pNext = enabled.pNext;
          enabled.pNext = &executable_info;
          ctx->pipeline_statistics = true;
        }
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = ctx->queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.pNext = &enabled;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  device_info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  device_info.ppEnabledExtensionNames = extensions.data();
  VkResult result = vk.vkCreateDevice(ctx->physical, &device_info, nullptr, &ctx->device);
  if (result != VK_SUCCESS) {
    ctx->device = VK_NULL_HANDLE;
    why_not = "vkCreateDevice failed on " + ctx->name + ": " + result_name(result);
    return nullptr;
  }
  if (!vk.load_device(ctx->device, why_not)) return nullptr;
  vk.vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);

  // Unified memory: CPU and integrated devices whose device-local memory is host-visible.
  // QUIVER_VULKAN_STAGING=1 forces the staged path (tests use it to cover the discrete-GPU path).
  const char* force_staging = std::getenv("QUIVER_VULKAN_STAGING");
  const bool small_device = chosen->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ||
                            chosen->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  bool has_unified_type = false;
  for (uint32_t i = 0; i < ctx->memory_properties.memoryTypeCount; ++i)
    has_unified_type |= (ctx->memory_properties.memoryTypes[i].propertyFlags & unified) == unified;
  ctx->unified_memory = small_device && has_unified_type &&
                        !(force_staging && std::strcmp(force_staging, "1") == 0);

  try {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = ctx->queue_family;
    ctx->check(vk.vkCreateCommandPool(ctx->device, &pool_info, nullptr, &ctx->command_pool_),
               "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cb_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cb_info.commandPool = ctx->command_pool_;
    cb_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cb_info.commandBufferCount = 1;
    ctx->check(vk.vkAllocateCommandBuffers(ctx->device, &cb_info, &ctx->transfer_commands_),
               "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    ctx->check(vk.vkCreateFence(ctx->device, &fence_info, nullptr, &ctx->transfer_fence_), "vkCreateFence");
  } catch (const Error& e) {
    why_not = e.what();
    return nullptr;
  }
  return ctx;
}

Context::~Context() {
  // vkGetFenceStatus is the last device command in the table: when it is loaded, all are.
  if (device && vk.vkGetFenceStatus) {
    drain_noexcept();
    vk.vkDeviceWaitIdle(device);
    for (auto& slot : slots_) destroy_slot(*slot);
    release(staging_);
    if (transfer_fence_) vk.vkDestroyFence(device, transfer_fence_, nullptr);
    for (auto& t : timers_) {
      if (t->fence) vk.vkDestroyFence(device, t->fence, nullptr);
      if (t->pool) vk.vkDestroyQueryPool(device, t->pool, nullptr);
    }
    if (command_pool_) vk.vkDestroyCommandPool(device, command_pool_, nullptr);
    vk.vkDestroyDevice(device, nullptr);
  }
  // The instance is the process's (shared_instance): it outlives every Context.
}

void Context::check(VkResult result, const std::string& what) const {
  if (result == VK_SUCCESS) return;
  const bool oom = result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY;
  throw Error(oom ? ErrorCode::OutOfMemory : ErrorCode::DeviceError,
              "vulkan: " + what + " failed on " + name + ": " + result_name(result));
}

// ---------------------------------------------------------------------------------------------
// Memory

Allocation Context::allocate(VkDeviceSize size, VkBufferUsageFlags usage, Memory memory,
                             const std::string& what) {
  const bool host_visible = memory != Memory::Device;
  Allocation a;
  // Vulkan has no empty buffers; a zero-byte request gets a small one that nothing reads.
  a.size = std::max<VkDeviceSize>(size, 16);
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = a.size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vk.vkCreateBuffer(device, &info, nullptr, &a.buffer), "vkCreateBuffer for " + what);
  try {
    VkMemoryRequirements req;
    vk.vkGetBufferMemoryRequirements(device, a.buffer, &req);
    const std::vector<uint32_t> types = memory_type_candidates(memory_properties, req.memoryTypeBits, memory);
    if (types.empty())
      throw Error(ErrorCode::DeviceError, "vulkan: " + name + " has no memory type suitable for " + what);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    VkResult r = allocate_first_fitting(types, [&](uint32_t type) {
      alloc.memoryTypeIndex = type;
      VkResult result = vk.vkAllocateMemory(device, &alloc, nullptr, &a.memory);
      if (result != VK_SUCCESS) a.memory = VK_NULL_HANDLE;
      return result;
    });
    check(r, "vkAllocateMemory of " + std::to_string(req.size) + " bytes for " + what);
    check(vk.vkBindBufferMemory(device, a.buffer, a.memory, 0), "vkBindBufferMemory for " + what);
    if (host_visible)
      check(vk.vkMapMemory(device, a.memory, 0, VK_WHOLE_SIZE, 0, &a.mapped), "vkMapMemory for " + what);
  } catch (...) {
    release(a);
    throw;
  }
  return a;
}

void Context::release(Allocation& a) noexcept {
  if (a.buffer) vk.vkDestroyBuffer(device, a.buffer, nullptr);
  if (a.memory) vk.vkFreeMemory(device, a.memory, nullptr);   // unmaps implicitly
  a = Allocation{};
}

VkDeviceSize Context::scalar_stride() const {
  return std::max<VkDeviceSize>(16, properties.limits.minStorageBufferOffsetAlignment);
}

// ---------------------------------------------------------------------------------------------
// Launch slots

LaunchSlot& Context::acquire_slot(uint32_t descriptors, VkDeviceSize args_bytes) {
  flush_held();
  retire_completed();
  if (free_.empty() && !pending_.empty() && slots_.size() >= kMaxInFlight) wait_and_retire_front("launch");
  if (free_.empty()) {
    auto slot = std::make_unique<LaunchSlot>();
    VkCommandBufferAllocateInfo cb_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cb_info.commandPool = command_pool_;
    cb_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cb_info.commandBufferCount = 1;
    check(vk.vkAllocateCommandBuffers(device, &cb_info, &slot->commands), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult r = vk.vkCreateFence(device, &fence_info, nullptr, &slot->fence);
    if (r != VK_SUCCESS) {
      destroy_slot(*slot);
      check(r, "vkCreateFence");
    }
    free_.push_back(slot.get());
    slots_.push_back(std::move(slot));
  }
  LaunchSlot& slot = *free_.back();
  free_.pop_back();
  try {
    if (slot.pool_capacity < descriptors || !slot.pool) {
      if (slot.pool) vk.vkDestroyDescriptorPool(device, slot.pool, nullptr);
      slot.pool = VK_NULL_HANDLE;
      slot.pool_capacity = 0;
      const uint32_t capacity = std::max(descriptors, kMinPoolDescriptors);
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, capacity};
      VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      info.maxSets = 1;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      check(vk.vkCreateDescriptorPool(device, &info, nullptr, &slot.pool), "vkCreateDescriptorPool");
      slot.pool_capacity = capacity;
    } else {
      check(vk.vkResetDescriptorPool(device, slot.pool, 0), "vkResetDescriptorPool");
    }
    if (slot.args.size < args_bytes) {
      release(slot.args);
      slot.args = allocate(std::max<VkDeviceSize>(args_bytes, 256), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                           Memory::Upload, "kernel scalar arguments");
    }
  } catch (...) {
    free_.push_back(&slot);
    throw;
  }
  return slot;
}

void Context::submit(LaunchSlot& slot) {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &slot.commands;
  VkResult r = vk.vkQueueSubmit(queue, 1, &submit, slot.fence);
  if (r != VK_SUCCESS) {
    free_.push_back(&slot);
    check(r, "vkQueueSubmit of kernel '" + slot.kernel + "'");
  }
  if (slot.starts_timer && slot.starts_timer == armed_timer_) armed_timer_ = nullptr;
  pending_.push_back(&slot);
}

void Context::abandon(LaunchSlot& slot) noexcept { free_.push_back(&slot); }

VkCommandBuffer Context::begin_secondary() {
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo cb_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb_info.commandPool = command_pool_;
  cb_info.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
  cb_info.commandBufferCount = 1;
  check(vk.vkAllocateCommandBuffers(device, &cb_info, &commands), "vkAllocateCommandBuffers (a graph)");
  VkCommandBufferInheritanceInfo inheritance{VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  begin.pInheritanceInfo = &inheritance;
  VkResult r = vk.vkBeginCommandBuffer(commands, &begin);
  if (r != VK_SUCCESS) {
    free_secondary(commands);
    check(r, "vkBeginCommandBuffer (a graph)");
  }
  return commands;
}

void Context::free_secondary(VkCommandBuffer commands) noexcept {
  if (commands) vk.vkFreeCommandBuffers(device, command_pool_, 1, &commands);
}

void Context::submit_secondary(VkCommandBuffer commands, const std::string& name) {
  LaunchSlot& slot = acquire_slot(0, 0);
  slot.kernel = name;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkResult r = vk.vkBeginCommandBuffer(slot.commands, &begin);
  if (r != VK_SUCCESS) {
    abandon(slot);
    check(r, "vkBeginCommandBuffer of " + name);
  }
  full_barrier(vk, slot.commands);
  record_timer_start(slot);
  vk.vkCmdExecuteCommands(slot.commands, 1, &commands);
  finish_launch(slot);
}

void Context::finish_launch(LaunchSlot& slot) {
  held_ = &slot;   // acquire_slot flushed the one before
  if (!running_timer_) flush_held();
}

void Context::flush_held() {
  LaunchSlot* slot = std::exchange(held_, nullptr);
  if (!slot) return;
  full_barrier(vk, slot->commands);
  VkResult r = vk.vkEndCommandBuffer(slot->commands);
  if (r != VK_SUCCESS) {
    free_.push_back(slot);
    check(r, "vkEndCommandBuffer of kernel '" + slot->kernel + "'");
  }
  submit(*slot);
}

void Context::retire_completed() {
  while (!pending_.empty()) {
    LaunchSlot* slot = pending_.front();
    VkResult r = vk.vkGetFenceStatus(device, slot->fence);
    if (r == VK_NOT_READY) return;
    if (r != VK_SUCCESS) wait_and_retire_front("launch");   // reports the failure
    else {
      vk.vkResetFences(device, 1, &slot->fence);
      pending_.pop_front();
      free_.push_back(slot);
    }
  }
}

void Context::wait_and_retire_front(const std::string& what) {
  LaunchSlot* slot = pending_.front();
  VkResult r = vk.vkWaitForFences(device, 1, &slot->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    // The device is lost or out of memory; the slot cannot be reused safely, so it stays pending.
    const bool oom = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
    throw Error(oom ? ErrorCode::OutOfMemory : ErrorCode::DeviceError,
                "vulkan: " + what + ": waiting for kernel '" + slot->kernel + "' failed on " + name +
                    ": " + result_name(r));
  }
  vk.vkResetFences(device, 1, &slot->fence);
  pending_.pop_front();
  free_.push_back(slot);
}

void Context::drain(const std::string& what) {
  flush_held();
  while (!pending_.empty()) wait_and_retire_front(what);
}

void Context::drain_noexcept() noexcept {
  try {
    drain("cleanup");
  } catch (...) {
    // The device is lost: the driver has abandoned the work, so nothing is still using our
    // resources; forget the submissions so they can be destroyed.
    if (held_) free_.push_back(std::exchange(held_, nullptr));
    pending_.clear();
  }
}

void Context::destroy_slot(LaunchSlot& slot) noexcept {
  if (slot.pool) vk.vkDestroyDescriptorPool(device, slot.pool, nullptr);
  if (slot.fence) vk.vkDestroyFence(device, slot.fence, nullptr);
  if (slot.commands) vk.vkFreeCommandBuffers(device, command_pool_, 1, &slot.commands);
  release(slot.args);
  slot = LaunchSlot{};
}

// ---------------------------------------------------------------------------------------------
// Timestamps (Device::elapsed_ms)

TimerSlot& Context::new_timer() {
  if (timestamp_bits_ == 0) {
    uint32_t count = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
    timestamp_bits_ = queue_family < count ? families[queue_family].timestampValidBits : 0;
    if (timestamp_bits_ == 0 || properties.limits.timestampPeriod <= 0)
      throw Error(ErrorCode::NotFound, "vulkan: " + name + " has no timestamps on its compute queue");
  }
  auto t = std::make_unique<TimerSlot>();
  TimerSlot& timer = *t;
  timers_.push_back(std::move(t));   // owned from here on: the destructor frees what was made
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = 2;
  check(vk.vkCreateQueryPool(device, &info, nullptr, &timer.pool), "vkCreateQueryPool");
  VkCommandBufferAllocateInfo cb_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb_info.commandPool = command_pool_;
  cb_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb_info.commandBufferCount = 2;
  check(vk.vkAllocateCommandBuffers(device, &cb_info, timer.commands), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vk.vkCreateFence(device, &fence_info, nullptr, &timer.fence), "vkCreateFence");
  // Recorded once: a barrier (its first scope is everything submitted before, on this queue),
  // then the timestamp once all of that has finished.
  for (uint32_t q = 0; q < 2; ++q) {
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vk.vkBeginCommandBuffer(timer.commands[q], &begin), "vkBeginCommandBuffer");
    if (q == 0) vk.vkCmdResetQueryPool(timer.commands[q], timer.pool, 0, 2);
    full_barrier(vk, timer.commands[q]);
    vk.vkCmdWriteTimestamp(timer.commands[q], VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timer.pool, q);
    check(vk.vkEndCommandBuffer(timer.commands[q]), "vkEndCommandBuffer");
  }
  return timer;
}

TimerSlot& Context::start_timer() {
  TimerSlot* timer = nullptr;
  if (!free_timers_.empty()) {
    timer = free_timers_.back();
    free_timers_.pop_back();
  } else {
    timer = &new_timer();
  }
  timer->ended = false;
  flush_held();
  armed_timer_ = timer;   // a timer started before and never ended just loses its start
  running_timer_ = timer;
  return *timer;
}

void Context::record_timer_start(LaunchSlot& slot) {
  slot.starts_timer = armed_timer_;   // disarmed by submit(): an abandoned launch leaves it armed
  if (!armed_timer_) return;
  vk.vkCmdResetQueryPool(slot.commands, armed_timer_->pool, 0, 2);
  vk.vkCmdWriteTimestamp(slot.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, armed_timer_->pool, 0);
}

void Context::stop_timer(TimerSlot& timer) {
  const bool ends_held = held_ && running_timer_ == &timer;
  if (running_timer_ == &timer) running_timer_ = nullptr;
  if (ends_held) {
    // Right after the dispatch (bottom of pipe: once it has finished), before the closing
    // barrier flush_held records, as the start follows the opening one: the pair brackets the
    // dispatch, as CUDA's events bracket a kernel.
    vk.vkCmdWriteTimestamp(held_->commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timer.pool, 1);
    flush_held();
    // Signals once everything submitted so far (the launch above included) has finished.
    check(vk.vkQueueSubmit(queue, 0, nullptr, timer.fence), "vkQueueSubmit of a timer's fence");
    timer.ended = true;
    return;
  }
  flush_held();
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  if (armed_timer_ == &timer) {   // no launch recorded the start: a start of its own, just before the end
    armed_timer_ = nullptr;
    submit.pCommandBuffers = &timer.commands[0];
    check(vk.vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit of a timestamp");
  }
  submit.pCommandBuffers = &timer.commands[1];
  check(vk.vkQueueSubmit(queue, 1, &submit, timer.fence), "vkQueueSubmit of a timestamp");
  timer.ended = true;
}

double Context::timer_ms(TimerSlot& timer) {
  VkResult r = vk.vkWaitForFences(device, 1, &timer.fence, VK_TRUE, UINT64_MAX);
  vk.vkResetFences(device, 1, &timer.fence);
  timer.ended = false;
  free_timers_.push_back(&timer);
  check(r, "waiting for the end timestamp");
  drain("timer stop");
  uint64_t ticks[2] = {};
  check(vk.vkGetQueryPoolResults(device, timer.pool, 0, 2, sizeof(ticks), ticks, sizeof(uint64_t),
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  uint64_t mask = timestamp_bits_ >= 64 ? ~uint64_t(0) : (uint64_t(1) << timestamp_bits_) - 1;
  uint64_t delta = (ticks[1] - ticks[0]) & mask;
  return double(delta) * properties.limits.timestampPeriod * 1e-6;
}

void Context::release_timer(TimerSlot& timer) noexcept {
  if (armed_timer_ == &timer) armed_timer_ = nullptr;
  if (running_timer_ == &timer) running_timer_ = nullptr;   // a held launch goes with the next flush
  if (timer.ended) {   // its end may still be pending: never hand out a pending command buffer
    if (vk.vkWaitForFences(device, 1, &timer.fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS) return;   // leaked, not reused
    vk.vkResetFences(device, 1, &timer.fence);
    timer.ended = false;
  }
  free_timers_.push_back(&timer);
}

// ---------------------------------------------------------------------------------------------
// Staged transfers

void Context::run_transfer(const Allocation& buffer, VkDeviceSize offset, VkDeviceSize bytes,
                           bool to_device) {
  flush_held();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vk.vkBeginCommandBuffer(transfer_commands_, &begin), "vkBeginCommandBuffer");
  full_barrier(vk, transfer_commands_);
  VkBufferCopy region{};
  region.size = bytes;
  if (to_device) {
    region.dstOffset = offset;
    vk.vkCmdCopyBuffer(transfer_commands_, staging_.buffer, buffer.buffer, 1, &region);
  } else {
    region.srcOffset = offset;
    vk.vkCmdCopyBuffer(transfer_commands_, buffer.buffer, staging_.buffer, 1, &region);
  }
  full_barrier(vk, transfer_commands_);
  check(vk.vkEndCommandBuffer(transfer_commands_), "vkEndCommandBuffer");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &transfer_commands_;
  const std::string what = to_device ? "upload" : "download";
  check(vk.vkQueueSubmit(queue, 1, &submit, transfer_fence_), "vkQueueSubmit of " + what);
  VkResult r = vk.vkWaitForFences(device, 1, &transfer_fence_, VK_TRUE, UINT64_MAX);
  vk.vkResetFences(device, 1, &transfer_fence_);
  check(r, "waiting for " + what);
}

void Context::ensure_staging(size_t bytes) {
  // Sized to the transfer (at least 1 MiB, at most kStagingBytes); larger ones go in chunks.
  const VkDeviceSize want = std::clamp<VkDeviceSize>(bytes, 1 << 20, kStagingBytes);
  if (staging_.buffer && staging_.size >= want) return;
  release(staging_);
  staging_ = allocate(want, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, Memory::Host,
                      "the staging buffer");
}

void Context::copy_to_device(const Allocation& dst, const void* src, size_t bytes) {
  ensure_staging(bytes);
  const auto* from = static_cast<const std::byte*>(src);
  for (size_t done = 0; done < bytes;) {
    const size_t chunk = std::min<size_t>(bytes - done, staging_.size);
    std::memcpy(staging_.mapped, from + done, chunk);
    run_transfer(dst, done, chunk, true);
    done += chunk;
  }
}

void Context::copy_from_device(const Allocation& src, void* dst, size_t bytes) {
  ensure_staging(bytes);
  auto* to = static_cast<std::byte*>(dst);
  for (size_t done = 0; done < bytes;) {
    const size_t chunk = std::min<size_t>(bytes - done, staging_.size);
    run_transfer(src, done, chunk, false);
    std::memcpy(to + done, staging_.mapped, chunk);
    done += chunk;
  }
}

}  // namespace quiver::backend::vulkan
