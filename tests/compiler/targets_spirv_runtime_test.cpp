// The spirv target's image, packed into a .qfb and launched through the public runtime API on the
// Vulkan backend: checks that the target and runtime/backends/vulkan agree on docs/abi.md
// (bindings, scalar structs of every width, bool as a 32-bit scalar and 1-byte buffer elements).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "targets_spirv_support.h"

namespace quiver::test {
namespace {

constexpr uint32_t kPoison32 = 0x7fc0dead;

class SpirvThroughRuntime : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<TestKernel> kernels = {saxpy_kernel(), block_sum_kernel(), ints_kernel()};
    std::vector<CompiledSpirv> compiled = compile_spirv_each(kernels);
    format::Manifest manifest;
    manifest.compiler_version = "targets_spirv_runtime_test";
    manifest.source_hash = "0000000000000000";
    for (const TestKernel& k : kernels) manifest.kernels.push_back(k.manifest);
    manifest.kernels[1].shared_bytes = 128 * 4;
    manifest.kernels[1].uses_barrier = true;
    std::vector<format::ImageInput> images;
    for (const CompiledSpirv& c : compiled)
      images.push_back({format::Target::SPIRV, c.image.arch, c.image.data, c.image.kernels, c.image.requirements});
    fatbin_ = new std::vector<std::byte>(format::write_fatbin(manifest, images));
  }
  static void TearDownTestSuite() {
    delete fatbin_;
    fatbin_ = nullptr;
  }
  void SetUp() override {
    device_ = std::make_unique<Device>(Device::open("vulkan"));
    module_ = std::make_unique<Module>(device_->load(*fatbin_, "targets_spirv_runtime_test.qfb"));
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }

  static std::vector<std::byte>* fatbin_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Module> module_;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};
std::vector<std::byte>* SpirvThroughRuntime::fatbin_ = nullptr;

TEST_F(SpirvThroughRuntime, SaxpyAndBlockSum) {
  const uint32_t n = 1000;
  std::uniform_real_distribution<float> dist(-5, 5);
  std::vector<float> x(n), y(n), out(n + 64, std::bit_cast<float>(kPoison32));
  for (uint32_t i = 0; i < n; ++i) x[i] = dist(rng_), y[i] = dist(rng_);
  float a = dist(rng_);
  Buffer<float> bx = device_->alloc<float>(n), by = device_->alloc<float>(n),
                bout = device_->alloc<float>(n + 64);
  bx.upload(x);
  by.upload(y);
  bout.upload(out);
  module_->kernel("qv_k0_saxpy").launch(Grid{(n + 63) / 64 + 1}, bx, by, bout, a, int32_t(n));
  device_->synchronize();
  bout.download(out);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_NEAR(out[i], a * x[i] + y[i], 1e-6f * (std::fabs(a * x[i]) + std::fabs(y[i])) + 1e-7f)
        << "i=" << i << " seed=" << seed_;
  for (uint32_t i = n; i < n + 64; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), kPoison32);

  const uint32_t groups = (n + 127) / 128;
  std::vector<float> sums(groups + 2, std::bit_cast<float>(kPoison32));
  Buffer<float> bsums = device_->alloc<float>(sums.size());
  bsums.upload(sums);
  module_->kernel("qv_k1_block_sum").launch(Grid{groups}, bx, bsums, int32_t(n));
  device_->synchronize();
  bsums.download(sums);
  for (uint32_t g = 0; g < groups; ++g) {
    float tile[128];
    for (uint32_t t = 0; t < 128; ++t) tile[t] = g * 128 + t < n ? x[g * 128 + t] : 0.0f;
    for (uint32_t stride = 64; stride > 0; stride >>= 1)
      for (uint32_t t = 0; t < stride; ++t) tile[t] += tile[t + stride];
    ASSERT_EQ(std::bit_cast<uint32_t>(sums[g]), std::bit_cast<uint32_t>(tile[0])) << "block " << g;
  }
  for (uint32_t g = groups; g < sums.size(); ++g)
    ASSERT_EQ(std::bit_cast<uint32_t>(sums[g]), kPoison32);
}

TEST_F(SpirvThroughRuntime, EveryScalarWidthAndBool) {
  const uint32_t n = 300, cap = ((n + 31) / 32 + 1) * 32;
  std::uniform_int_distribution<int64_t> d(INT64_MIN / 4, INT64_MAX / 4);
  std::vector<int8_t> a8(n);
  std::vector<int16_t> a16(n);
  std::vector<int64_t> a64(n);
  for (uint32_t i = 0; i < n; ++i) a8[i] = int8_t(d(rng_)), a16[i] = int16_t(d(rng_)), a64[i] = d(rng_);
  int8_t s8 = int8_t(d(rng_));
  int16_t s16 = int16_t(d(rng_));
  int64_t s64 = d(rng_) % 1000000;
  Buffer<int8_t> b8 = device_->alloc<int8_t>(n), o8 = device_->alloc<int8_t>(cap);
  Buffer<int16_t> b16 = device_->alloc<int16_t>(n), o16 = device_->alloc<int16_t>(cap);
  Buffer<int64_t> b64 = device_->alloc<int64_t>(n), o64 = device_->alloc<int64_t>(cap);
  Buffer<bool> neg = device_->alloc<bool>(cap);
  b8.upload(a8);
  b16.upload(a16);
  b64.upload(a64);
  for (bool flip : {false, true}) {
    SCOPED_TRACE(flip ? "flip" : "no flip");
    std::vector<int8_t> r8(cap, int8_t(0xAB));
    std::vector<int16_t> r16(cap, int16_t(0xABAB));
    std::vector<int64_t> r64(cap, int64_t(0xABABABABABABABABull));
    std::vector<uint8_t> poison_bool(cap, 0xAB);
    o8.upload(r8);
    o16.upload(r16);
    o64.upload(r64);
    detail::buffer_upload(*neg.impl(), poison_bool.data(), cap);
    module_->kernel("qv_k4_ints").launch(Grid{cap / 32}, b8, b16, b64, o8, o16, o64, neg, s8, s16,
                                         s64, flip, int32_t(n));
    device_->synchronize();
    o8.download(r8);
    o16.download(r16);
    o64.download(r64);
    std::vector<uint8_t> rneg(cap);
    detail::buffer_download(*neg.impl(), rneg.data(), cap);
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t v = uint64_t(a64[i]) * uint64_t(s64) + uint64_t(uint16_t(a16[i]));
      ASSERT_EQ(uint8_t(r8[i]), uint8_t(uint8_t(a8[i]) * 3u + uint8_t(s8))) << i;
      ASSERT_EQ(uint16_t(r16[i]),
                uint16_t(uint16_t(a16[i] >> 2) + uint16_t(int16_t(a8[i])) + uint16_t(s16))) << i;
      ASSERT_EQ(uint64_t(r64[i]), flip ? 0 - v : v) << i;
      ASSERT_EQ(rneg[i], a8[i] < 0 ? 1 : 0) << i;
    }
    for (uint32_t i = n; i < cap; ++i) {
      ASSERT_EQ(uint8_t(r8[i]), 0xABu);
      ASSERT_EQ(uint64_t(r64[i]), 0xABABABABABABABABull);
      ASSERT_EQ(rneg[i], 0xABu);
    }
  }
}

}  // namespace
}  // namespace quiver::test
