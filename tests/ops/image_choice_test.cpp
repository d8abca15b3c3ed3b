// Which images of the op library the device loaded: on Vulkan, kernel by kernel, the
// cooperative-matrix image where the device offers what it requires, else the portable one with
// the reason (docs/format.md "Image requirements"); on CUDA, the warpgroup kernels are in sm_90a
// images only; the matmul kernels the op library picks follow the images.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gate.h"
#include "quiver/ops.h"

namespace {

TEST(OpsImageChoice, VulkanTakesCooperativeMatrixImagesOnlyWhereTheDeviceOffersThem) {
  quiver::Device& dev = gate::device();
  if (dev.backend_name() != "vulkan") GTEST_SKIP() << "the image choice between SPIR-V images is Vulkan's";
  quiver::Module lib = quiver::ops::library(dev);
  const std::string image(lib.backend_image());
  std::printf("op library image on %s: %s\n", dev.device_name().c_str(), image.c_str());
  ASSERT_EQ(image.rfind("spirv vulkan1.", 0), 0u) << image;
  // The 32-deep cooperative-matrix matmuls exist in cooperative-matrix images only (one for each,
  // requiring the half configuration); the mma.sync ones in none.
  const bool coop_half = lib.has_kernel("matmul_tiles_k32_nn<half>");
  EXPECT_EQ(lib.has_kernel("matmul_tiles_k32_nt<half>"), coop_half) << image;
  // So does the int8 tile matmul (its image requires the 16x16x32 int8 configuration).
  const bool coop_int8 = lib.has_kernel("matmul_w8a8_tiles");
  // A kernel without its cooperative-matrix image is one the device cannot take: the
  // description says what that image needs (a 1.2 device skips 1.3 images for their version).
  const bool vulkan13 = image.find("vulkan1.3_coopmat") != std::string::npos;
  if (vulkan13 && (!coop_half || !coop_int8))
    EXPECT_NE(image.find("not vulkan1.3_coopmat needs "), std::string::npos) << image;
  if (!vulkan13) {
    EXPECT_FALSE(coop_half) << image;
    EXPECT_FALSE(coop_int8) << image;
  }
  EXPECT_FALSE(lib.has_kernel("matmul_tiles_nn<half>")) << image;
  // Block tiles' matmuls need workgroup-scope cooperative matrices too (VK_NV_cooperative_matrix2).
  const bool block = lib.has_kernel("matmul_block_nn<half>");
  EXPECT_EQ(lib.has_kernel("matmul_block_nt<half>"), block) << image;
  if (!coop_half) EXPECT_FALSE(block) << image;
  if (!coop_int8) EXPECT_FALSE(lib.has_kernel("matmul_w8a8_block")) << image;
  EXPECT_TRUE(lib.has_kernel("matmul_nn<half>")) << image;
}

// On CUDA the warpgroup kernels (kernels/matmul_wgmma.cpp, kernels/matmul_w8a8_wgmma.cpp) are in
// the sm_90a images only, so ops::matmul_w8a8 takes its int8 warpgroup kernel exactly where the
// loaded image is sm_90a (the H100's cubin) and the dp4a kernel elsewhere (QUIVER_CUDA_IMAGE).
TEST(OpsImageChoice, CudaHasTheWarpgroupKernelsInSm90aImagesOnly) {
  quiver::Device& dev = gate::device();
  if (dev.backend_name() != "cuda") GTEST_SKIP() << "the warpgroup kernels are PTX sm_90a's";
  quiver::Module lib = quiver::ops::library(dev);
  const std::string image(lib.backend_image());
  const bool sm90a = image.find("sm_90a") != std::string::npos;
  std::printf("op library image on %s: %s\n", dev.device_name().c_str(), image.c_str());
  EXPECT_EQ(lib.has_kernel("matmul_w8a8_wgmma"), sm90a) << image;
  EXPECT_EQ(lib.has_kernel("matmul_wgmma_nt<bf16>"), sm90a) << image;
  EXPECT_TRUE(lib.has_kernel("matmul_w8a8")) << image;
}

}  // namespace
