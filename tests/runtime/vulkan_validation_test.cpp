// The Vulkan backend's validation hook (runtime/backends/vulkan/vulkan_validation.h): with
// QUIVER_VULKAN_VALIDATION=1 a Context runs under VK_LAYER_KHRONOS_validation and every warning
// or error the layer reports is printed as "quiver: Vulkan validation ..." and counted. The
// end-to-end ctests (kernels.vulkan_validation, ops.vulkan_validation) fail on that line; this
// test shows that the line does appear for a real misuse made through the Context's own device,
// so a clean run there means something. Also: a requested but missing layer is a clear error.
#include <gtest/gtest.h>

#include <string>

#include "backends/vulkan/vulkan_context.h"
#include "scoped_env.h"

namespace {

using quiver::backend::vulkan::Context;
using quiver::backend::vulkan::Validation;
using quiver::test::ScopedEnv;

std::shared_ptr<Context> open_first(std::string& why_not) {
  size_t count = 0;
  return Context::open(0, count, why_not);
}

TEST(VulkanValidation, ReportsAMisuseOnTheContextsDevice) {
  std::string why_not;
  {
    ScopedEnv off("QUIVER_VULKAN_VALIDATION", nullptr);
    if (!open_first(why_not)) GTEST_SKIP() << "no Vulkan device: " << why_not;
  }
  ScopedEnv on("QUIVER_VULKAN_VALIDATION", "1");
  std::shared_ptr<Context> ctx = open_first(why_not);
  ASSERT_TRUE(ctx) << why_not;
  ASSERT_TRUE(ctx->validation);
  EXPECT_EQ(Validation::message_count(), 0u) << "opening a device must be clean";

  // A buffer with no usage bits (VUID-VkBufferCreateInfo-usage-requiredbitmask). Drivers
  // accept it; only the layer objects.
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 256;
  info.usage = 0;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  testing::internal::CaptureStderr();
  VkResult result = ctx->vk.vkCreateBuffer(ctx->device, &info, nullptr, &buffer);
  const std::string err = testing::internal::GetCapturedStderr();
  if (result == VK_SUCCESS && buffer) ctx->vk.vkDestroyBuffer(ctx->device, buffer, nullptr);
  EXPECT_GE(Validation::message_count(), 1u);
  EXPECT_NE(err.find("quiver: Vulkan validation error:"), std::string::npos) << err;
  EXPECT_NE(err.find("VUID-VkBufferCreateInfo-usage-requiredbitmask"), std::string::npos) << err;
}

TEST(VulkanValidation, MissingLayerIsAClearError) {
  std::string why_not;
  {
    ScopedEnv off("QUIVER_VULKAN_VALIDATION", nullptr);
    if (!open_first(why_not)) GTEST_SKIP() << "no Vulkan device: " << why_not;
  }
  ScopedEnv on("QUIVER_VULKAN_VALIDATION", "1");
  // The loader looks for explicit layers only where VK_LAYER_PATH says: an empty directory.
  ScopedEnv path("VK_LAYER_PATH", testing::TempDir().c_str());
  EXPECT_FALSE(open_first(why_not));
  EXPECT_NE(why_not.find("VK_ERROR_LAYER_NOT_PRESENT"), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("vulkan-validationlayers"), std::string::npos) << why_not;
}

}  // namespace
