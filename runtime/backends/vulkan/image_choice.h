// Which SPIR-V images of a fat binary a Vulkan device runs: images carry requirements
// (format::Image::requirements, docs/format.md "Image requirements") and the device offers a set
// of them (device_offers); for each kernel, the backend loads the best image holding it whose
// every requirement is offered.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "vulkan_api.h"

// VK_KHR_cooperative_matrix, for Vulkan headers older than 1.3.255 (Debian 12 ships 1.3.239).
// Values from the Vulkan registry.
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR =
    static_cast<VkStructureType>(1000506000);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    static_cast<VkStructureType>(1000506001);
struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize;
  uint32_t AType, BType, CType, ResultType;   // VkComponentTypeKHR
  VkBool32 saturatingAccumulation;
  uint32_t scope;                             // VkScopeKHR
};
struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t*, VkCooperativeMatrixPropertiesKHR*);
#endif

// VK_NV_cooperative_matrix2 (workgroup-scope cooperative matrices of flexible sizes), for Vulkan
// headers older than 1.3.298. Values from the Vulkan registry.
#ifndef VK_NV_cooperative_matrix2
#define VK_NV_cooperative_matrix2 1
#define VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME "VK_NV_cooperative_matrix2"
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV =
    static_cast<VkStructureType>(1000593000);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV =
    static_cast<VkStructureType>(1000593001);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV =
    static_cast<VkStructureType>(1000593002);
struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrixWorkgroupScope;
  VkBool32 cooperativeMatrixFlexibleDimensions;
  VkBool32 cooperativeMatrixReductions;
  VkBool32 cooperativeMatrixConversions;
  VkBool32 cooperativeMatrixPerElementOperations;
  VkBool32 cooperativeMatrixTensorAddressing;
  VkBool32 cooperativeMatrixBlockLoads;
};
struct VkPhysicalDeviceCooperativeMatrix2PropertiesNV {
  VkStructureType sType;
  void* pNext;
  uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
  uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension;
  uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory;
};
struct VkCooperativeMatrixFlexibleDimensionsPropertiesNV {
  VkStructureType sType;
  void* pNext;
  uint32_t MGranularity, NGranularity, KGranularity;
  uint32_t AType, BType, CType, ResultType;   // VkComponentTypeKHR
  VkBool32 saturatingAccumulation;
  uint32_t scope;                             // VkScopeKHR
  uint32_t workgroupInvocations;
};
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
    VkPhysicalDevice, uint32_t*, VkCooperativeMatrixFlexibleDimensionsPropertiesNV*);
#endif

namespace quiver::backend::vulkan {

// One cooperative-matrix configuration as images name it:
// "cooperative_matrix:16x16x16:f16*f16+f32:subgroup" (M x N x K, A * B + C, scope), with
// "->R" before the scope where the result type R differs from C.
std::string cooperative_matrix_requirement(const VkCooperativeMatrixPropertiesKHR& p);

// A workgroup-scope flexible-dimensions configuration as an offer:
// "cooperative_matrix_workgroup_granularity:32x32x16:f16*f16+f32:256" (M, N, K granularity, types,
// workgroup invocations), or "" for other scopes and types this runtime does not name.
std::string cooperative_matrix_granularity_offer(const VkCooperativeMatrixFlexibleDimensionsPropertiesNV& p);
// Whether `offers` meet requirement `r`: it is one of them, or it is
// "cooperative_matrix_workgroup:MxNxK:types:T" and an offered granularity for those types and T
// divides M, N and K, none above the offered "cooperative_matrix_workgroup_max_dimension:D".
bool requirement_offered(const std::set<std::string>& offers, const std::string& r);

// "subgroup_size:N" when every subgroup of a SPIR-V 1.6 compute shader has N invocations on the
// device (its minimum and maximum subgroup sizes are both N), else "".
std::string subgroup_size_requirement(uint32_t min_subgroup_size, uint32_t max_subgroup_size);

// Which SPIR-V image serves each kernel of a fat binary (the SPIR-V target writes one image per
// kernel and arch; docs/format.md "SPIR-V images").
struct SpirvChoice {
  std::vector<int> image;          // per manifest kernel: an index into manifest.images, or -1
  std::vector<std::string> why;    // per manifest kernel without an image: why; "" otherwise
  // Which images were taken, by arch: "vulkan1.3_coopmat (68 kernels), vulkan1.2 (3 kernels)".
  std::string taken;
  // Why images with requirements were not: "not vulkan1.3_coopmat needs X (3 kernels); ..."
  // ("" when none was skipped).
  std::string skipped;
  bool any() const;   // whether some kernel has an image
};

// Per kernel, among the SPIR-V images holding it: usable ones have arch "vulkan<major>.<minor>"
// with an optional "_<variant>" suffix, a version the device supports, and every requirement in
// `offers`; the best is the newest version, then the one with the most requirements (the most
// specialised). A kernel with no usable image gets `why`, naming what its images need. Time
// linear in the manifest.
SpirvChoice choose_spirv_images(const format::Manifest& manifest, uint32_t device_api_version,
                                const std::set<std::string>& offers);

// "vulkan1.2" and "vulkan1.3_coopmat" -> VK_API_VERSION_1_2; 0 when the arch is not of that form.
uint32_t parse_vulkan_arch(const std::string& arch);

}  // namespace quiver::backend::vulkan
