// Missing or broken GPU drivers: the loaders are pointed at an empty directory (or at a library
// that is not the loader), Device::open("vulkan") fails saying why, Device::count is 0, and
// automatic detection falls back to the CPU. The CUDA side with a fake driver is in
// cuda_unavailable_test.cpp.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "quiver/runtime.h"
#include "scoped_env.h"

namespace {

using quiver::Device;
using quiver::ErrorCode;
using quiver::test::ScopedEnv;

// An empty directory for the test's lifetime.
class EmptyDirectory {
 public:
  EmptyDirectory() {
    char name[] = "/tmp/quiver-no-drivers-XXXXXX";
    if (mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = name;
  }
  ~EmptyDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

quiver::Error open_error(const char* selector) {
  try {
    Device::open(selector);
  } catch (const quiver::Error& e) {
    return e;
  }
  ADD_FAILURE() << "Device::open(\"" << selector << "\") succeeded";
  return quiver::Error(ErrorCode::InvalidArgument, "");
}

// Whether this libquiver has the Vulkan backend (it is left out when the headers were missing).
bool vulkan_built_in() {
  ScopedEnv lib("QUIVER_VULKAN_LIBRARY", "libquiver-test-no-such-loader.so.1");
  try {
    Device::open("vulkan");
  } catch (const quiver::Error& e) {
    return std::string(e.what()).find("not built into") == std::string::npos;
  }
  return true;
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// VK_DRIVER_FILES limits the loader's driver search to what it names: an empty directory or a
// manifest that does not exist leaves it with no driver at all.
TEST(VulkanUnavailable, LoaderWithoutDriversSaysSo) {
  if (!vulkan_built_in()) GTEST_SKIP() << "this libquiver has no Vulkan backend";
  EmptyDirectory empty;
  for (const std::string& drivers : {empty.path(), std::string("/nonexistent.json")}) {
    ScopedEnv files("VK_DRIVER_FILES", drivers.c_str());
    ScopedEnv legacy("VK_ICD_FILENAMES", nullptr);
    ScopedEnv added("VK_ADD_DRIVER_FILES", nullptr);
    const quiver::Error e = open_error("vulkan");
    EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable);
    const std::string what = e.what();
    if (what.find("libvulkan.so.1 not found") != std::string::npos) {
      continue;   // no loader on this machine at all: also a reason, and said as one
    }
    EXPECT_CONTAINS(what, "backend 'vulkan' is unavailable: vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER");
    EXPECT_CONTAINS(what, "the Vulkan loader found no usable driver");
    EXPECT_CONTAINS(what, "VK_DRIVER_FILES=" + drivers);
    EXPECT_EQ(Device::count("vulkan"), 0u);
  }
}

TEST(VulkanUnavailable, MissingLoaderLibraryGivesTheDlopenError) {
  if (!vulkan_built_in()) GTEST_SKIP() << "this libquiver has no Vulkan backend";
  EmptyDirectory empty;
  const std::string library = empty.path() + "/libvulkan.so.1";
  ScopedEnv lib("QUIVER_VULKAN_LIBRARY", library.c_str());
  const quiver::Error e = open_error("vulkan:0");
  EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable);
  EXPECT_CONTAINS(e.what(), library + " not found");
  EXPECT_CONTAINS(e.what(), "cannot open shared object file");
  EXPECT_EQ(Device::count("vulkan"), 0u);
}

TEST(VulkanUnavailable, LibraryThatIsNotTheLoaderIsRefused) {
  if (!vulkan_built_in()) GTEST_SKIP() << "this libquiver has no Vulkan backend";
  ScopedEnv lib("QUIVER_VULKAN_LIBRARY", "libm.so.6");
  const quiver::Error e = open_error("vulkan");
  EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable);
  EXPECT_CONTAINS(e.what(), "libm.so.6 has no vkGetInstanceProcAddr");
}

// A Vulkan device that emulates a GPU on the host (lavapipe in CI) loses to the native CPU
// backend in detection, is taken when the CPU backend cannot open, and stays reachable by name.
TEST(DriverDetection, NativeCpuIsPreferredOverAnEmulatedGpu) {
  EmptyDirectory empty;
  const std::string cuda = empty.path() + "/libcuda.so.1";
  ScopedEnv cuda_lib("QUIVER_CUDA_LIBRARY", cuda.c_str());
  ScopedEnv backend("QUIVER_BACKEND", nullptr);
  ScopedEnv cpus("QUIVER_CPU_DEVICES", nullptr);
  if (!vulkan_built_in() || Device::count("vulkan") == 0) GTEST_SKIP() << "no Vulkan device here";
  const std::string name = Device::open("vulkan").device_name();
  if (name.find("llvmpipe") == std::string::npos && name.find("SwiftShader") == std::string::npos)
    GTEST_SKIP() << "the Vulkan device (" << name << ") is not an emulated one";
  EXPECT_EQ(Device::open().backend_name(), "cpu");
  {
    ScopedEnv no_cpu("QUIVER_CPU_DEVICES", "none");
    EXPECT_EQ(Device::open().backend_name(), "vulkan");
  }
  ScopedEnv chosen("QUIVER_BACKEND", "vulkan");
  EXPECT_EQ(Device::open().backend_name(), "vulkan");
}

// No GPU driver works: detection ends on the CPU, and each backend's reason is kept.
TEST(DriverDetection, FallsBackToTheCpuWhenNoGpuDriverWorks) {
  EmptyDirectory empty;
  const std::string cuda = empty.path() + "/libcuda.so.1";
  ScopedEnv cuda_lib("QUIVER_CUDA_LIBRARY", cuda.c_str());
  ScopedEnv vk_files("VK_DRIVER_FILES", empty.path().c_str());
  ScopedEnv vk_legacy("VK_ICD_FILENAMES", nullptr);
  ScopedEnv vk_added("VK_ADD_DRIVER_FILES", nullptr);
  ScopedEnv backend("QUIVER_BACKEND", nullptr);
  ScopedEnv cpus("QUIVER_CPU_DEVICES", nullptr);
  Device dev = Device::open();
  EXPECT_EQ(dev.backend_name(), "cpu");
  EXPECT_EQ(dev.index(), 0u);
  EXPECT_EQ(Device::available_backends(), std::vector<std::string>{"cpu"});
  EXPECT_EQ(Device::count("cuda"), 0u);
  EXPECT_EQ(Device::count("vulkan"), 0u);

  // And when even the CPU backend is misconfigured, the error lists every backend's reason.
  ScopedEnv bad_cpus("QUIVER_CPU_DEVICES", "none");
  try {
    Device::open();
    FAIL() << "a backend opened";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable);
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "no quiver backend could be opened");
    EXPECT_CONTAINS(what, "cuda: " + cuda + " not found");
    if (vulkan_built_in()) {
      EXPECT_CONTAINS(what, "vulkan: ");
    }
    EXPECT_CONTAINS(what, "cpu: QUIVER_CPU_DEVICES=none is not a device count");
  }
}

}  // namespace
