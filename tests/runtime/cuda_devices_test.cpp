// Multi-device selection, queues that overlap, interop (native handles, DLPack export/import with
// memory allocated by the driver itself) and many host threads on one Device — on a real NVIDIA
// GPU. These need the driver and a device: ctest leaves them out (suite names start with
// "CudaBackend", see gpu_backends.cmake); scripts/device-check.sh runs them on the GPU machine.
// Without a device they skip, printing the backend's reason.
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_ptx.h"
#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "stress_driver.h"

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::ErrorCode;
using quiver::Grid;
using quiver::Module;
using quiver::format::Access;
using quiver::format::ScalarType;
using quiver::format::Target;

quiver::format::Param param(const char* name, ScalarType t, bool buffer, Access a = Access::Read) {
  quiver::format::Param p;
  p.name = name;
  p.type = t;
  p.is_buffer = buffer;
  p.access = a;
  return p;
}

std::vector<std::byte> ptx_fatbin(const char* ptx, quiver::format::Kernel k) {
  quiver::format::Manifest m;
  m.compiler_version = "hand-written PTX";
  m.source_hash = "0123456789abcdef";
  k.targets = {Target::PTX};
  const std::string symbol = k.symbol;
  m.kernels.push_back(std::move(k));
  std::vector<std::byte> bytes(std::strlen(ptx));
  std::memcpy(bytes.data(), ptx, bytes.size());
  std::vector<quiver::format::ImageInput> images;
  images.push_back({Target::PTX, "sm_80", std::move(bytes), {symbol}});
  return quiver::format::write_fatbin(std::move(m), images, 3);
}

std::vector<std::byte> saxpy_fatbin() {
  quiver::format::Kernel k;
  k.name = "saxpy";
  k.symbol = "qv_k0_saxpy";
  k.params = {param("x", ScalarType::F32, true), param("y", ScalarType::F32, true, Access::ReadWrite),
              param("a", ScalarType::F32, false), param("n", ScalarType::U32, false)};
  k.block = {256, 1, 1};
  return ptx_fatbin(quiver::test::kSaxpyPtx, std::move(k));
}

std::vector<std::byte> handshake_fatbin() {
  quiver::format::Kernel k;
  k.name = "handshake";
  k.symbol = "qv_k9_handshake";
  k.params = {param("flags", ScalarType::U32, true, Access::ReadWrite), param("me", ScalarType::U32, false),
              param("other", ScalarType::U32, false), param("spins", ScalarType::U32, false)};
  k.block = {1, 1, 1};
  return ptx_fatbin(quiver::test::kHandshakePtx, std::move(k));
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

class CudaBackendDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_.emplace(Device::open("cuda"));
    } catch (const quiver::Error& e) {
      if (e.code() == ErrorCode::BackendUnavailable) GTEST_SKIP() << "no CUDA driver/device: " << e.what();
      FAIL() << e.what();
    }
  }

  // saxpy on fresh data, checked exactly (fma.rn) with a poisoned tail. Given buffers set the
  // sizes: n = x's size, the tail = what y has beyond it.
  void check_saxpy(Device& dev, const Module& mod, Buffer<float>* x_in = nullptr, Buffer<float>* y_in = nullptr) {
    std::optional<Buffer<float>> own_x, own_y;
    if (!x_in) x_in = &own_x.emplace(dev.alloc<float>(70'000));
    if (!y_in) y_in = &own_y.emplace(dev.alloc<float>(x_in->size() + 100));
    const uint32_t n = static_cast<uint32_t>(x_in->size());
    const size_t total = y_in->size();
    ASSERT_GE(total, n);
    std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
    std::vector<float> x(n), y(total, std::numeric_limits<float>::quiet_NaN());
    for (float& v : x) v = dist(rng_);
    for (uint32_t i = 0; i < n; ++i) y[i] = dist(rng_);
    x_in->upload(x);
    y_in->upload(y);
    const float a = dist(rng_);
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, *x_in, *y_in, a, n);
    std::vector<float> got(total);
    y_in->download(got);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], std::fma(a, x[i], y[i])) << i;
    for (size_t i = n; i < total; ++i) ASSERT_TRUE(std::isnan(got[i])) << i;
  }

  std::optional<Device> device_;
  std::mt19937 rng_{std::random_device{}()};
};

TEST_F(CudaBackendDevices, CountAndSelection) {
  const size_t count = Device::count("cuda");
  ASSERT_GE(count, 1u);
  std::printf("cuda devices: %zu\n", count);
  for (size_t i = 0; i < count; ++i) {
    Device dev = Device::open("cuda:" + std::to_string(i));
    EXPECT_EQ(dev.index(), i);
    std::printf("cuda:%zu = %s\n", i, dev.device_name().c_str());
    check_saxpy(dev, dev.load(saxpy_fatbin(), "saxpy.qfb"));
  }
  try {
    Device::open("cuda:" + std::to_string(count));
    FAIL() << "cuda:" << count << " opened";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_CONTAINS(e.what(), "has no device " + std::to_string(count));
  }
}

TEST_F(CudaBackendDevices, EachDeviceObjectHasItsOwnStream) {
  Device other = Device::open("cuda:0");
  EXPECT_NE(device_->native_stream(), nullptr);
  EXPECT_NE(device_->native_stream(), other.native_stream());
  EXPECT_EQ(device_->native_device(), other.native_device());   // the device's primary context
  EXPECT_NE(device_->native_device(), nullptr);
}

// Two handshakes over the same memory (shared through DLPack) on two Device objects, launched
// from one host thread: each sees the other only if the two streams run them at the same time.
// On one Device (one stream) the second waits for the first, which polls in vain.
std::vector<uint32_t> handshake(Device& a, Device& b, uint32_t spins) {
  Buffer<uint32_t> flags = a.alloc<uint32_t>(4);
  flags.upload(std::vector<uint32_t>(4, 0));
  Buffer<uint32_t> flags_b = a.impl() == b.impl() ? flags : b.from_dlpack<uint32_t>(flags.to_dlpack());
  Module ma = a.load(handshake_fatbin(), "a.qfb"), mb = b.load(handshake_fatbin(), "b.qfb");
  ma.kernel("handshake").launch(Grid{1}, flags, 0u, 1u, spins);
  mb.kernel("handshake").launch(Grid{1}, flags_b, 1u, 0u, spins);
  a.synchronize();
  b.synchronize();
  std::vector<uint32_t> got(4);
  flags.download(got);
  return got;
}

TEST_F(CudaBackendDevices, LaunchesOnTwoDevicesOverlap) {
  Device second = Device::open(Device::count("cuda") > 1 ? "cuda:1" : "cuda:0");
  if (second.index() != device_->index()) {
    // Two GPUs: memory of one is not the other's, so check both run correctly side by side.
    Module m0 = device_->load(saxpy_fatbin(), "s0.qfb"), m1 = second.load(saxpy_fatbin(), "s1.qfb");
    check_saxpy(*device_, m0);
    check_saxpy(second, m1);
    second = Device::open("cuda:0");
  }
  EXPECT_EQ(handshake(*device_, second, 1u << 24), (std::vector<uint32_t>{1, 1, 1, 1}));
}

TEST_F(CudaBackendDevices, LaunchesOnOneDeviceAreOrdered) {
  std::vector<uint32_t> got = handshake(*device_, *device_, 1u << 20);
  EXPECT_EQ(got, (std::vector<uint32_t>{1, 1, 2, 1})) << "the first launch must poll in vain, the second see it";
}

TEST_F(CudaBackendDevices, NativeHandlesAndDlpackExport) {
  Buffer<float> a = device_->alloc<float>(1000), b = device_->alloc<float>(1000);
  EXPECT_NE(a.native_handle(), 0u);
  EXPECT_NE(a.native_handle(), b.native_handle());
  DLManagedTensor* t = a.to_dlpack();
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl_tensor.device.device_id, static_cast<int>(device_->index()));
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 32);
  EXPECT_EQ(t->dl_tensor.shape[0], 1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->dl_tensor.data), a.native_handle());
  Buffer<float> back = device_->from_dlpack<float>(t);
  EXPECT_EQ(back.native_handle(), a.native_handle());
  // Kernels run on the imported Buffers; the originals see the results.
  Buffer<float> y_back = device_->from_dlpack<float>(device_->alloc<float>(1100).to_dlpack());
  check_saxpy(*device_, device_->load(saxpy_fatbin(), "saxpy.qfb"), &back, &y_back);
  std::vector<float> via_original(1000), via_import(1000);
  a.download(via_original);
  back.download(via_import);
  EXPECT_EQ(via_original, via_import);
}

// Memory allocated by the driver directly, as another library (PyTorch, NCCL) would, wrapped in
// a DLPack tensor whose deleter frees it: quiver's kernels write into it in place, and the
// deleter runs exactly once, after the last Buffer is gone.
struct DriverMemory {
  using MemAlloc = int (*)(uint64_t*, size_t);
  using MemFree = int (*)(uint64_t);
  using CtxSetCurrent = int (*)(void*);
  void* lib = dlopen(std::getenv("QUIVER_CUDA_LIBRARY") ? std::getenv("QUIVER_CUDA_LIBRARY") : "libcuda.so.1", RTLD_NOW);
  MemAlloc alloc = lib ? reinterpret_cast<MemAlloc>(dlsym(lib, "cuMemAlloc_v2")) : nullptr;
  MemFree free = lib ? reinterpret_cast<MemFree>(dlsym(lib, "cuMemFree_v2")) : nullptr;
  CtxSetCurrent set_current = lib ? reinterpret_cast<CtxSetCurrent>(dlsym(lib, "cuCtxSetCurrent")) : nullptr;
};

struct ForeignTensor {
  DLManagedTensor managed{};
  int64_t shape[2] = {0, 0};
  DriverMemory* driver = nullptr;
  void* context = nullptr;   // the CUcontext the memory was allocated in
  uint64_t pointer = 0;
  int* calls = nullptr;
};

void free_foreign(DLManagedTensor* self) {
  auto* f = static_cast<ForeignTensor*>(self->manager_ctx);
  ++*f->calls;
  f->driver->set_current(f->context);
  f->driver->free(f->pointer);
  delete f;
}

TEST_F(CudaBackendDevices, DlpackImportOfDriverAllocatedMemory) {
  static DriverMemory driver;
  ASSERT_TRUE(driver.alloc && driver.free && driver.set_current);
  ASSERT_EQ(driver.set_current(device_->native_device()), 0);
  const uint32_t rows = 300, cols = 256, n = rows * cols;
  int calls = 0;
  auto make = [&](int64_t r, int64_t c) {
    auto* f = new ForeignTensor;
    f->driver = &driver;
    f->context = device_->native_device();
    f->calls = &calls;
    EXPECT_EQ(driver.alloc(&f->pointer, static_cast<size_t>(r * c) * 4), 0);
    f->shape[0] = r;
    f->shape[1] = c;
    DLTensor& d = f->managed.dl_tensor;
    d.data = reinterpret_cast<void*>(f->pointer);
    d.device = {kDLCUDA, static_cast<int>(device_->index())};
    d.ndim = 2;
    d.dtype = {kDLFloat, 32, 1};
    d.shape = f->shape;
    f->managed.manager_ctx = f;
    f->managed.deleter = &free_foreign;
    return &f->managed;
  };
  Module mod = device_->load(saxpy_fatbin(), "saxpy.qfb");
  {
    Buffer<float> x = device_->from_dlpack<float>(make(rows, cols));
    Buffer<float> y = device_->from_dlpack<float>(make(rows, cols + 1));   // 300 extra: the poisoned tail
    EXPECT_EQ(x.size(), n);
    check_saxpy(*device_, mod, &x, &y);
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 2);

  // Checks: wrong device id, host memory claimed as device memory, a shape past the allocation.
  struct Case {
    const char* name;
    std::function<void(DLTensor&)> damage;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"other device", [&](DLTensor& d) { d.device.device_id = static_cast<int>(device_->index()) + 1; }, "open \"cuda:"},
      {"cpu memory", [](DLTensor& d) { d.device = {kDLCPU, 0}; }, "the cuda backend takes kDLCUDA or kDLCUDAManaged memory"},
      {"host pointer", [](DLTensor& d) { static float host[16]; d.data = host; }, "is not device memory the CUDA driver knows"},
      {"too long", [](DLTensor& d) { d.shape[0] += 100'000; }, "run past the end of its allocation"},
  };
  for (const Case& c : cases) {
    DLManagedTensor* t = make(4, 64);
    const int before = calls;
    c.damage(t->dl_tensor);
    try {
      device_->from_dlpack<float>(t);
      ADD_FAILURE() << c.name << ": imported";
    } catch (const quiver::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << c.name;
      EXPECT_CONTAINS(e.what(), c.message);
    }
    EXPECT_EQ(calls, before) << c.name << ": the deleter ran although the import failed";
    t->deleter(t);
    EXPECT_EQ(calls, before + 1);
  }
}

// Eight host threads x 2 000 launches on one CUDA Device, each checking its own results.
TEST_F(CudaBackendDevices, EightThreadsShareOneDevice) {
  quiver::test::StressOptions opt;
  opt.block_sum = false;
  opt.launches = quiver::test::stress_launches(2'000);
  const quiver::test::StressReport r = run_thread_stress(*device_, saxpy_fatbin(), opt);
  std::printf("cuda: %d threads x %d launches (%lld in all) in %.2f s\n", opt.threads, opt.launches, r.launches,
              r.seconds);
}

}  // namespace
