// A machine without the CUDA driver, simulated on any machine by pointing the backend at a
// library that does not exist (QUIVER_CUDA_LIBRARY) or is not the driver: Device::open("cuda")
// throws BackendUnavailable with the reason, and automatic detection moves on to the next
// backend instead of failing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

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
    EXPECT_NE(std::string(e.what()).find("has no symbol cuInit"), std::string::npos) << e.what();
  }
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
                           what.find("no devices") != std::string::npos;
    EXPECT_TRUE(explained) << what;
  }
}

}  // namespace
