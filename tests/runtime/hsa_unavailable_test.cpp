// The HIP backend on a machine without an AMD GPU (every machine quiver has been tested on):
// Device::open("hip") throws BackendUnavailable saying why, Device::count("hip") is 0, and
// automatic detection moves on to the next backend. Simulated states, through
// QUIVER_HSA_LIBRARY: no library, a library that is not the HSA runtime; and this machine's
// own state (ROCm's runtime installed without a GPU, as CI installs it, or no runtime at all).
#include <dlfcn.h>
#include <unistd.h>

#include <gtest/gtest.h>

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

std::string open_hip_error() {
  try {
    quiver::Device::open("hip");
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "Device::open(\"hip\") succeeded";
  return {};
}

TEST(HsaUnavailable, MissingLibraryIsBackendUnavailableWithReason) {
  ScopedEnv lib("QUIVER_HSA_LIBRARY", "libquiver-test-no-such-hsa.so.1");
  std::string what = open_hip_error();
  EXPECT_NE(what.find("hip"), std::string::npos) << what;
  EXPECT_NE(what.find("libquiver-test-no-such-hsa.so.1 not found"), std::string::npos) << what;
  EXPECT_EQ(quiver::Device::count("hip"), 0u);
}

TEST(HsaUnavailable, LibraryThatIsNotTheRuntimeIsRefused) {
  ScopedEnv lib("QUIVER_HSA_LIBRARY", "libm.so.6");   // exists everywhere, exports no hsa_*
  std::string what = open_hip_error();
  EXPECT_NE(what.find("libm.so.6 has no symbol hsa_init"), std::string::npos) << what;
  EXPECT_EQ(quiver::Device::count("hip"), 0u);
}

// This machine as it is. With ROCm's runtime installed (scripts/bootstrap.sh installs Debian's
// libhsa-runtime64-1) every symbol of the table resolves and hsa_init itself reports that
// there is no GPU driver; without it, the library is missing. Either way: a clear reason.
TEST(HsaUnavailable, ThisMachineHasNoUsableAmdGpu) {
  ScopedEnv lib("QUIVER_HSA_LIBRARY", nullptr);
  if (::access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "this machine has the amdgpu compute driver (/dev/kfd)";
  void* runtime = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_LOCAL);
  std::string what = open_hip_error();
  if (runtime) {
    EXPECT_EQ(what.find("has no symbol"), std::string::npos) << "the symbol table names a function ROCm lacks: " << what;
    EXPECT_NE(what.find("hsa_init failed: hsa_status_t 0x"), std::string::npos) << what;
  } else {
    EXPECT_NE(what.find("libhsa-runtime64.so.1 not found"), std::string::npos) << what;
  }
  EXPECT_EQ(quiver::Device::count("hip"), 0u);
}

TEST(HsaUnavailable, DetectionMovesOnToTheNextBackend) {
  ScopedEnv backend("QUIVER_BACKEND", nullptr);
  for (const char* library : {"libquiver-test-no-such-hsa.so.1", "libm.so.6"}) {
    ScopedEnv lib("QUIVER_HSA_LIBRARY", library);
    quiver::Device dev = quiver::Device::open();
    EXPECT_NE(dev.backend_name(), "hip") << library;
    EXPECT_FALSE(dev.backend_name().empty());
  }
}

}  // namespace
