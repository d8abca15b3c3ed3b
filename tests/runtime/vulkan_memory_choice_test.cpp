// The Vulkan backend's choice of memory type by use (runtime/backends/vulkan/memory_choice.h),
// against the memory types of devices written out here: a discrete GPU with a BAR type
// (device-local and host-visible), one without, and an integrated GPU whose every type is both;
// and the allocation's walk over those types against a driver written out as results per type.
#include <functional>

#include <gtest/gtest.h>

#include "backends/vulkan/memory_choice.h"

namespace quiver::backend::vulkan {
namespace {

constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
constexpr VkMemoryPropertyFlags kHost = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

VkPhysicalDeviceMemoryProperties types(std::initializer_list<VkMemoryPropertyFlags> flags) {
  VkPhysicalDeviceMemoryProperties p{};
  for (VkMemoryPropertyFlags f : flags) p.memoryTypes[p.memoryTypeCount++].propertyFlags = f;
  return p;
}

using Types = std::vector<uint32_t>;

TEST(VulkanMemoryChoice, ScalarArgumentsGoToTheBarOfADiscreteGpuThenToHostMemory) {
  // A discrete GPU's usual list: device-local, host coherent, host cached, the BAR.
  const auto gpu = types({kLocal, kHost, kHost | kCached, kLocal | kHost});
  EXPECT_EQ(memory_type_candidates(gpu, ~0u, MemoryUse::Upload), (Types{3, 1, 2}));
  EXPECT_EQ(memory_type_candidates(gpu, ~0u, MemoryUse::Host), (Types{2, 1, 3}));   // downloads: cached first
  EXPECT_EQ(memory_type_candidates(gpu, ~0u, MemoryUse::Device), (Types{0, 3}));
  EXPECT_EQ(memory_type_candidates(gpu, ~0u, MemoryUse::Unified), (Types{3}));
  // Without the BAR type the scalars stay in host memory, as before.
  const auto no_bar = types({kLocal, kHost, kHost | kCached});
  EXPECT_EQ(memory_type_candidates(no_bar, ~0u, MemoryUse::Upload), (Types{1, 2}));
  EXPECT_TRUE(memory_type_candidates(no_bar, ~0u, MemoryUse::Unified).empty());
}

TEST(VulkanMemoryChoice, TheBufferDecidesWhichTypesAreAllowed) {
  const auto gpu = types({kLocal, kHost, kHost | kCached, kLocal | kHost});
  EXPECT_EQ(memory_type_candidates(gpu, 0b0110u, MemoryUse::Upload), (Types{1, 2}));   // the BAR type not allowed
  EXPECT_TRUE(memory_type_candidates(gpu, 0b0001u, MemoryUse::Upload).empty());
  EXPECT_TRUE(memory_type_candidates(gpu, 0u, MemoryUse::Device).empty());
}

TEST(VulkanMemoryChoice, AnIntegratedGpuUsesItsOneKindOfMemoryForEverything) {
  const auto igpu = types({kLocal | kHost, kLocal | kHost | kCached});
  EXPECT_EQ(memory_type_candidates(igpu, ~0u, MemoryUse::Upload), (Types{0, 1}));
  EXPECT_EQ(memory_type_candidates(igpu, ~0u, MemoryUse::Host), (Types{1, 0}));
  EXPECT_EQ(memory_type_candidates(igpu, ~0u, MemoryUse::Unified), (Types{1, 0}));   // buffers read back: cached
}

// A driver that answers each memory type with a fixed result, recording the types tried.
struct FakeDriver {
  std::vector<VkResult> by_type;
  Types tried;
  VkResult operator()(uint32_t type) {
    tried.push_back(type);
    return by_type.at(type);
  }
};

TEST(VulkanMemoryChoice, AFullHeapPassesTheAllocationToTheNextType) {
  // The BAR type (3) full, as a 256 MB BAR heap is after a few allocations: host memory (1) takes it.
  FakeDriver d{{VK_SUCCESS, VK_SUCCESS, VK_SUCCESS, VK_ERROR_OUT_OF_DEVICE_MEMORY}, {}};
  EXPECT_EQ(allocate_first_fitting({3, 1, 2}, std::ref(d)), VK_SUCCESS);
  EXPECT_EQ(d.tried, (Types{3, 1}));
  // Out of host memory counts as full too.
  FakeDriver h{{VK_SUCCESS, VK_ERROR_OUT_OF_HOST_MEMORY, VK_SUCCESS, VK_ERROR_OUT_OF_DEVICE_MEMORY}, {}};
  EXPECT_EQ(allocate_first_fitting({3, 1, 2}, std::ref(h)), VK_SUCCESS);
  EXPECT_EQ(h.tried, (Types{3, 1, 2}));
}

TEST(VulkanMemoryChoice, OtherFailuresStopTheWalkAndEveryHeapFullIsOutOfMemory) {
  FakeDriver lost{{VK_SUCCESS, VK_SUCCESS, VK_SUCCESS, VK_ERROR_DEVICE_LOST}, {}};
  EXPECT_EQ(allocate_first_fitting({3, 1, 2}, std::ref(lost)), VK_ERROR_DEVICE_LOST);
  EXPECT_EQ(lost.tried, (Types{3}));
  FakeDriver full{{VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_ERROR_OUT_OF_HOST_MEMORY}, {}};
  EXPECT_EQ(allocate_first_fitting({0, 1}, std::ref(full)), VK_ERROR_OUT_OF_HOST_MEMORY);
  EXPECT_EQ(full.tried, (Types{0, 1}));
  FakeDriver none{{}, {}};
  EXPECT_EQ(allocate_first_fitting({}, std::ref(none)), VK_ERROR_OUT_OF_DEVICE_MEMORY);
  EXPECT_TRUE(none.tried.empty());
}

}  // namespace
}  // namespace quiver::backend::vulkan
