// Bad input gets a quiver::Error naming what is wrong, and a rejected launch runs nothing.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "quiver/runtime.h"
#include "test_fatbin.h"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using quiver::Buffer;
using quiver::Device;
using quiver::ErrorCode;
using quiver::Grid;
using quiver::Module;

const std::vector<std::byte>& fatbin() {
  static const std::vector<std::byte> bytes = quiver::test::make_test_fatbin();
  return bytes;
}

// Runs `f`, which must throw quiver::Error with `code`; returns its message.
template <typename F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const quiver::Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no quiver::Error thrown";
  return {};
}

// saxpy with y poisoned: after each rejected launch y must be exactly as uploaded.
class LaunchChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 gen{std::random_device{}()};
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    x_host.resize(n);
    for (float& v : x_host) v = dist(gen);
    y_host.assign(n, std::numeric_limits<float>::quiet_NaN());
    x.upload(x_host);
    y.upload(y_host);
  }
  void expect_y_untouched() {
    std::vector<uint32_t> got(n), want(n);
    y.download(std::span<float>(reinterpret_cast<float*>(got.data()), n));
    std::memcpy(want.data(), y_host.data(), n * sizeof(float));
    EXPECT_EQ(got, want) << "a rejected launch wrote to y";
  }

  const uint32_t n = 1000;
  Device dev = Device::open("cpu");
  Module mod = dev.load(fatbin(), "test.qfb");
  quiver::Kernel saxpy = mod.kernel("saxpy");
  Buffer<float> x = dev.alloc<float>(n);
  Buffer<float> y = dev.alloc<float>(n);
  std::vector<float> x_host, y_host;
  const Grid grid{(n + 255) / 256};
};

TEST_F(LaunchChecks, TooFewArguments) {
  std::string msg = error_of([&] { saxpy.launch(grid, x, y, 2.0f); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': expected 4 arguments (x, y, a, n), got 3");
  expect_y_untouched();
}

TEST_F(LaunchChecks, TooManyArguments) {
  std::string msg = error_of([&] { saxpy.launch(grid, x, y, 2.0f, n, n); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': expected 4 arguments (x, y, a, n), got 5");
  expect_y_untouched();
}

TEST_F(LaunchChecks, WrongScalarType) {
  std::string msg = error_of([&] { saxpy.launch(grid, x, y, int32_t{2}, n); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': argument 3 ('a'): expected float scalar, got int32_t");
  msg = error_of([&] { saxpy.launch(grid, x, y, 2.0f, int32_t{1000}); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': argument 4 ('n'): expected uint32_t scalar, got int32_t");
  expect_y_untouched();
}

TEST_F(LaunchChecks, ScalarWhereBufferExpected) {
  std::string msg = error_of([&] { saxpy.launch(grid, 1.0f, y, 2.0f, n); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': argument 1 ('x'): expected Buffer<float>, got float");
  expect_y_untouched();
}

TEST_F(LaunchChecks, BufferWhereScalarExpected) {
  std::string msg = error_of([&] { saxpy.launch(grid, x, y, x, n); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': argument 3 ('a'): expected float scalar, got Buffer<float>");
  expect_y_untouched();
}

TEST_F(LaunchChecks, WrongBufferElementType) {
  Buffer<int32_t> xi = dev.alloc<int32_t>(n);
  std::string msg = error_of([&] { saxpy.launch(grid, xi, y, 2.0f, n); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': argument 1 ('x'): expected Buffer<float>, got Buffer<int32_t>");
  expect_y_untouched();
}

TEST_F(LaunchChecks, BufferFromAnotherDevice) {
  Device other = Device::open("cpu");
  Buffer<float> foreign = other.alloc<float>(n);
  foreign.upload(x_host);
  std::string msg = error_of([&] { saxpy.launch(grid, foreign, y, 2.0f, n); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, AllOf(HasSubstr("kernel 'saxpy': argument 1 ('x')"), HasSubstr("different quiver::Device")));
  expect_y_untouched();
}

TEST_F(LaunchChecks, EmptyBuffer) {
  Buffer<float> empty;
  std::string msg = error_of([&] { saxpy.launch(grid, x, empty, 2.0f, n); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("kernel 'saxpy': argument 2 ('y'): the Buffer is empty"));
  expect_y_untouched();
}

TEST_F(LaunchChecks, ZeroGridDimension) {
  std::string msg = error_of([&] { saxpy.launch(Grid{4, 0, 1}, x, y, 2.0f, n); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(msg, "kernel 'saxpy': grid {4, 0, 1}: every dimension must be >= 1");
  expect_y_untouched();
}

TEST_F(LaunchChecks, GridOverflowingGlobalIds) {
  std::string msg = error_of([&] { saxpy.launch(Grid{1u << 24}, x, y, 2.0f, n); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, AllOf(HasSubstr("kernel 'saxpy': grid.x"), HasSubstr("uint32_t")));
  expect_y_untouched();
}

TEST_F(LaunchChecks, VectorBufferSizeMustBeAMultipleOfTheWidth) {
  Buffer<float> a = dev.alloc<float>(4 * 10 + 2);
  Buffer<float> b = dev.alloc<float>(4 * 10);
  std::vector<float> b_host(40, std::numeric_limits<float>::quiet_NaN());
  b.upload(b_host);
  quiver::Kernel k = mod.kernel("vec4_add");
  std::string msg = error_of([&] { k.launch(Grid{1}, a, b, uint32_t{10}); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, AllOf(HasSubstr("kernel 'vec4_add': argument 1 ('a')"), HasSubstr("42 elements"),
                         HasSubstr("multiple of 4")));
  Buffer<int32_t> wrong = dev.alloc<int32_t>(40);
  msg = error_of([&] { k.launch(Grid{1}, wrong, b, uint32_t{10}); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("argument 1 ('a'): expected Buffer<float> (for vec<float, 4>*"));
  std::vector<float> got(40);
  b.download(got);
  for (float v : got) ASSERT_TRUE(std::isnan(v)) << "a rejected launch wrote to b";
}

TEST_F(LaunchChecks, KernelWithoutCpuImage) {
  quiver::Kernel k = mod.kernel("gpu_only");
  std::string msg = error_of([&] { k.launch(Grid{1}, y); }, ErrorCode::NotFound);
  EXPECT_THAT(msg, AllOf(HasSubstr("'gpu_only'"), HasSubstr("test.qfb"), HasSubstr("ptx")));
  expect_y_untouched();
}

TEST_F(LaunchChecks, BarrierInABarrierFreeKernelIsReported) {
  quiver::Kernel k = mod.kernel("stray_barrier");
  std::string msg = error_of([&] { k.launch(Grid{2}, y); }, ErrorCode::DeviceError);
  EXPECT_THAT(msg, AllOf(HasSubstr("'stray_barrier'"), HasSubstr("barrier")));
}

TEST_F(LaunchChecks, UploadAndDownloadBounds) {
  std::vector<float> big(n + 1);
  std::string msg = error_of([&] { y.upload(big); }, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, AllOf(HasSubstr("1001"), HasSubstr("1000")));
  error_of([&] { y.download(big); }, ErrorCode::InvalidArgument);
  expect_y_untouched();
}

TEST(ModuleErrors, UnknownKernelNamesFileAndListsKernels) {
  Device dev = Device::open("cpu");
  Module mod = dev.load(fatbin(), "ops.qfb");
  std::string msg = error_of([&] { mod.kernel("saxpi"); }, ErrorCode::NotFound);
  EXPECT_THAT(msg, AllOf(HasSubstr("kernel 'saxpi' not found in 'ops.qfb'"), HasSubstr("saxpy, block_sum")));
}

TEST(ModuleErrors, NoImageForThisHost) {
  Device dev = Device::open("cpu");
  std::vector<std::byte> bytes =
      quiver::test::make_fatbin(quiver::test::test_manifest(), quiver::test::cpu_kernels_so(), "riscv64");
  std::string msg = error_of([&] { dev.load(bytes, "other.qfb"); }, ErrorCode::NotFound);
  EXPECT_THAT(msg, AllOf(HasSubstr("'other.qfb' has no cpu image for " + quiver::test::host_arch()),
                         HasSubstr("ptx sm_80"), HasSubstr("cpu riscv64")));
}

TEST(ModuleErrors, CpuImageThatIsNotASharedObject) {
  Device dev = Device::open("cpu");
  std::vector<std::byte> junk(4096, std::byte{0x5A});
  std::vector<std::byte> bytes =
      quiver::test::make_fatbin(quiver::test::test_manifest(), junk, quiver::test::host_arch());
  std::string msg = error_of([&] { dev.load(bytes, "junk.qfb"); }, ErrorCode::InvalidFatBinary);
  EXPECT_THAT(msg, AllOf(HasSubstr("image of 'junk.qfb'"), HasSubstr("ELF")));
}

// docs/abi.md "CPU": an image for a later CPU ABI may read what this runtime does not pass; the
// load refuses it naming the versions. (The other tests' image has no __qv_cpu_abi, as images
// built before it existed, and loads.)
TEST(ModuleErrors, CpuImageOfALaterAbi) {
  Device dev = Device::open("cpu");
  std::vector<std::byte> bytes = quiver::test::make_fatbin(
      quiver::test::test_manifest(), quiver::test::cpu_kernels_future_abi_so(), quiver::test::host_arch());
  std::string msg = error_of([&] { dev.load(bytes, "future.qfb"); }, ErrorCode::InvalidFatBinary);
  EXPECT_THAT(msg, AllOf(HasSubstr("image of 'future.qfb'"), HasSubstr("built for CPU ABI 1000"),
                         HasSubstr("this runtime runs CPU ABI 1 to 2")));
}

TEST(ModuleErrors, SymbolMissingFromTheImage) {
  Device dev = Device::open("cpu");
  // A well-formed file whose CPU image claims a kernel the shared object does not define.
  quiver::format::Manifest m = quiver::test::test_manifest();
  m.kernels.back().targets.push_back(quiver::format::Target::CPU);   // "gpu_only"
  std::vector<std::byte> bytes =
      quiver::test::make_fatbin(m, quiver::test::cpu_kernels_so(), quiver::test::host_arch());
  std::string msg = error_of([&] { dev.load(bytes, "lying.qfb"); }, ErrorCode::InvalidFatBinary);
  EXPECT_THAT(msg, AllOf(HasSubstr("kernel 'gpu_only'"), HasSubstr("qv_k6_gpu_only"), HasSubstr("lying.qfb")));
}

TEST(ModuleErrors, MissingFileIsAnError) {
  Device dev = Device::open("cpu");
  EXPECT_THROW(dev.load(std::string("/nonexistent/dir/ops.qfb")), quiver::Error);
}

TEST(BackendSelection, UnknownBackendListsKnownOnes) {
  std::string msg = error_of([] { Device::open("gpu9000"); }, ErrorCode::NotFound);
  EXPECT_THAT(msg, AllOf(HasSubstr("unknown backend 'gpu9000'"), HasSubstr("cpu")));
}

TEST(BackendSelection, DefinedButNotBuiltBackend) {
  std::string msg = error_of([] { Device::open("metal"); }, ErrorCode::BackendUnavailable);
  EXPECT_THAT(msg, AllOf(HasSubstr("'metal'"), HasSubstr("not built")));
}

TEST(BackendSelection, CpuIsAlwaysAvailable) {
  std::vector<std::string> names = Device::available_backends();
  EXPECT_THAT(names, ::testing::Contains("cpu"));
  EXPECT_EQ(Device::open("CPU").backend_name(), "cpu");
}

// Restores QUIVER_BACKEND whatever the test does.
class EnvGuard {
 public:
  EnvGuard() {
    if (const char* v = std::getenv("QUIVER_BACKEND")) saved_ = v;
  }
  ~EnvGuard() {
    if (saved_) setenv("QUIVER_BACKEND", saved_->c_str(), 1);
    else unsetenv("QUIVER_BACKEND");
  }

 private:
  std::optional<std::string> saved_;
};

TEST(BackendSelection, QuiverBackendEnvironmentVariable) {
  EnvGuard guard;
  setenv("QUIVER_BACKEND", "cpu", 1);
  Device dev = Device::open();
  EXPECT_EQ(dev.backend_name(), "cpu");
  // It works end to end, not just by name.
  Module mod = dev.load(fatbin());
  Buffer<float> x = dev.alloc<float>(256), y = dev.alloc<float>(256);
  std::vector<float> xs(256), ys(256);
  for (int i = 0; i < 256; ++i) xs[i] = float(i) * 0.5f, ys[i] = 1.0f - float(i);
  x.upload(xs);
  y.upload(ys);
  mod.kernel("saxpy").launch(Grid{1}, x, y, 3.0f, uint32_t{256});
  std::vector<float> got(256);
  y.download(got);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(got[i], 3.0f * xs[i] + ys[i]);

  setenv("QUIVER_BACKEND", "nosuch", 1);
  std::string msg = error_of([] { Device::open(); }, ErrorCode::NotFound);
  EXPECT_THAT(msg, AllOf(HasSubstr("'nosuch'"), HasSubstr("QUIVER_BACKEND")));
  // An explicit name wins over the environment.
  EXPECT_EQ(Device::open("cpu").backend_name(), "cpu");
}

}  // namespace
