// Compiles what compiler/pack/header.cpp generates (build-time outputs of quiver_header_gen)
// and checks it: the embedded bytes, the exact wrapper signatures, and the wrappers running
// kernels through the real runtime on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "cpu.h"
#include "empty.h"
#include "sig.h"

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::Grid;

// ---- Signatures: exact types, checked at compile time. --------------------------------------
template <typename... P>
using Fn = void (*)(const Device&, Grid, P...);

static_assert(std::is_same_v<decltype(&gen::sig::saxpy),
                             Fn<const Buffer<float>&, Buffer<float>&, float, uint32_t>>);
static_assert(std::is_same_v<decltype(&gen::sig::all_scalars),
                             Fn<Buffer<uint8_t>&, bool, int32_t, uint32_t, int64_t, uint64_t, float,
                                quiver::half, quiver::bf16>>);
static_assert(std::is_same_v<decltype(&gen::sig::all_buffers),
                             Fn<const Buffer<quiver::half>&, Buffer<quiver::bf16>&, const Buffer<int8_t>&,
                                Buffer<uint16_t>&, const Buffer<double>&, const Buffer<bool>&,
                                Buffer<int16_t>&, Buffer<uint64_t>&, const Buffer<int64_t>&,
                                const Buffer<uint8_t>&, Buffer<int32_t>&>>);
// A buffer of qv::vec<T, N> is a Buffer<T>.
static_assert(std::is_same_v<decltype(&gen::sig::vec_buffers),
                             Fn<const Buffer<float>&, Buffer<quiver::half>&, Buffer<quiver::bf16>&>>);
static_assert(std::is_same_v<decltype(&gen::sig::awkward_names),
                             Fn<Buffer<float>&, const Buffer<float>&, uint32_t, float, int32_t, uint32_t,
                                int64_t, uint32_t, uint32_t>>);
static_assert(std::is_same_v<decltype(&gen::sig::no_params), Fn<>>);
static_assert(std::is_same_v<decltype(&gen::sig::load), quiver::Module (*)(const Device&)>);
static_assert(std::is_same_v<decltype(&gen::sig::fatbin), std::span<const std::byte> (*)()>);
static_assert(std::is_same_v<decltype(&gen_empty::fatbin), std::span<const std::byte> (*)()>);
// A read-write buffer does not bind to a const Buffer; a wrong element type does not convert.
static_assert(!std::is_invocable_v<decltype(gen::sig::saxpy), const Device&, Grid, const Buffer<float>&,
                                   const Buffer<float>&, float, uint32_t>);
static_assert(!std::is_invocable_v<decltype(gen::sig::saxpy), const Device&, Grid, const Buffer<int32_t>&,
                                   Buffer<float>&, float, uint32_t>);
static_assert(std::is_invocable_v<decltype(gen::sig::saxpy), const Device&, Grid, Buffer<float>&,
                                  Buffer<float>&, float, uint32_t>);

std::vector<std::byte> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << "cannot read " << path;
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  for (size_t i = 0; i < c.size(); ++i) out[i] = static_cast<std::byte>(c[i]);
  return out;
}

// ---- Embedded bytes. -------------------------------------------------------------------------
TEST(GeneratedEmbed, RandomMegabytesRoundTrip) {
  std::vector<std::byte> expected = read_file(QUIVER_TEST_SIG_BIN);
  ASSERT_GT(expected.size(), 2u << 20);
  std::span<const std::byte> got = gen::sig::fatbin();
  ASSERT_EQ(got.size(), expected.size());
  size_t first_mismatch = got.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected[i]) {
      first_mismatch = i;
      break;
    }
  EXPECT_EQ(first_mismatch, got.size()) << "embedded bytes differ from sig.bin";
}

TEST(GeneratedEmbed, RealFatBinaryRoundTrip) {
  std::vector<std::byte> expected = read_file(QUIVER_TEST_CPU_QFB);
  std::span<const std::byte> got = gen::cpu::fatbin();
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin()));
}

TEST(GeneratedEmbed, EmptyFatBinary) { EXPECT_EQ(gen_empty::fatbin().size(), 0u); }

// ---- Wrappers running on the CPU backend. ----------------------------------------------------
class GeneratedWrappers : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    std::cout << "seed " << seed_ << "\n";
  }
  std::vector<float> random_floats(size_t n) {
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    return v;
  }
  uint32_t random_size() { return 1 + static_cast<uint32_t>(rng_() % 5000); }
  static Grid grid_for(uint32_t n, uint32_t block) { return Grid{(n + block - 1) / block}; }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

// float results of a*x+y may differ from the host by contraction (fma) in either compiler.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, uint32_t seed) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << "element " << i << ", seed " << seed;
}

TEST_F(GeneratedWrappers, SaxpyMatchesHost) {
  Device dev = Device::open("cpu");
  const uint32_t n = random_size();
  const float a = random_floats(1)[0];
  std::vector<float> x = random_floats(n), y = random_floats(n);
  // One extra element past n must stay untouched (the grid covers up to 255 threads past n).
  Buffer<float> dx = dev.alloc<float>(n), dy = dev.alloc<float>(n + 1);
  dx.upload(x);
  std::vector<float> y_plus = y;
  y_plus.push_back(std::numeric_limits<float>::quiet_NaN());
  dy.upload(y_plus);
  gen::cpu::saxpy(dev, grid_for(n, 256), dx, dy, a, n);
  dev.synchronize();
  std::vector<float> got(n + 1);
  dy.download(got);
  EXPECT_TRUE(std::isnan(got[n])) << "saxpy wrote past n";
  got.pop_back();
  std::vector<float> want(n);
  for (uint32_t i = 0; i < n; ++i) want[i] = a * x[i] + y[i];
  expect_close(got, want, seed_);
}

TEST_F(GeneratedWrappers, BoolScalarAndPoisonedOutput) {
  Device dev = Device::open("cpu");
  for (bool negate : {false, true}) {
    const uint32_t n = random_size();
    const float s = random_floats(1)[0];
    std::vector<float> in = random_floats(n);
    Buffer<float> din = dev.alloc<float>(n), dout = dev.alloc<float>(n);
    din.upload(in);
    dout.upload(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
    gen::cpu::select_scale(dev, grid_for(n, 256), din, dout, negate, s, n);
    dev.synchronize();
    std::vector<float> got(n), want(n);
    dout.download(got);
    for (uint32_t i = 0; i < n; ++i) want[i] = (negate ? -s : s) * in[i];
    expect_close(got, want, seed_);
  }
}

TEST_F(GeneratedWrappers, TemplateInstantiationThroughLoad) {
  Device dev = Device::open("cpu");
  const uint32_t n = random_size(), mul = static_cast<uint32_t>(rng_());
  Buffer<uint32_t> out = dev.alloc<uint32_t>(n);
  out.upload(std::vector<uint32_t>(n, 0xABABABABu));
  gen::cpu::load(dev).kernel("fill_pattern<uint32_t>").launch(grid_for(n, 64), out, mul, n);
  dev.synchronize();
  std::vector<uint32_t> got(n);
  out.download(got);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], i * mul + 7u) << "element " << i << ", seed " << seed_;
}

// load() caches per device; every device (including one created after another was destroyed)
// must get a module of its own that works.
TEST_F(GeneratedWrappers, LoadPerDevice) {
  for (int round = 0; round < 3; ++round) {
    Device a = Device::open("cpu"), b = Device::open("cpu");
    for (const Device* dev : {&a, &b, &a}) {
      const uint32_t n = random_size();
      std::vector<float> x = random_floats(n), y = random_floats(n);
      Buffer<float> dx = dev->alloc<float>(n), dy = dev->alloc<float>(n);
      dx.upload(x);
      dy.upload(y);
      gen::cpu::saxpy(*dev, grid_for(n, 256), dx, dy, 1.5f, n);
      dev->synchronize();
      std::vector<float> got(n), want(n);
      dy.download(got);
      for (uint32_t i = 0; i < n; ++i) want[i] = 1.5f * x[i] + y[i];
      expect_close(got, want, seed_);
    }
  }
}

TEST(GeneratedLoad, MissingKernelNamesKernel) {
  Device dev = Device::open("cpu");
  try {
    gen::cpu::load(dev).kernel("no_such_kernel");
    FAIL() << "kernel() accepted a name the manifest does not have";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::NotFound);
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
}

}  // namespace
