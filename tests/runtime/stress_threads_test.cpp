// Thread-safety stress: 8 host threads x 10 000 launches on one Device, each thread
// loading, allocating, uploading, launching and downloading on it and checking its own results
// exactly (stress_driver.h). Runs on the CPU backend (barrier kernels run as fibers, so this also
// covers the fiber switches under ThreadSanitizer) and on Vulkan when a device is present.
// ctest label `tsan`: the tsan preset runs it under ThreadSanitizer, where a data race fails it.
// QUIVER_STRESS_LAUNCHES overrides the launches per thread.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>

#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "stress_driver.h"
#include "test_fatbin.h"

#ifdef QV_STRESS_HAVE_VULKAN
#include "vulkan_test_spirv.h"
#endif

namespace {

using quiver::Device;
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
