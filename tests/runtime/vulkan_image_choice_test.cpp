// The Vulkan backend's choice among a fat binary's SPIR-V images (runtime/backends/vulkan/
// image_choice.h): for each kernel, a device gets the most specialised image holding it whose
// every requirement it offers, and the portable one when it lacks a feature.
#include <gtest/gtest.h>

#include "backends/vulkan/image_choice.h"

namespace quiver::backend::vulkan {
namespace {

format::Image spirv(const std::string& arch, std::vector<std::string> requirements = {},
                    std::vector<std::string> kernels = {"k"}) {
  format::Image image;
  image.target = format::Target::SPIRV;
  image.arch = arch;
  image.requirements = std::move(requirements);
  image.kernels = std::move(kernels);
  return image;
}

format::Kernel kernel(const std::string& symbol) {
  format::Kernel k;
  k.name = symbol + "_name";
  k.symbol = symbol;
  return k;
}

// The image chosen for the one kernel "k" of `m`; `report` gets what was skipped, `why` why none.
int choose_spirv_image(format::Manifest m, uint32_t version, const std::set<std::string>& offers,
                       std::string& report, std::string& why) {
  m.kernels = {kernel("k")};
  SpirvChoice choice = choose_spirv_images(m, version, offers);
  report = choice.skipped;
  why = choice.why[0];
  return choice.image[0];
}

const std::vector<std::string> kCoop = {"extension:VK_KHR_cooperative_matrix",
                                        "cooperative_matrix:16x16x16:f16*f16+f32:subgroup",
                                        "feature:shaderFloat16", "feature:vulkanMemoryModel"};

format::Manifest two_images() {
  format::Manifest m;
  format::Image ptx;
  ptx.target = format::Target::PTX;
  ptx.arch = "sm_80";
  m.images = {ptx, spirv("vulkan1.3_coopmat", kCoop), spirv("vulkan1.2")};
  return m;
}

TEST(VulkanImageChoice, DeviceWithTheFeaturesGetsTheCooperativeMatrixImage) {
  std::set<std::string> offers(kCoop.begin(), kCoop.end());
  offers.insert("cooperative_matrix:16x16x16:f16*f16+f16:subgroup");   // offers beyond the image's do no harm
  std::string report, why;
  EXPECT_EQ(choose_spirv_image(two_images(), VK_API_VERSION_1_3, offers, report, why), 1);
  EXPECT_EQ(report, "");
}

TEST(VulkanImageChoice, DeviceWithoutAFeatureGetsThePortableImageAndIsToldWhy) {
  for (size_t dropped = 0; dropped < kCoop.size(); ++dropped) {
    std::set<std::string> offers(kCoop.begin(), kCoop.end());
    offers.erase(kCoop[dropped]);
    std::string report, why;
    EXPECT_EQ(choose_spirv_image(two_images(), VK_API_VERSION_1_3, offers, report, why), 2) << kCoop[dropped];
    EXPECT_NE(report.find("vulkan1.3_coopmat needs " + kCoop[dropped]), std::string::npos) << report;
  }
}

TEST(VulkanImageChoice, NoUsableImageSaysWhatTheFileHas) {
  format::Manifest m;
  m.images = {spirv("vulkan1.3_coopmat", kCoop), spirv("vulkan1.4")};
  std::string report, why;
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, {}, report, why), -1);
  EXPECT_NE(why.find("vulkan1.3_coopmat needs extension:VK_KHR_cooperative_matrix"), std::string::npos) << why;
  EXPECT_NE(why.find("the file has for it: spirv vulkan1.3_coopmat, spirv vulkan1.4"), std::string::npos) << why;
}

// One image per kernel and arch (the SPIR-V target's layout): each kernel is chosen on its own
// images, so a device without cooperative matrices gets the tile kernel's portable image while
// the other kernel keeps its (requirement-free) Vulkan 1.3 one; the summaries count kernels.
TEST(VulkanImageChoice, EachKernelGetsTheBestOfItsOwnImages) {
  format::Manifest m;
  m.kernels = {kernel("tiles"), kernel("norm"), kernel("old")};
  m.images = {spirv("vulkan1.3_coopmat", kCoop, {"tiles"}), spirv("vulkan1.3_coopmat", {}, {"norm"}),
              spirv("vulkan1.2", {}, {"tiles"}), spirv("vulkan1.2", {}, {"norm"}), spirv("vulkan1.4", {}, {"old"})};
  const std::set<std::string> all(kCoop.begin(), kCoop.end());
  SpirvChoice with = choose_spirv_images(m, VK_API_VERSION_1_3, all);
  EXPECT_EQ(with.image, (std::vector<int>{0, 1, -1}));
  EXPECT_EQ(with.taken, "vulkan1.3_coopmat (2 kernels)");
  EXPECT_EQ(with.skipped, "");
  EXPECT_TRUE(with.any());
  EXPECT_NE(with.why[2].find("the file has for it: spirv vulkan1.4"), std::string::npos) << with.why[2];
  EXPECT_EQ(with.why[0], "");

  SpirvChoice without = choose_spirv_images(m, VK_API_VERSION_1_3, {});
  EXPECT_EQ(without.image, (std::vector<int>{2, 1, -1}));
  EXPECT_EQ(without.taken, "vulkan1.2 (1 kernel), vulkan1.3_coopmat (1 kernel)");
  EXPECT_EQ(without.skipped, "not vulkan1.3_coopmat needs " + kCoop[0] + ", " + kCoop[1] + ", " + kCoop[2] + ", " +
                                 kCoop[3] + " (1 kernel)");

  SpirvChoice old = choose_spirv_images(m, VK_API_VERSION_1_2, all);
  EXPECT_EQ(old.image, (std::vector<int>{2, 3, -1}));
  EXPECT_EQ(old.taken, "vulkan1.2 (2 kernels)");

  format::Manifest none = m;
  none.images = {none.images[4]};
  EXPECT_FALSE(choose_spirv_images(none, VK_API_VERSION_1_3, all).any());
}

TEST(VulkanImageChoice, NewerVersionWinsThenMoreRequirements) {
  format::Manifest m;
  m.images = {spirv("vulkan1.2"), spirv("vulkan1.3"), spirv("vulkan1.3_x", {"feature:a"}), spirv("vulkan1.4")};
  std::string report, why;
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, {"feature:a"}, report, why), 2);
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, {}, report, why), 1);
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_2, {"feature:a"}, report, why), 0);
}

TEST(VulkanImageChoice, ArchSpelling) {
  EXPECT_EQ(parse_vulkan_arch("vulkan1.2"), VK_API_VERSION_1_2);
  EXPECT_EQ(parse_vulkan_arch("vulkan1.3_coopmat"), VK_API_VERSION_1_3);
  EXPECT_EQ(parse_vulkan_arch("vulkan1.2_"), 0u);
  EXPECT_EQ(parse_vulkan_arch("vulkan1.2x"), 0u);
  EXPECT_EQ(parse_vulkan_arch("vulkan12"), 0u);
  EXPECT_EQ(parse_vulkan_arch("opengl4.6"), 0u);
}

TEST(VulkanImageChoice, CooperativeMatrixConfigurationsAreNamedAsImagesNameThem) {
  VkCooperativeMatrixPropertiesKHR p{};
  p.MSize = p.NSize = p.KSize = 16;
  p.AType = p.BType = 0;          // f16
  p.CType = p.ResultType = 1;     // f32
  p.scope = 3;                    // subgroup
  EXPECT_EQ(cooperative_matrix_requirement(p), "cooperative_matrix:16x16x16:f16*f16+f32:subgroup");
  p.AType = p.BType = 3;          // i8
  p.CType = 5;                    // i32
  p.ResultType = 5;
  p.KSize = 32;
  EXPECT_EQ(cooperative_matrix_requirement(p), "cooperative_matrix:16x16x32:i8*i8+i32:subgroup");
  p.AType = 77;                   // unknown to this runtime: never offered
  EXPECT_EQ(cooperative_matrix_requirement(p), "");
}

// Lane shares of cooperative matrices need every subgroup to have 32 invocations: a device
// offers a size only when SPIR-V 1.6 shaders cannot get another.
TEST(VulkanImageChoice, SubgroupSizeIsOfferedOnlyWhenFixed) {
  EXPECT_EQ(subgroup_size_requirement(32, 32), "subgroup_size:32");
  EXPECT_EQ(subgroup_size_requirement(64, 64), "subgroup_size:64");
  EXPECT_EQ(subgroup_size_requirement(32, 64), "");   // the driver may pick either (AMD, Intel)
  EXPECT_EQ(subgroup_size_requirement(0, 0), "");
  format::Manifest m = two_images();
  std::vector<std::string> shares = kCoop;
  shares.push_back("subgroup_size:32");
  m.images[1].requirements = shares;
  std::set<std::string> offers(kCoop.begin(), kCoop.end());
  offers.insert(subgroup_size_requirement(8, 64));
  std::string report, why;
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, offers, report, why), 2);
  EXPECT_NE(report.find("needs subgroup_size:32"), std::string::npos) << report;
  offers.insert(subgroup_size_requirement(32, 32));
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, offers, report, why), 1);
}

// Block tiles' products (docs/matrix.md "Block tiles") are checked against the device's
// workgroup-scope flexible-dimension granularities: each of M, N, K a multiple of the one for
// those types and that workgroup size, none above the maximum dimension.
TEST(VulkanImageChoice, WorkgroupProductsAreCheckedAgainstGranularities) {
  VkCooperativeMatrixFlexibleDimensionsPropertiesNV p{};
  p.MGranularity = p.NGranularity = 32;
  p.KGranularity = 16;
  p.AType = p.BType = 0;          // f16
  p.CType = p.ResultType = 1;     // f32
  p.scope = 2;                    // workgroup
  p.workgroupInvocations = 256;
  const std::string g256 = cooperative_matrix_granularity_offer(p);
  EXPECT_EQ(g256, "cooperative_matrix_workgroup_granularity:32x32x16:f16*f16+f32:256");
  p.scope = 3;                    // subgroup: not a workgroup-scope offer
  EXPECT_EQ(cooperative_matrix_granularity_offer(p), "");
  std::set<std::string> offers = {g256, "cooperative_matrix_workgroup_max_dimension:1024"};
  EXPECT_TRUE(requirement_offered(offers, "cooperative_matrix_workgroup:128x256x64:f16*f16+f32:256"));
  EXPECT_TRUE(requirement_offered(offers, "cooperative_matrix_workgroup:32x1024x16:f16*f16+f32:256"));
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:48x256x64:f16*f16+f32:256"));   // 48 % 32
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:128x256x24:f16*f16+f32:256"));  // 24 % 16
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:128x256x64:f16*f16+f32:128"));  // no 128 entry
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:128x256x64:bf16*bf16+f32:256"));
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:128x2048x64:f16*f16+f32:256"));  // > max
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:128x256x64:f16*f16+f32:256x"));
  EXPECT_FALSE(requirement_offered(offers, "cooperative_matrix_workgroup:0x256x64:f16*f16+f32:256"));
  EXPECT_FALSE(requirement_offered({g256}, "cooperative_matrix_workgroup:128x256x64:f16*f16+f32:256"));  // no max
  // In the choice: the image with block tiles where offered, else the portable one, saying why.
  format::Manifest m = two_images();
  std::vector<std::string> blocks = kCoop;
  blocks.push_back("cooperative_matrix_workgroup:128x256x64:f16*f16+f32:256");
  m.images[1].requirements = blocks;
  std::set<std::string> device(kCoop.begin(), kCoop.end());
  std::string report, why;
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, device, report, why), 2);
  EXPECT_NE(report.find("needs cooperative_matrix_workgroup:128x256x64"), std::string::npos) << report;
  device.insert(offers.begin(), offers.end());
  EXPECT_EQ(choose_spirv_image(m, VK_API_VERSION_1_3, device, report, why), 1);
}

}  // namespace
}  // namespace quiver::backend::vulkan
