// The CUDA backend through the public API (quiver::Device::open("cuda")), with a hand-written
// PTX saxpy that follows docs/abi.md (buffers are .u64 device pointers, scalars by value).
// These tests need an NVIDIA driver and GPU: they skip — printing the backend's reason — only
// when the CUDA backend reports no driver or device. The tests that simulate a machine without
// libcuda run everywhere.
#include <gtest/gtest.h>

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
#include "cuda_test_ptx.h"
#include "quiver/runtime.h"

namespace {

using quiver::ErrorCode;
using quiver::format::Access;
using quiver::format::ScalarType;
using quiver::format::Target;
using quiver::test::kSaxpyPtx;

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

quiver::format::Manifest saxpy_manifest(std::vector<Target> targets) {
  quiver::format::Manifest m;
  m.compiler_version = "hand-written PTX";
  m.source_hash = "0123456789abcdef";
  quiver::format::Kernel k;
  k.name = "saxpy";
  k.symbol = "qv_k0_saxpy";
  auto param = [](std::string name, ScalarType t, bool is_buffer, Access a) {
    quiver::format::Param p;
    p.name = std::move(name);
    p.type = t;
    p.is_buffer = is_buffer;
    p.access = a;
    return p;
  };
  k.params = {param("x", ScalarType::F32, true, Access::Read), param("y", ScalarType::F32, true, Access::ReadWrite),
              param("a", ScalarType::F32, false, Access::Read), param("n", ScalarType::U32, false, Access::Read)};
  k.block = {256, 1, 1};
  k.targets = std::move(targets);
  m.kernels.push_back(std::move(k));
  return m;
}

std::vector<std::byte> ptx_fatbin(const std::string& ptx, const std::string& arch = "sm_80") {
  std::vector<quiver::format::ImageInput> images;
  images.push_back({Target::PTX, arch, bytes_of(ptx), {"qv_k0_saxpy"}});
  return quiver::format::write_fatbin(saxpy_manifest({Target::PTX}), images, 3);
}

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_.emplace(quiver::Device::open("cuda"));
    } catch (const quiver::Error& e) {
      if (e.code() == ErrorCode::BackendUnavailable) GTEST_SKIP() << "no CUDA driver/device: " << e.what();
      FAIL() << e.what();
    }
    std::printf("cuda device: %s\n", device_->device_name().c_str());
  }

  // Runs saxpy from `module` on fresh random data and checks it against the host.
  void check_saxpy(const quiver::Module& module) {
    const uint32_t n = std::uniform_int_distribution<uint32_t>(100'000, 300'000)(rng_);
    const size_t pad = 333;
    std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
    std::vector<float> x(n + pad), y(n + pad);
    for (auto& v : x) v = dist(rng_);
    for (auto& v : y) v = dist(rng_);
    for (size_t i = n; i < n + pad; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    const float a = dist(rng_);
    auto bx = device_->alloc<float>(x.size());
    auto by = device_->alloc<float>(y.size());
    bx.upload(x);
    by.upload(y);
    module.kernel("saxpy").launch(quiver::Grid{(n + 255) / 256 + 2}, bx, by, a, n);
    device_->synchronize();
    std::vector<float> got(y.size(), 0.0f);
    by.download(got);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], std::fma(a, x[i], y[i])) << "i=" << i;   // fma.rn: exact
    for (size_t i = n; i < got.size(); ++i) ASSERT_TRUE(std::isnan(got[i])) << "tail element " << i << " written";
  }

  std::optional<quiver::Device> device_;
  std::mt19937 rng_{std::random_device{}()};
};

TEST_F(CudaBackend, PtxSaxpyJitCompiledAndCorrect) {
  EXPECT_EQ(device_->backend_name(), "cuda");
  quiver::Module module = device_->load(ptx_fatbin(kSaxpyPtx), "saxpy.qfb");
  EXPECT_EQ(module.backend_image(), "ptx sm_80 (JIT)");
  check_saxpy(module);
  check_saxpy(module);   // a second launch on the same module and fresh buffers
}

// The smallest well-formed CUDA ELF: a header with no sections. It passes the backend's bounds
// check, and the driver refuses it (there is no code in it).
std::vector<std::byte> empty_cuda_elf() {
  std::vector<std::byte> out(64, std::byte{0});
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out[at + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(0, 0x464c457f, 4);
  put(4, 2, 1);
  put(5, 1, 1);
  put(6, 1, 1);
  put(16, 2, 2);
  put(18, 190, 2);
  put(20, 1, 4);
  put(52, 64, 2);
  return out;
}

// One cubin image per SM the device could report, each carrying `cubin`, plus the PTX.
std::vector<std::byte> cubins_and_ptx(const std::vector<std::byte>& cubin) {
  std::vector<quiver::format::ImageInput> images;
  for (int major = 5; major <= 12; ++major)
    for (int minor = 0; minor <= 9; ++minor)
      images.push_back({Target::CUBIN, "sm_" + std::to_string(major * 10 + minor), cubin, {"qv_k0_saxpy"}});
  images.push_back({Target::PTX, "sm_80", bytes_of(kSaxpyPtx), {"qv_k0_saxpy"}});
  return quiver::format::write_fatbin(saxpy_manifest({Target::PTX, Target::CUBIN}), images, 3);
}

TEST_F(CudaBackend, CubinTheDriverRefusesFallsBackToPtx) {
  // The best-ranked cubin is tried first, the driver refuses it, and the PTX image is loaded.
  quiver::Module module = device_->load(cubins_and_ptx(empty_cuda_elf()), "fallback.qfb");
  EXPECT_EQ(module.backend_image(), "ptx sm_80 (JIT)");
  check_saxpy(module);
}

TEST_F(CudaBackend, MalformedCubinIsRefusedBeforeTheDriver) {
  // Not ELF: the driver would take it for PTX text and read past its end looking for a NUL.
  try {
    device_->load(cubins_and_ptx(std::vector<std::byte>(256, std::byte{0x42})), "garbage.qfb");
    FAIL() << "a non-ELF cubin was loaded";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidFatBinary);
    const std::string what = e.what();
    EXPECT_NE(what.find("garbage.qfb"), std::string::npos) << what;
    EXPECT_NE(what.find("not an ELF"), std::string::npos) << what;
  }
}

TEST_F(CudaBackend, PtxTooNewIsNotFoundListingImages) {
  try {
    device_->load(ptx_fatbin(kSaxpyPtx, "sm_999"), "future.qfb");
    FAIL() << "PTX for sm_999 loaded";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    const std::string what = e.what();
    EXPECT_NE(what.find("future.qfb"), std::string::npos) << what;
    EXPECT_NE(what.find("ptx sm_999"), std::string::npos) << what;
  }
}

TEST_F(CudaBackend, BrokenPtxReportsTheJitLog) {
  std::string broken = kSaxpyPtx;
  broken.replace(broken.find("fma.rn.f32"), 10, "fma.zz.f32");
  try {
    device_->load(ptx_fatbin(broken), "broken.qfb");
    FAIL() << "broken PTX loaded";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceError);
    const std::string what = e.what();
    EXPECT_NE(what.find("broken.qfb"), std::string::npos) << what;
    EXPECT_NE(what.find("JIT log"), std::string::npos) << what;
  }
}

TEST_F(CudaBackend, LaunchFailureNamesKernelAndDriverError) {
  quiver::Module module = device_->load(ptx_fatbin(kSaxpyPtx), "saxpy.qfb");
  auto bx = device_->alloc<float>(16);
  auto by = device_->alloc<float>(16);
  try {
    // grid.y is limited to 65535 on every CUDA device.
    module.kernel("saxpy").launch(quiver::Grid{1, 70000, 1}, bx, by, 1.0f, 16u);
    device_->synchronize();
    FAIL() << "a grid.y of 70000 was accepted";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceError);
    const std::string what = e.what();
    EXPECT_NE(what.find("saxpy"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << what;
  }
}

TEST_F(CudaBackend, KernelWithoutCudaImageIsNotFound) {
  quiver::format::Manifest m = saxpy_manifest({Target::PTX});
  quiver::format::Kernel cpu_only = m.kernels[0];
  cpu_only.name = "cpu_only";
  cpu_only.symbol = "qv_k1_cpu_only";
  cpu_only.targets = {Target::CPU};
  m.kernels.push_back(cpu_only);
  std::vector<quiver::format::ImageInput> images;
  images.push_back({Target::PTX, "sm_80", bytes_of(kSaxpyPtx), {"qv_k0_saxpy"}});
  images.push_back({Target::CPU, "x86_64", std::vector<std::byte>(16, std::byte{1}), {"qv_k1_cpu_only"}});
  quiver::Module module = device_->load(quiver::format::write_fatbin(m, images, 3), "mixed.qfb");
  auto bx = device_->alloc<float>(16);
  auto by = device_->alloc<float>(16);
  try {
    module.kernel("cpu_only").launch(quiver::Grid{1}, bx, by, 1.0f, 16u);
    FAIL() << "cpu_only launched on CUDA";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_NE(std::string(e.what()).find("cpu_only"), std::string::npos) << e.what();
  }
  check_saxpy(module);   // the module's other kernel still works
}

}  // namespace
