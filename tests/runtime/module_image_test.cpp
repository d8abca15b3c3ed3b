// Module::has_kernel answers from the structured description of the loaded image that the
// backend gives (backend::ImageInfo: target, arch, kernel symbols), never from the text of
// image_description(), which is for people and may say anything.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "api/impl.h"   // detail::DeviceImpl and ModuleContents: a backend module of the test's own
#include "quiver/runtime.h"
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
