// Thread-safety stress: 8 host threads x 10 000 launches on one Device, each thread
// loading, allocating, uploading, launching and downloading on it and checking its own results
// exactly (stress_driver.h). Runs on the CPU backend (barrier kernels run as fibers, so this also
// covers the fiber switches under ThreadSanitizer) and on Vulkan when a device is present.
// ctest label `tsan`: the tsan preset runs it under ThreadSanitizer, where a data race fails it.
// QUIVER_STRESS_LAUNCHES overrides the launches per thread. Also the once-per-Device load of
// embedded fat binaries from many threads, with Devices opened and dropped meanwhile.
#include <gtest/gtest.h>

#include <cstdio>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"   // live_objects()
#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "stress_driver.h"
#include "test_fatbin.h"

#ifdef QV_STRESS_HAVE_VULKAN
#include "vulkan_test_spirv.h"
#endif

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::Grid;
using quiver::test::StressOptions;

void print_report(const char* what, const StressOptions& opt, const quiver::test::StressReport& r) {
  std::printf("%s: %d threads x %d saxpy launches on one Device (%lld launches in all) in %.2f s\n", what,
              opt.threads, opt.launches, r.launches, r.seconds);
}

TEST(StressThreads, CpuDeviceSharedByEightThreads) {
  Device dev = Device::open("cpu");
  StressOptions opt;
  opt.launches = quiver::test::stress_launches(10'000);
  const quiver::test::StressReport r = run_thread_stress(dev, quiver::test::make_test_fatbin(), opt);
  print_report("cpu", opt, r);
  EXPECT_GE(r.launches, static_cast<long long>(opt.threads) * opt.launches);
}

// The once-per-Device load behind quiverc's generated load() and quiver::ops
// (detail::load_cached): 8 threads look the module up on one shared Device before every launch,
// so first calls race, while each also opens, uses and drops Devices of its own. In the end the
// shared Device holds exactly one module and every other Device has gone with its module.
TEST(StressThreads, LoadedOncePerDeviceFromEightThreads) {
  const quiver::backend::LiveObjects before = quiver::backend::live_objects();
  const std::vector<std::byte> fatbin = quiver::test::make_test_fatbin();
  constexpr int kThreads = 8, kRounds = 200, kOwnDeviceEvery = 50;
  constexpr uint32_t n = 256;
  {
    Device shared = Device::open("cpu");
    std::vector<std::string> failures(kThreads);
    std::latch start(kThreads);
    auto worker = [&](int t) {
      try {
        std::vector<float> x(n), y(n), got(n);
        for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 7 + t) % 17) - 8.f;
        start.arrive_and_wait();
        for (int round = 0; round < kRounds && failures[t].empty(); ++round) {
          std::optional<Device> own;
          if (round % kOwnDeviceEvery == kOwnDeviceEvery - 1) own.emplace(Device::open("cpu"));
          const Device& dev = own ? *own : shared;
          Buffer<float> bx = dev.alloc<float>(n), by = dev.alloc<float>(n);
          for (uint32_t i = 0; i < n; ++i) y[i] = static_cast<float>(round % 100 + t);
          bx.upload(x);
          by.upload(y);
          const float a = static_cast<float>(round % 5 - 2);
          quiver::detail::load_cached(dev, fatbin, "stress-loaded-once.qfb").kernel("saxpy").launch(Grid{1}, bx, by, a, n);
          by.download(got);
          for (uint32_t i = 0; i < n; ++i)
            if (got[i] != a * x[i] + y[i])
              failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(round) + ": y[" +
                            std::to_string(i) + "] = " + std::to_string(got[i]) + ", expected " +
                            std::to_string(a * x[i] + y[i]);
        }
      } catch (const std::exception& e) {
        failures[t] = "thread " + std::to_string(t) + ": exception: " + e.what();
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
    for (std::thread& th : threads) th.join();
    for (const std::string& f : failures) EXPECT_EQ(f, "");
    EXPECT_EQ(quiver::backend::live_objects().devices, before.devices + 1) << "a dropped Device is still alive";
    EXPECT_EQ(quiver::backend::live_objects().modules, before.modules + 1) << "the shared Device loaded more than once";
  }
  EXPECT_EQ(quiver::backend::live_objects().devices, before.devices);
  EXPECT_EQ(quiver::backend::live_objects().modules, before.modules);
}

#ifdef QV_STRESS_HAVE_VULKAN
// saxpy and block_sum from the GLSL test kernels (vulkan_*.comp), as quiverc would describe them.
std::vector<std::byte> vulkan_fatbin() {
  using quiver::format::Access;
  using quiver::format::ScalarType;
  quiver::format::Manifest m;
  m.compiler_version = "hand-written GLSL (glslangValidator)";
  m.source_hash = "0123456789abcdef";
  auto param = [](const char* name, ScalarType t, bool buffer, Access a) {
    quiver::format::Param p;
    p.name = name;
    p.type = t;
    p.is_buffer = buffer;
    p.access = a;
    return p;
  };
  quiver::format::Kernel saxpy;
  saxpy.name = "saxpy";
  saxpy.symbol = "qv_k0_saxpy";
  saxpy.params = {param("x", ScalarType::F32, true, Access::Read), param("y", ScalarType::F32, true, Access::ReadWrite),
                  param("a", ScalarType::F32, false, Access::Read), param("n", ScalarType::U32, false, Access::Read)};
  saxpy.block = {256, 1, 1};
  saxpy.targets = {quiver::format::Target::SPIRV};
  quiver::format::Kernel block_sum;
  block_sum.name = "block_sum";
  block_sum.symbol = "qv_k1_block_sum";
  block_sum.params = {param("in", ScalarType::F32, true, Access::Read),
                      param("partial", ScalarType::F32, true, Access::ReadWrite),
                      param("n", ScalarType::U32, false, Access::Read)};
  block_sum.block = {256, 1, 1};
  block_sum.shared_bytes = 256 * 4;
  block_sum.uses_barrier = true;
  block_sum.targets = {quiver::format::Target::SPIRV};
  m.kernels = {saxpy, block_sum};
  std::vector<quiver::format::ImageInput> images;
  images.push_back({quiver::format::Target::SPIRV, "vulkan1.2",
                    quiver::test::to_bytes(quiver::test::kernel_spirv_words()), {"qv_k0_saxpy", "qv_k1_block_sum"}});
  return quiver::format::write_fatbin(std::move(m), images, 3);
}

TEST(StressThreads, VulkanDeviceSharedByEightThreads) {
  std::optional<Device> dev;
  try {
    dev.emplace(Device::open("vulkan"));
  } catch (const quiver::Error& e) {
    if (e.code() == quiver::ErrorCode::BackendUnavailable) GTEST_SKIP() << "no Vulkan device: " << e.what();
    throw;
  }
  StressOptions opt;
  opt.launches = quiver::test::stress_launches(10'000);
  const quiver::test::StressReport r = run_thread_stress(*dev, vulkan_fatbin(), opt);
  print_report(("vulkan (" + dev->device_name() + ")").c_str(), opt, r);
  EXPECT_GE(r.launches, static_cast<long long>(opt.threads) * opt.launches);
}
#endif

}  // namespace
