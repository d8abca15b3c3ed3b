// A machine without the CUDA driver, or with a broken one, simulated on any machine by pointing
// the backend (QUIVER_CUDA_LIBRARY) at a library that does not exist, at one that is not the
// driver, or at fake_cuda_driver.cpp (too old, no device, devices that cannot be opened):
// Device::open("cuda") throws BackendUnavailable with the reason, Device::count("cuda") is 0
// where nothing can be opened, and automatic detection moves on to the next backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>

#include "quiver/runtime.h"

namespace {

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

TEST(CudaUnavailable, MissingLibraryIsBackendUnavailableWithReason) {
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", "libquiver-test-no-such-cuda.so.1");
  try {
    quiver::Device::open("cuda");
    FAIL() << "Device::open(\"cuda\") succeeded without a driver library";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
    const std::string what = e.what();
    EXPECT_NE(what.find("cuda"), std::string::npos) << what;
    EXPECT_NE(what.find("libquiver-test-no-such-cuda.so.1 not found"), std::string::npos) << what;
  }
}

TEST(CudaUnavailable, LibraryWithoutDriverSymbolsIsRefused) {
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", "libm.so.6");   // exists everywhere, is not the driver
  try {
    quiver::Device::open("cuda");
    FAIL() << "Device::open(\"cuda\") accepted libm as the CUDA driver";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
    EXPECT_NE(std::string(e.what()).find("libm.so.6 has no symbol cuDriverGetVersion"), std::string::npos) << e.what();
  }
  EXPECT_EQ(quiver::Device::count("cuda"), 0u);
}

// The loader pointed at an empty directory: dlopen's own message is passed on.
TEST(CudaUnavailable, EmptyLibraryDirectoryGivesTheDlopenError) {
  char dir_template[] = "/tmp/quiver-empty-driver-dir-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string library = std::string(dir_template) + "/libcuda.so.1";
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", library.c_str());
  try {
    quiver::Device::open("cuda:0");
    FAIL() << "Device::open(\"cuda:0\") succeeded from an empty directory";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
    const std::string what = e.what();
    EXPECT_NE(what.find(library + " not found"), std::string::npos) << what;
    EXPECT_NE(what.find("cannot open shared object file"), std::string::npos) << what;
  }
  EXPECT_EQ(quiver::Device::count("cuda"), 0u);
  std::filesystem::remove(dir_template);
}

// The fake driver library (fake_cuda_driver.cpp): in the build tree, or next to this test when
// the build tree was copied elsewhere.
std::string fake_driver(const char* compiled_path) {
  if (std::filesystem::exists(compiled_path)) return compiled_path;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path() / std::filesystem::path(compiled_path).filename()).string();
}

// Opens "cuda" (or `selector`) with the fake driver in `mode`; returns the error.
quiver::Error open_with_fake(const char* mode, const char* selector = "cuda",
                             const char* library = QV_TEST_FAKE_CUDA_SO) {
  const std::string path = fake_driver(library);
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", path.c_str());
  ScopedEnv fake("QUIVER_FAKE_CUDA", mode);
  try {
    quiver::Device::open(selector);
  } catch (const quiver::Error& e) {
    return e;
  }
  ADD_FAILURE() << "Device::open(\"" << selector << "\") succeeded with the fake driver in mode " << mode;
  return quiver::Error(quiver::ErrorCode::InvalidArgument, "");
}

TEST(CudaUnavailable, TooOldDriverSaysWhichVersionItIsAndNeeds) {
  const quiver::Error e = open_with_fake("too_old");
  EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
  const std::string what = e.what();
  EXPECT_NE(what.find("is version 10.2, too old"), std::string::npos) << what;
  EXPECT_NE(what.find("CUDA 11.8 or newer"), std::string::npos) << what;
}

TEST(CudaUnavailable, MissingEntryPointIsNamed) {
  const quiver::Error e = open_with_fake("zero_devices", "cuda", QV_TEST_FAKE_CUDA_NO_LAUNCH_SO);
  EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
  EXPECT_NE(std::string(e.what()).find("has no symbol cuLaunchKernel"), std::string::npos) << e.what();
}

TEST(CudaUnavailable, InitFailureNamesTheDriverError) {
  const quiver::Error e = open_with_fake("init_fails");
  EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
  EXPECT_NE(std::string(e.what()).find("cuInit failed: CUDA_ERROR_NO_DEVICE"), std::string::npos) << e.what();
}

TEST(CudaUnavailable, ZeroDevicesIsUnavailableAndCountsZero) {
  const quiver::Error e = open_with_fake("zero_devices", "cuda:0");
  EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
  EXPECT_NE(std::string(e.what()).find("reports no devices"), std::string::npos) << e.what();
  const std::string path = fake_driver(QV_TEST_FAKE_CUDA_SO);
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", path.c_str());
  ScopedEnv fake("QUIVER_FAKE_CUDA", "zero_devices");
  EXPECT_EQ(quiver::Device::count("cuda"), 0u);
}

// Devices the driver lists but that cannot be opened: counted, a bad index is NotFound naming
// how many there are, a good index says why it failed, and detection moves on.
TEST(CudaUnavailable, ListedDevicesThatCannotBeOpened) {
  const quiver::Error bad_index = open_with_fake("broken_devices", "cuda:2");
  EXPECT_EQ(bad_index.code(), quiver::ErrorCode::NotFound);
  EXPECT_NE(std::string(bad_index.what()).find("has no device 2: it has 2 devices (cuda:0 to cuda:1)"),
            std::string::npos) << bad_index.what();

  const quiver::Error broken = open_with_fake("broken_devices", "cuda:1");
  EXPECT_EQ(broken.code(), quiver::ErrorCode::BackendUnavailable);
  const std::string what = broken.what();
  EXPECT_NE(what.find("device 1 could not be opened"), std::string::npos) << what;
  EXPECT_NE(what.find("cuDevicePrimaryCtxRetain failed on Fake GPU 1: CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos) << what;

  const std::string path = fake_driver(QV_TEST_FAKE_CUDA_SO);
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", path.c_str());
  ScopedEnv fake("QUIVER_FAKE_CUDA", "broken_devices");
  ScopedEnv backend("QUIVER_BACKEND", nullptr);
  EXPECT_EQ(quiver::Device::count("cuda"), 2u);
  EXPECT_NE(quiver::Device::open().backend_name(), "cuda");
}

TEST(CudaUnavailable, DetectionFallsThroughToAnotherBackend) {
  ScopedEnv lib("QUIVER_CUDA_LIBRARY", "libquiver-test-no-such-cuda.so.1");
  ScopedEnv backend("QUIVER_BACKEND", nullptr);   // detection, not an override
  quiver::Device device = quiver::Device::open();
  EXPECT_NE(device.backend_name(), "cuda");
  EXPECT_FALSE(device.backend_name().empty());
  const auto names = quiver::Device::available_backends();
  EXPECT_EQ(std::find(names.begin(), names.end(), "cuda"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), device.backend_name()), names.end());
}

// Where the real driver is missing (CI), the unmodified backend says so too.
TEST(CudaUnavailable, RealDetectionGivesAReasonOrADevice) {
  try {
    quiver::Device d = quiver::Device::open("cuda");
    EXPECT_EQ(d.backend_name(), "cuda");
    EXPECT_FALSE(d.device_name().empty());
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
    const std::string what = e.what();
    // One of the backend's own reasons, not a generic failure.
    const bool explained = what.find("libcuda.so.1 not found") != std::string::npos ||
                           what.find("cuInit failed: CUDA_ERROR_") != std::string::npos ||
                           what.find("no devices") != std::string::npos ||
                           what.find("too old") != std::string::npos;
    EXPECT_TRUE(explained) << what;
  }
}

}  // namespace
