// Module::has_kernel answers from the structured description of the loaded image that the
// backend gives (backend::ImageInfo: target, arch, kernel symbols), never from the text of
// image_description(), which is for people and may say anything.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <mutex>

#include "api/impl.h"   // detail::DeviceImpl and ModuleContents: a backend module of the test's own
#include "quiver/runtime.h"
#include "error_of.h"
#include "scoped_env.h"
#include "test_fatbin.h"

namespace {

using quiver::Device;
using quiver::Module;
namespace backend = quiver::backend;
namespace format = quiver::format;

// A loaded module as a backend would give it, with its description and its image chosen apart.
class DescribedModule final : public backend::Module {
 public:
  DescribedModule(std::string description, backend::ImageInfo info)
      : description_(std::move(description)), info_(std::move(info)) {}
  void launch(size_t, quiver::Grid, std::span<const backend::LaunchArg>) override {
    throw quiver::Error(quiver::ErrorCode::DeviceError, "DescribedModule runs no kernels");
  }
  std::string image_description() const override { return description_; }
  const backend::ImageInfo& image_info() const override { return info_; }

 private:
  std::string description_;
  backend::ImageInfo info_;
};

// The test manifest with saxpy in the CPU image only and gpu_only in the PTX image only.
format::Manifest split_manifest() {
  format::Manifest m = quiver::test::test_manifest();
  for (format::Kernel& k : m.kernels)
    if (k.name == "saxpy") k.targets = {format::Target::CPU};
  return m;
}

TEST(ModuleImage, HasKernelAnswersForTheCpuImageLoaded) {
  Device dev = Device::open("cpu");
  const std::vector<std::byte> bytes =
      quiver::test::make_fatbin(split_manifest(), quiver::test::cpu_kernels_so(), quiver::test::host_arch());
  Module mod = dev.load(bytes, "split.qfb");
  EXPECT_TRUE(mod.has_kernel("saxpy"));
  EXPECT_TRUE(mod.has_kernel("block_sum"));
  EXPECT_FALSE(mod.has_kernel("gpu_only"));   // listed by the manifest, in the PTX image only
  EXPECT_FALSE(mod.has_kernel("no_such_kernel"));
}

// The backend loaded the PTX image but its description reads like the CPU image's: an answer
// parsed from the text would be the CPU image's (saxpy yes, gpu_only no).
TEST(ModuleImage, HasKernelReadsTheImageInfoNotTheDescription) {
  Device dev = Device::open("cpu");
  const std::vector<std::byte> bytes =
      quiver::test::make_fatbin(split_manifest(), quiver::test::cpu_kernels_so(), quiver::test::host_arch());
  const format::FatBinary fb = format::FatBinary::view(bytes, "split.qfb");
  const int ptx = fb.find_image(format::Target::PTX);
  ASSERT_GE(ptx, 0);
  const std::string misleading = "cpu " + quiver::test::host_arch();

  // Device::load's cache (what quiverc's generated load() uses) takes contents made here, loaded
  // through the same ModuleContents::adopt as a backend's module.
  const std::shared_ptr<quiver::detail::DeviceImpl>& impl = dev.impl();
  impl->loaded_once(bytes, [&] {
    auto contents = std::make_shared<quiver::detail::ModuleContents>();
    contents->manifest = fb.manifest();
    contents->label = fb.label();
    std::lock_guard lock(impl->mutex());
    contents->adopt(std::make_unique<DescribedModule>(misleading, backend::ImageInfo::of(fb.manifest().images[ptx])));
    return contents;
  });
  Module mod = quiver::detail::load_cached(dev, bytes, "split.qfb");

  EXPECT_EQ(mod.backend_image(), misleading);   // the description is kept as the backend gave it
  EXPECT_TRUE(mod.has_kernel("gpu_only"));
  EXPECT_TRUE(mod.has_kernel("block_sum"));     // in both images
  EXPECT_FALSE(mod.has_kernel("saxpy"));
  EXPECT_FALSE(mod.has_kernel("no_such_kernel"));
}

}  // namespace

#if defined(__x86_64__)
// The x86-64 levels this CPU runs, from the kernel's list of its features.
static std::string best_x86_level() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  auto has = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (!flags.contains(n)) return false;
    return true;
  };
  const bool v3 = has({"avx2", "fma", "bmi1", "bmi2", "f16c"});
  if (v3 && has({"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"})) return "x86_64_v4";
  return v3 ? "x86_64_v3" : "x86_64";
}

// Images for several x86-64 levels, as quiverc writes them: the best level this CPU runs is
// loaded; QUIVER_CPU_ARCH forces another; one this CPU cannot run is refused, naming it.
TEST(ModuleImage, CpuLoadsTheBestX86LevelAndHonoursQuiverCpuArch) {
  Device dev = Device::open("cpu");
  const std::vector<std::byte> bytes = quiver::test::make_fatbin(
      quiver::test::test_manifest(), quiver::test::cpu_kernels_so(), std::vector<std::string>{"x86_64", "x86_64_v3", "x86_64_v4"});
  {
    quiver::test::ScopedEnv unset("QUIVER_CPU_ARCH", nullptr);
    EXPECT_EQ(dev.load(bytes, "levels.qfb").backend_image(), "cpu " + best_x86_level());
  }
  {
    quiver::test::ScopedEnv baseline("QUIVER_CPU_ARCH", "x86_64");
    Module mod = dev.load(bytes, "levels.qfb");
    EXPECT_EQ(mod.backend_image(), "cpu x86_64");
    EXPECT_TRUE(mod.has_kernel("saxpy"));
  }
  quiver::test::ScopedEnv other("QUIVER_CPU_ARCH", "aarch64");
  quiver::Error e = quiver::test::error_of([&] { dev.load(bytes, "levels.qfb"); });
  EXPECT_CONTAINS(e.what(), "QUIVER_CPU_ARCH='aarch64'");
  EXPECT_CONTAINS(e.what(), "x86_64");
}
#endif

// QUIVER_CPU_SUBGROUP_SIZE forces the CPU backend's subgroup width: a power of two from 1 to
// 128 loads; anything else is refused at load, naming the variable and its value.
TEST(ModuleImage, CpuSubgroupSizeIsAPowerOfTwoUpTo128) {
  Device dev = Device::open("cpu");
  const std::vector<std::byte> bytes =
      quiver::test::make_fatbin(quiver::test::test_manifest(), quiver::test::cpu_kernels_so(), quiver::test::host_arch());
  for (const char* good : {"1", "4", "16", "128"}) {
    quiver::test::ScopedEnv width("QUIVER_CPU_SUBGROUP_SIZE", good);
    EXPECT_TRUE(dev.load(bytes, "width.qfb").has_kernel("saxpy")) << good;
  }
  for (const char* bad : {"0", "3", "256", "-4", "8x", "sixteen"}) {
    quiver::test::ScopedEnv width("QUIVER_CPU_SUBGROUP_SIZE", bad);
    quiver::Error e = quiver::test::error_of([&] { dev.load(bytes, "width.qfb"); });
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidArgument) << bad;
    EXPECT_CONTAINS(e.what(), std::string("QUIVER_CPU_SUBGROUP_SIZE=") + bad);
    EXPECT_CONTAINS(e.what(), "power of two");
  }
}
