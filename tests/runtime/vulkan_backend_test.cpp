// The Vulkan backend through the public API (quiver::Device::open("vulkan")). The kernels are
// GLSL compute shaders written to docs/abi.md (vulkan_*.comp), compiled with glslangValidator at
// build time, linked into one SPIR-V module (one entry point per kernel, as quiverc emits) and
// embedded in this binary; each test packs them into a .qfb in memory with format::write_fatbin.
// Runs on lavapipe in CI and on the NVIDIA driver on the GPU machine. Every test is run twice:
// with the device's natural memory path and with QUIVER_VULKAN_STAGING=1 (device-local buffers
// and staged copies, the discrete-GPU path) so CI covers both.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "vulkan_test_module.h"
#include "vulkan_test_spirv.h"

namespace {

using quiver::ErrorCode;
using quiver::format::Access;
using quiver::format::ScalarType;
using quiver::format::Target;

using quiver::test::vk::kAllSymbols;
using quiver::test::vk::make_fatbin;
using quiver::test::vk::spirv_module;
using quiver::test::vk::test_manifest;

// Sets or clears an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

float nan_poison() { return std::numeric_limits<float>::quiet_NaN(); }
constexpr int32_t kIntPoison = static_cast<int32_t>(0xABABABABu);

// Parameter: true = force the staged (device-local) memory path.
class VulkanBackend : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ScopedEnv staging("QUIVER_VULKAN_STAGING", GetParam() ? "1" : nullptr);
    // No skip: CI has lavapipe and the GPU machine has the NVIDIA driver, so a missing Vulkan
    // is a failure to report, with the backend's reason.
    try {
      device_.emplace(quiver::Device::open("vulkan"));
    } catch (const quiver::Error& e) {
      FAIL() << "Device::open(\"vulkan\") failed: " << e.what();
    }
    module_.emplace(device_->load(make_fatbin(test_manifest(), spirv_module()), "vulkan_test.qfb"));
  }
  std::optional<quiver::Device> device_;
  std::optional<quiver::Module> module_;
  std::mt19937 rng_{std::random_device{}()};
};

TEST_P(VulkanBackend, NamesBackendDeviceAndImage) {
  EXPECT_EQ(device_->backend_name(), "vulkan");
  EXPECT_FALSE(device_->device_name().empty());
  EXPECT_EQ(module_->backend_image(), "spirv vulkan1.2 (4 kernels)");
  std::printf("vulkan device: %s\n", device_->device_name().c_str());
}

TEST_P(VulkanBackend, SaxpyMatchesHostAndLeavesTailUntouched) {
  const uint32_t n = std::uniform_int_distribution<uint32_t>(50'000, 150'000)(rng_);
  const size_t pad = 300;   // elements past n that the kernel must not touch
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  std::vector<float> x(n + pad), y(n + pad);
  for (auto& v : x) v = dist(rng_);
  for (auto& v : y) v = dist(rng_);
  for (size_t i = n; i < n + pad; ++i) y[i] = nan_poison();
  const float a = dist(rng_);

  auto bx = device_->alloc<float>(n + pad);
  auto by = device_->alloc<float>(n + pad);
  bx.upload(x);
  by.upload(y);
  // One block more than needed, so threads past n exist and must do nothing.
  module_->kernel("saxpy").launch(quiver::Grid{(n + 255) / 256 + 1}, bx, by, a, n);
  device_->synchronize();
  std::vector<float> got(n + pad, 0.0f);
  by.download(got);
  for (uint32_t i = 0; i < n; ++i) {
    const float want = a * x[i] + y[i];
    ASSERT_NEAR(got[i], want, 1e-5f * (std::fabs(a * x[i]) + std::fabs(y[i]) + 1.0f)) << "i=" << i;
  }
  for (size_t i = n; i < n + pad; ++i) ASSERT_TRUE(std::isnan(got[i])) << "tail element " << i << " was written";
}

TEST_P(VulkanBackend, BlockSumWithSharedMemoryAndBarrier) {
  const uint32_t n = std::uniform_int_distribution<uint32_t>(20'000, 70'000)(rng_);
  const uint32_t blocks = (n + 255) / 256;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> in(n);
  for (auto& v : in) v = dist(rng_);
  std::vector<float> partial(blocks + 16, nan_poison());

  auto bin = device_->alloc<float>(n);
  auto bpartial = device_->alloc<float>(partial.size());
  bin.upload(in);
  bpartial.upload(partial);
  module_->kernel("block_sum").launch(quiver::Grid{blocks}, bin, bpartial, n);
  std::vector<float> got(partial.size(), 0.0f);
  bpartial.download(got);   // download waits for the launch

  for (uint32_t b = 0; b < blocks; ++b) {
    // Host reference: the same tree order as the shader, so only rounding of equal operations.
    float tile[256];
    double magnitude = 0;
    for (uint32_t t = 0; t < 256; ++t) {
      const uint32_t i = b * 256 + t;
      tile[t] = i < n ? in[i] : 0.0f;
      magnitude += std::fabs(tile[t]);
    }
    for (uint32_t s = 128; s > 0; s >>= 1)
      for (uint32_t t = 0; t < s; ++t) tile[t] += tile[t + s];
    ASSERT_NEAR(got[b], tile[0], 1e-5 * magnitude + 1e-6) << "block " << b;
  }
  for (size_t b = blocks; b < got.size(); ++b) ASSERT_TRUE(std::isnan(got[b])) << "partial " << b << " was written";
}

TEST_P(VulkanBackend, Int32AndUint32Scalars) {
  const uint32_t n = std::uniform_int_distribution<uint32_t>(1'000, 40'000)(rng_);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::vector<int32_t> in(n);
  for (auto& v : in) v = any(rng_);
  const int32_t mul = -std::uniform_int_distribution<int32_t>(2, 100000)(rng_);   // negative on purpose
  const int32_t bias = any(rng_);
  const uint32_t mask = std::uniform_int_distribution<uint32_t>(0x80000000u, 0xFFFFFFFFu)(rng_);   // top bit set
  std::vector<int32_t> out(n + 64, kIntPoison);

  auto bin = device_->alloc<int32_t>(n);
  auto bout = device_->alloc<int32_t>(out.size());
  bin.upload(in);
  bout.upload(out);
  module_->kernel("int_mix").launch(quiver::Grid{(n + 63) / 64}, bin, bout, mul, bias, mask, n);
  std::vector<int32_t> got(out.size(), 0);
  bout.download(got);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t want = (static_cast<uint32_t>(in[i]) * static_cast<uint32_t>(mul) +
                           static_cast<uint32_t>(bias)) ^ mask;
    ASSERT_EQ(static_cast<uint32_t>(got[i]), want) << "i=" << i;
  }
  for (size_t i = n; i < got.size(); ++i) ASSERT_EQ(got[i], kIntPoison) << "tail element " << i << " was written";
}

TEST_P(VulkanBackend, TwoDimensionalGridAndBlock) {
  const uint32_t width = std::uniform_int_distribution<uint32_t>(17, 300)(rng_);
  const uint32_t height = std::uniform_int_distribution<uint32_t>(9, 200)(rng_);
  const float scale = std::uniform_real_distribution<float>(0.5f, 4.0f)(rng_);
  std::vector<float> out(size_t{width} * height + 32, nan_poison());
  auto bout = device_->alloc<float>(out.size());
  bout.upload(out);
  module_->kernel("grid2d").launch(quiver::Grid{(width + 15) / 16, (height + 7) / 8}, bout, width, height, scale);
  std::vector<float> got(out.size(), 0.0f);
  bout.download(got);
  for (uint32_t y = 0; y < height; ++y)
    for (uint32_t x = 0; x < width; ++x) {
      const float want = static_cast<float>(x) * scale + static_cast<float>(y);
      ASSERT_NEAR(got[size_t{y} * width + x], want, 1e-5f * want + 1e-6f) << "x=" << x << " y=" << y;
    }
  for (size_t i = size_t{width} * height; i < got.size(); ++i) ASSERT_TRUE(std::isnan(got[i]));
}

// More launches than the backend keeps in flight, without synchronizing: each launch's scalar
// must survive until it runs, and each must see the previous one's writes (y += a_k * x).
TEST_P(VulkanBackend, ManyAsynchronousLaunchesRunInOrder) {
  const uint32_t n = 4099;
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = static_cast<float>(small(rng_));
  for (auto& v : y) v = static_cast<float>(small(rng_));
  auto bx = device_->alloc<float>(n);
  auto by = device_->alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  const quiver::Kernel saxpy = module_->kernel("saxpy");
  std::vector<float> expect = y;
  for (int k = 0; k < 100; ++k) {
    const float a = static_cast<float>(small(rng_));   // small integers: every sum is exact
    saxpy.launch(quiver::Grid{(n + 255) / 256}, bx, by, a, n);
    for (uint32_t i = 0; i < n; ++i) expect[i] = a * x[i] + expect[i];
  }
  std::vector<float> got(n, nan_poison());
  by.download(got);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], expect[i]) << "i=" << i;
}

TEST_P(VulkanBackend, GridBeyondDeviceLimitNamesKernel) {
  auto by = device_->alloc<float>(16);
  auto bx = device_->alloc<float>(16);
  try {
    module_->kernel("saxpy").launch(quiver::Grid{1, 0xFFFFFFFFu, 1}, bx, by, 1.0f, 16u);
    FAIL() << "a grid.y of 2^32-1 was accepted";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("saxpy"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(MemoryPath, VulkanBackend, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Staged" : "Native"; });

// ---- Bad files: each is refused with an error naming the file and what is wrong: at load when
// the file or its choice of images is wrong, at a kernel's first launch when its image is (images
// are read then, docs/runtime.md "Vulkan pipelines") ----

class VulkanBadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_.emplace(quiver::Device::open("vulkan"));
    } catch (const quiver::Error& e) {
      FAIL() << "Device::open(\"vulkan\") failed: " << e.what();
    }
  }
  // Loads `file` and returns the error (fails the test if it loads).
  quiver::Error load_error(const std::vector<std::byte>& file) {
    try {
      device_->load(file, "bad.qfb");
    } catch (const quiver::Error& e) {
      return e;
    }
    ADD_FAILURE() << "the file loaded";
    return quiver::Error(ErrorCode::InvalidArgument, "");
  }
  // Loads `file` and returns the error of the first launch of saxpy, or of block_sum
  // (fails the test if the load fails or the launch succeeds).
  quiver::Error launch_error(const std::vector<std::byte>& file, bool block_sum = false) {
    try {
      quiver::Module mod = device_->load(file, "bad.qfb");
      auto a = device_->alloc<float>(256);
      auto b = device_->alloc<float>(256);
      auto launch = [&] {
        if (block_sum)
          mod.kernel("block_sum").launch(quiver::Grid{1}, a, b, uint32_t{1});
        else
          mod.kernel("saxpy").launch(quiver::Grid{1}, a, b, 1.0f, uint32_t{1});
      };
      try {
        launch();
      } catch (const quiver::Error& e) {
        // A second launch meets the same error: the bad image is never handed to the driver.
        try {
          launch();
          ADD_FAILURE() << "the second launch succeeded";
        } catch (const quiver::Error& again) {
          EXPECT_EQ(std::string(again.what()), std::string(e.what()));
        }
        return e;
      }
    } catch (const quiver::Error& e) {
      ADD_FAILURE() << "the load failed: " << e.what();
      return e;
    }
    ADD_FAILURE() << "the kernel launched";
    return quiver::Error(ErrorCode::InvalidArgument, "");
  }
  std::optional<quiver::Device> device_;
};

TEST_F(VulkanBadFiles, NoSpirvImageListsTheImagesThere) {
  quiver::format::Manifest m = test_manifest();
  for (auto& k : m.kernels) k.targets = {Target::PTX};
  std::vector<quiver::format::ImageInput> images;
  std::string ptx = ".version 7.8\n.target sm_80\n.address_size 64\n";
  std::vector<std::byte> ptx_bytes(ptx.size());
  std::memcpy(ptx_bytes.data(), ptx.data(), ptx.size());
  images.push_back({Target::PTX, "sm_80", ptx_bytes, kAllSymbols});
  quiver::Error e = load_error(quiver::format::write_fatbin(m, images, 3));
  EXPECT_EQ(e.code(), ErrorCode::NotFound);
  EXPECT_NE(std::string(e.what()).find("bad.qfb"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("ptx sm_80"), std::string::npos) << e.what();
}

TEST_F(VulkanBadFiles, MissingEntryPointNamesKernel) {
  quiver::format::Manifest m = test_manifest();
  m.kernels[1].symbol = "qv_k1_not_there";
  quiver::Error e = launch_error(make_fatbin(m, spirv_module(),
                                             {"qv_k0_saxpy", "qv_k1_not_there", "qv_k2_int_mix", "qv_k3_grid2d"}),
                                 true);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
  EXPECT_NE(std::string(e.what()).find("block_sum"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("qv_k1_not_there"), std::string::npos) << e.what();
}

TEST_F(VulkanBadFiles, LocalSizeMismatchNamesKernelAndBothShapes) {
  quiver::Error e = launch_error(make_fatbin(test_manifest({128, 1, 1}), spirv_module()));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
  const std::string what = e.what();
  EXPECT_NE(what.find("saxpy"), std::string::npos) << what;
  EXPECT_NE(what.find("256x1x1"), std::string::npos) << what;
  EXPECT_NE(what.find("128x1x1"), std::string::npos) << what;
}

TEST_F(VulkanBadFiles, NotSpirvIsRefused) {
  std::vector<std::byte> garbage(64, std::byte{0x5A});
  quiver::Error e = launch_error(make_fatbin(test_manifest(), garbage));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
  EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();

  std::vector<std::byte> truncated = spirv_module();
  truncated.resize(truncated.size() / 2 + 2);   // not even whole words
  e = launch_error(make_fatbin(test_manifest(), truncated));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
  EXPECT_NE(std::string(e.what()).find("bad.qfb"), std::string::npos) << e.what();

  truncated.resize(truncated.size() & ~size_t{3});   // whole words, cut mid-instruction
  e = launch_error(make_fatbin(test_manifest(), truncated));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
}

TEST_F(VulkanBadFiles, AmbiguousWorkgroupSizeBuiltinIsRefused) {
  // The raw spirv-link output: four BuiltIn WorkgroupSize constants, one per shader. A driver
  // would run every kernel with one of them (lavapipe ran saxpy 8 times over); the backend refuses.
  quiver::Error e = launch_error(make_fatbin(test_manifest(), quiver::test::to_bytes(quiver::test::linked_spirv_words())));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
  EXPECT_NE(std::string(e.what()).find("WorkgroupSize"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("bad.qfb"), std::string::npos) << e.what();
}

TEST_F(VulkanBadFiles, KernelAbsentFromImageIsNotFoundAtLaunch) {
  // int_mix is built for the CPU only: the module loads, and launching int_mix says why not.
  quiver::format::Manifest m = test_manifest();
  m.kernels[2].targets = {Target::CPU};
  std::vector<quiver::format::ImageInput> images;
  images.push_back({Target::SPIRV, "vulkan1.2", spirv_module(), {"qv_k0_saxpy", "qv_k1_block_sum", "qv_k3_grid2d"}});
  images.push_back({Target::CPU, "x86_64", std::vector<std::byte>(16, std::byte{1}), {"qv_k2_int_mix"}});
  quiver::Module mod = device_->load(quiver::format::write_fatbin(m, images, 3), "partial.qfb");
  auto in = device_->alloc<int32_t>(4);
  auto out = device_->alloc<int32_t>(4);
  try {
    mod.kernel("int_mix").launch(quiver::Grid{1}, in, out, int32_t{1}, int32_t{0}, uint32_t{0}, uint32_t{4});
    FAIL() << "int_mix launched without a SPIR-V entry point";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_NE(std::string(e.what()).find("int_mix"), std::string::npos) << e.what();
  }
}


// Images per kernel (the SPIR-V target's layout): saxpy has an image requiring cooperative
// matrices (garbage bytes: reading it would fail the launch) beside its portable one, block_sum
// only a portable one. A device without the feature (lavapipe) runs both kernels from portable
// images, and says which images it took and why the other was not.
TEST_F(VulkanBadFiles, EachKernelTakesAnImageTheDeviceSupports) {
  quiver::format::Manifest m = test_manifest();
  m.kernels.resize(2);
  std::vector<quiver::format::ImageInput> images;
  const std::vector<std::string> coop = {"extension:VK_KHR_cooperative_matrix",
                                         "cooperative_matrix:16x16x16:f16*f16+f32:subgroup"};
  images.push_back({Target::SPIRV, "vulkan1.3_coopmat", std::vector<std::byte>(64, std::byte{0x5A}),
                    {"qv_k0_saxpy"}, coop});
  images.push_back({Target::SPIRV, "vulkan1.2", spirv_module(), {"qv_k0_saxpy"}});
  images.push_back({Target::SPIRV, "vulkan1.2", spirv_module(), {"qv_k1_block_sum"}});
  quiver::Module mod = device_->load(quiver::format::write_fatbin(m, images, 3), "per_kernel.qfb");
  const std::string image(mod.backend_image());
  const bool offers_coop = image.find("not vulkan1.3_coopmat") == std::string::npos;
  if (offers_coop) GTEST_SKIP() << "the device offers the cooperative-matrix configuration: " << image;
  EXPECT_EQ(image, "spirv vulkan1.2 (2 kernels) (not vulkan1.3_coopmat needs " + coop[0] + ", " + coop[1] +
                       " (1 kernel))");
  EXPECT_TRUE(mod.has_kernel("saxpy"));
  EXPECT_TRUE(mod.has_kernel("block_sum"));

  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  const uint32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = dist(rng);
  for (auto& v : y) v = dist(rng);
  const float a = dist(rng);
  auto bx = device_->alloc<float>(n);
  auto by = device_->alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  mod.kernel("saxpy").launch(quiver::Grid{(n + 255) / 256}, bx, by, a, n);
  std::vector<float> got(n);
  by.download(got);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], a * x[i] + y[i], 1e-5f * (std::fabs(a * x[i]) + std::fabs(y[i]) + 1.0f)) << "i=" << i;

  auto partial = device_->alloc<float>(4);
  partial.upload(std::vector<float>(4, nan_poison()));
  mod.kernel("block_sum").launch(quiver::Grid{4}, bx, partial, n);
  std::vector<float> sums(4);
  partial.download(sums);
  for (uint32_t b = 0; b < 4; ++b) {
    double expect = 0, magnitude = 0;
    for (uint32_t i = b * 256; i < std::min(n, (b + 1) * 256); ++i) {
      expect += x[i];
      magnitude += std::fabs(x[i]);
    }
    EXPECT_NEAR(sums[b], expect, 1e-5 * magnitude) << "block " << b;
  }
}

// Device::elapsed_ms_each: runs queued back to back, each timed by its own query pair (started
// by the run's first launch, or by a timestamp of its own when the run launches nothing), all
// read after one wait; every run's launches happen, in order, and a second call reuses the
// timers of the first.
TEST_P(VulkanBackend, ElapsedMsEachTimesEveryRunQueuedBackToBack) {
  const uint32_t n = 50'000;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  auto bx = device_->alloc<float>(n), by = device_->alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  float expected = 2.0f;
  for (int call = 0; call < 2; ++call) {
    std::vector<double> ms = device_->elapsed_ms_each(6, [&](size_t i) {
      if (i == 3) return;   // a run without launches
      auto saxpy = module_->kernel("saxpy");
      saxpy.launch(quiver::Grid{(n + 255) / 256}, bx, by, float(i + 1), n);
      if (i == 4) saxpy.launch(quiver::Grid{(n + 255) / 256}, bx, by, 0.5f, n);
    });
    ASSERT_EQ(ms.size(), 6u);
    for (size_t i = 0; i < ms.size(); ++i) EXPECT_TRUE(std::isfinite(ms[i]) && ms[i] >= 0) << "run " << i << ": " << ms[i];
    expected += 1 + 2 + 3 + 5 + 0.5f + 6;
  }
  std::vector<float> got(n);
  by.download(got);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], expected) << "element " << i;
}

// Device::elapsed_ms through timestamp queries: the launches inside run, the time is positive.
TEST_P(VulkanBackend, ElapsedMsRunsTheWorkAndReportsATime) {
  const uint32_t n = 50'000;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  auto bx = device_->alloc<float>(n), by = device_->alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  double ms = device_->elapsed_ms([&] { module_->kernel("saxpy").launch(quiver::Grid{(n + 255) / 256}, bx, by, 3.0f, n); });
  EXPECT_TRUE(std::isfinite(ms) && ms > 0) << ms;
  std::vector<float> got(n);
  by.download(got);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 5.0f) << "element " << i;
}

// While a timer runs, a launch's command buffer stays open for the timer's end timestamp;
// anything that touches the queue first submits it: a download inside the timed run sees the
// launch, and a second launch runs after the first.
TEST_P(VulkanBackend, OperationsInsideATimedRunSeeItsLaunches) {
  const uint32_t n = 50'000;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  auto bx = device_->alloc<float>(n), by = device_->alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  std::vector<float> inside(n, -1.0f);
  double ms = device_->elapsed_ms([&] {
    auto saxpy = module_->kernel("saxpy");
    saxpy.launch(quiver::Grid{(n + 255) / 256}, bx, by, 3.0f, n);   // y = 5
    by.download(inside);
    saxpy.launch(quiver::Grid{(n + 255) / 256}, by, bx, 2.0f, n);   // x = 1 + 10
    device_->synchronize();
    saxpy.launch(quiver::Grid{(n + 255) / 256}, bx, by, 1.0f, n);   // y = 5 + 11
  });
  EXPECT_TRUE(std::isfinite(ms) && ms > 0) << ms;
  std::vector<float> got_x(n), got_y(n);
  bx.download(got_x);
  by.download(got_y);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(inside[i], 5.0f) << "element " << i;
    ASSERT_EQ(got_x[i], 11.0f) << "element " << i;
    ASSERT_EQ(got_y[i], 16.0f) << "element " << i;
  }
}

}  // namespace
