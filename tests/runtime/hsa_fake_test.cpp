// The HIP backend end to end against hsa_fake_runtime.cpp (QUIVER_HSA_LIBRARY): opening the
// device, memory round trips through the staging path, loading the kernel suite's gfx90a code
// object (kernarg and LDS sizes read from its real kernel descriptors), and the AQL packets the
// backend writes — header, grid, segment sizes, kernel object, completion signal, and the
// kernarg bytes at docs/abi.md's offsets. The fake runs no kernel code, so results are not
// checked here: on real hardware this path has never run (docs/targets.md).
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

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

constexpr size_t kRecord = 64 + 256;   // a packet and its first 256 kernarg bytes

struct Dispatch {
  uint16_t header, setup, wg[3];
  uint32_t grid[3], private_size, group_size;
  uint64_t kernel_object, kernarg_address, signal;
  std::vector<unsigned char> kernargs;
};

// The packets the fake runtime (loaded by the backend) has seen, read through its test hook.
std::vector<Dispatch> dispatches() {
  void* fake = dlopen(QV_TEST_FAKE_HSA_SO, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(fake, nullptr) << "the backend did not load the fake runtime";
  if (!fake) return {};
  auto get = reinterpret_cast<size_t (*)(unsigned char*, size_t)>(dlsym(fake, "qv_fake_hsa_dispatches"));
  std::vector<unsigned char> raw(64 * kRecord);
  size_t n = get(raw.data(), raw.size());
  std::vector<Dispatch> out;
  for (size_t i = 0; i < n && i < 64; ++i) {
    const unsigned char* r = raw.data() + i * kRecord;
    Dispatch d;
    std::memcpy(&d.header, r, 2);
    std::memcpy(&d.setup, r + 2, 2);
    std::memcpy(d.wg, r + 4, 6);
    std::memcpy(d.grid, r + 12, 12);
    std::memcpy(&d.private_size, r + 24, 4);
    std::memcpy(&d.group_size, r + 28, 4);
    std::memcpy(&d.kernel_object, r + 32, 8);
    std::memcpy(&d.kernarg_address, r + 40, 8);
    std::memcpy(&d.signal, r + 56, 8);
    d.kernargs.assign(r + 64, r + kRecord);
    out.push_back(std::move(d));
  }
  dlclose(fake);
  return out;
}

void clear_dispatches() {
  void* fake = dlopen(QV_TEST_FAKE_HSA_SO, RTLD_NOW | RTLD_NOLOAD);
  if (!fake) return;
  reinterpret_cast<void (*)()>(dlsym(fake, "qv_fake_hsa_clear"))();
  dlclose(fake);
}

template <typename T>
T at(const std::vector<unsigned char>& bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

TEST(HsaFakeRuntime, OpensLoadsAndCopies) {
  ScopedEnv lib("QUIVER_HSA_LIBRARY", QV_TEST_FAKE_HSA_SO);
  quiver::Device dev = quiver::Device::open("hip");
  EXPECT_EQ(dev.backend_name(), "hip");
  EXPECT_NE(dev.device_name().find("Fake AMD GPU"), std::string::npos) << dev.device_name();
  quiver::Module mod = dev.load(QV_TEST_KERNELS_QFB);
  EXPECT_EQ(mod.backend_image(), "hsaco gfx90a");

  std::mt19937 rng(std::random_device{}());
  std::vector<float> in(3000), out(3000, -1.0f);
  for (float& v : in) v = std::uniform_real_distribution<float>(-100, 100)(rng);
  quiver::Buffer<float> buffer = dev.alloc<float>(in.size());
  buffer.upload(in);
  buffer.download(out);
  EXPECT_EQ(in, out);
}

TEST(HsaFakeRuntime, LaunchesWriteTheAbisPacketsInOrder) {
  ScopedEnv lib("QUIVER_HSA_LIBRARY", QV_TEST_FAKE_HSA_SO);
  quiver::Device dev = quiver::Device::open("hip");
  quiver::Module mod = dev.load(QV_TEST_KERNELS_QFB);
  clear_dispatches();
  quiver::Buffer<float> x = dev.alloc<float>(4096), y = dev.alloc<float>(4096), partial = dev.alloc<float>(16);
  std::mt19937 rng(std::random_device{}());
  const float a = std::uniform_real_distribution<float>(-4, 4)(rng);
  const uint32_t n = 1000 + rng() % 3000;
  mod.kernel("saxpy").launch(quiver::Grid{(n + 255) / 256}, x, y, a, n);
  mod.kernel("block_sum").launch(quiver::Grid{16, 1, 1}, x, partial, n);
  dev.synchronize();

  std::vector<Dispatch> d = dispatches();
  ASSERT_EQ(d.size(), 2u);
  for (const Dispatch& p : d) {
    EXPECT_EQ(p.header & 0xff, 2) << "kernel dispatch";
    EXPECT_EQ((p.header >> 8) & 1, 1) << "barrier bit";
    EXPECT_EQ((p.header >> 9) & 3, 2);
    EXPECT_EQ((p.header >> 11) & 3, 2);
    EXPECT_EQ(p.setup & 3, 3);
    EXPECT_NE(p.kernel_object, 0u);
    EXPECT_NE(p.signal, 0u);
    EXPECT_NE(p.kernarg_address, 0u);
    EXPECT_EQ(p.kernarg_address % 16, 0u);
  }
  // saxpy(x, y, a, n): block 256, (n+255)/256 blocks; x at 0, y at 8, a at 16, n at 20.
  EXPECT_EQ(d[0].wg[0], 256);
  EXPECT_EQ(d[0].wg[1], 1);
  EXPECT_EQ(d[0].grid[0], (n + 255) / 256 * 256);
  EXPECT_EQ(d[0].grid[1], 1u);
  EXPECT_EQ(d[0].group_size, 0u);
  EXPECT_EQ(at<uint64_t>(d[0].kernargs, 0), x.native_handle());
  EXPECT_EQ(at<uint64_t>(d[0].kernargs, 8), y.native_handle());
  EXPECT_EQ(at<float>(d[0].kernargs, 16), a);
  EXPECT_EQ(at<uint32_t>(d[0].kernargs, 20), n);
  // block_sum(in, partial, n): 256 floats of LDS, from the code object's kernel descriptor.
  EXPECT_EQ(d[1].grid[0], 16u * 256u);
  EXPECT_EQ(d[1].group_size, 1024u);
  EXPECT_EQ(at<uint64_t>(d[1].kernargs, 0), x.native_handle());
  EXPECT_EQ(at<uint64_t>(d[1].kernargs, 8), partial.native_handle());
  EXPECT_EQ(at<uint32_t>(d[1].kernargs, 16), n);
  EXPECT_NE(d[0].kernel_object, d[1].kernel_object);
}

TEST(HsaFakeRuntime, AnAgentWithoutItsCodeObjectIsNotFound) {
  ScopedEnv lib("QUIVER_HSA_LIBRARY", QV_TEST_FAKE_HSA_SO);
  ScopedEnv isa("QV_FAKE_HSA_ISA", "gfx1030");
  quiver::Device dev = quiver::Device::open("hip");
  try {
    dev.load(QV_TEST_KERNELS_QFB);
    FAIL() << "loaded a code object on gfx1030";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::NotFound);
    const std::string what = e.what();
    EXPECT_NE(what.find("needs hsaco gfx1030"), std::string::npos) << what;
    EXPECT_NE(what.find("hsaco gfx90a"), std::string::npos) << what;
  }
}

}  // namespace
