// Vulkan devices through the public API: counting and "vulkan:N" selection, one VkDevice and
// queue per quiver::Device (two of them used from two host threads at once), native handles,
// and the clear refusal of DLPack (Vulkan memory has no DLPack form here). Runs on lavapipe in
// CI and on the NVIDIA driver on the GPU machine.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "vulkan_test_spirv.h"

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::ErrorCode;
using quiver::Grid;
using quiver::Module;

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::vector<std::byte> saxpy_fatbin() {
  using quiver::format::Access;
  using quiver::format::ScalarType;
  quiver::format::Manifest m;
  m.compiler_version = "hand-written GLSL (glslangValidator)";
  m.source_hash = "0123456789abcdef";
  quiver::format::Kernel k;
  k.name = "saxpy";
  k.symbol = "qv_k0_saxpy";
  auto param = [](const char* name, ScalarType t, bool buffer, Access a) {
    quiver::format::Param p;
    p.name = name;
    p.type = t;
    p.is_buffer = buffer;
    p.access = a;
    return p;
  };
  k.params = {param("x", ScalarType::F32, true, Access::Read), param("y", ScalarType::F32, true, Access::ReadWrite),
              param("a", ScalarType::F32, false, Access::Read), param("n", ScalarType::U32, false, Access::Read)};
  k.block = {256, 1, 1};
  k.targets = {quiver::format::Target::SPIRV};
  m.kernels.push_back(k);
  std::vector<quiver::format::ImageInput> images;
  images.push_back({quiver::format::Target::SPIRV, "vulkan1.2",
                    quiver::test::to_bytes(quiver::test::kernel_spirv_words()), {"qv_k0_saxpy"}});
  return quiver::format::write_fatbin(std::move(m), images, 3);
}

// Fresh data each round; exact integers in floats, so any backend's rounding agrees.
std::string saxpy_rounds(Device& dev, int rounds, unsigned seed) {
  Module mod = dev.load(saxpy_fatbin(), "saxpy.qfb");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-100, 100);
  const uint32_t n = 5000;
  Buffer<float> bx = dev.alloc<float>(n), by = dev.alloc<float>(n);
  for (int r = 0; r < rounds; ++r) {
    std::vector<float> x(n), y(n), got(n);
    for (float& v : x) v = static_cast<float>(dist(rng));
    for (float& v : y) v = static_cast<float>(dist(rng));
    const float a = static_cast<float>(dist(rng) % 7);
    bx.upload(x);
    by.upload(y);
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, a, n);
    by.download(got);
    for (uint32_t i = 0; i < n; ++i)
      if (got[i] != a * x[i] + y[i]) return "round " + std::to_string(r) + " element " + std::to_string(i);
  }
  return "";
}

class VulkanDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    count_ = Device::count("vulkan");
    // CI has lavapipe and the GPU machine the NVIDIA driver: no Vulkan device is a failure.
    ASSERT_GE(count_, 1u) << "Device::count(\"vulkan\") is 0";
  }
  size_t count_ = 0;
};

TEST_F(VulkanDevices, CountAndSelection) {
  for (size_t i = 0; i < count_; ++i) {
    Device dev = Device::open("vulkan:" + std::to_string(i));
    EXPECT_EQ(dev.index(), i);
    EXPECT_EQ(dev.backend_name(), "vulkan");
    std::printf("vulkan:%zu = %s\n", i, dev.device_name().c_str());
    EXPECT_EQ(saxpy_rounds(dev, 2, 7 + static_cast<unsigned>(i)), "");
  }
  EXPECT_EQ(Device::open("vulkan").device_name(), Device::open("vulkan:0").device_name());
  try {
    Device::open("vulkan:" + std::to_string(count_));
    FAIL() << "vulkan:" << count_ << " opened";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_CONTAINS(e.what(), "backend 'vulkan' has no device " + std::to_string(count_) + ": it has ");
  }
}

// Each quiver::Device has its own VkDevice and queue; two of them are used from two host
// threads at the same time, each checking its own results.
TEST_F(VulkanDevices, TwoDevicesEachWithItsOwnQueue) {
  Device a = Device::open("vulkan:0");
  Device b = Device::open(count_ > 1 ? "vulkan:1" : "vulkan:0");
  ASSERT_NE(a.native_stream(), nullptr);
  ASSERT_NE(a.native_device(), nullptr);
  EXPECT_NE(a.native_stream(), b.native_stream());
  EXPECT_NE(a.native_device(), b.native_device());
  std::string result_a = "not run", result_b = "not run";
  std::thread ta([&] { result_a = saxpy_rounds(a, 40, 1); });
  std::thread tb([&] { result_b = saxpy_rounds(b, 40, 2); });
  ta.join();
  tb.join();
  EXPECT_EQ(result_a, "");
  EXPECT_EQ(result_b, "");
}

TEST_F(VulkanDevices, NativeBufferHandlesAreVkBuffers) {
  Device dev = Device::open("vulkan");
  Buffer<float> x = dev.alloc<float>(100), y = dev.alloc<float>(100);
  EXPECT_NE(x.native_handle(), 0u);
  EXPECT_NE(x.native_handle(), y.native_handle());
  EXPECT_EQ(dev.native_stream(), dev.native_stream());
}

TEST_F(VulkanDevices, DlpackIsRefusedClearly) {
  Device dev = Device::open("vulkan");
  Buffer<float> x = dev.alloc<float>(100);
  try {
    x.to_dlpack();
    FAIL() << "a Vulkan buffer was exported";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_CONTAINS(e.what(), "DLPack interop is supported by the cuda and cpu backends, not by vulkan:0");
  }
  int deleted = 0;
  float host[4] = {};
  int64_t shape[1] = {4};
  DLManagedTensor t{};
  t.dl_tensor.data = host;
  t.dl_tensor.device = {kDLCPU, 0};
  t.dl_tensor.ndim = 1;
  t.dl_tensor.dtype = {kDLFloat, 32, 1};
  t.dl_tensor.shape = shape;
  t.manager_ctx = &deleted;
  t.deleter = [](DLManagedTensor* self) { ++*static_cast<int*>(self->manager_ctx); };
  try {
    dev.from_dlpack<float>(&t);
    FAIL() << "a tensor was imported into Vulkan";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_CONTAINS(e.what(), "not by vulkan:0");
  }
  EXPECT_EQ(deleted, 0);
}

}  // namespace
