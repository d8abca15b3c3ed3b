// Several devices of one backend: Device::count, "cpu:N" selection (also through QUIVER_BACKEND
// and the C API), errors for bad selectors and indices, and launches on two devices running at
// the same time. The CPU backend exposes QUIVER_CPU_DEVICES devices, so all of it runs in CI.
#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "quiver/quiver.h"
#include "quiver/runtime.h"
#include "error_of.h"
#include "scoped_env.h"
#include "test_fatbin.h"

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::ErrorCode;
using quiver::Grid;
using quiver::Module;
using quiver::test::ScopedEnv;

const std::vector<std::byte>& fatbin() {
  static const std::vector<std::byte> bytes = quiver::test::make_test_fatbin();
  return bytes;
}

using quiver::test::error_of;

TEST(MultiDevice, OneCpuDeviceByDefault) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", nullptr);
  EXPECT_EQ(Device::count("cpu"), 1u);
  EXPECT_EQ(Device::count("CPU"), 1u);
  EXPECT_EQ(Device::open("cpu").index(), 0u);
  EXPECT_EQ(Device::open("cpu:0").index(), 0u);
  const quiver::Error e = error_of([] { Device::open("cpu:1"); });
  EXPECT_EQ(e.code(), ErrorCode::NotFound);
  EXPECT_CONTAINS(e.what(), "backend 'cpu' has no device 1: it has 1 device (cpu:0)");
}

// Every device runs kernels on its own, checked against the host on fresh data.
TEST(MultiDevice, CpuDevicesFromTheEnvironmentEachRunKernels) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", "3");
  ASSERT_EQ(Device::count("cpu"), 3u);
  std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (size_t i = 0; i < 3; ++i) {
    Device dev = Device::open("Cpu:" + std::to_string(i));
    EXPECT_EQ(dev.index(), i);
    EXPECT_EQ(dev.backend_name(), "cpu");
    Module mod = dev.load(fatbin(), "test.qfb");
    const uint32_t n = 1000 + static_cast<uint32_t>(i) * 77;
    std::vector<float> x(n), y(n + 5, std::numeric_limits<float>::quiet_NaN());
    for (float& v : x) v = dist(rng);
    for (uint32_t k = 0; k < n; ++k) y[k] = dist(rng);
    Buffer<float> bx = dev.alloc<float>(n), by = dev.alloc<float>(n + 5);
    bx.upload(x);
    by.upload(y);
    const float a = dist(rng);
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, a, n);
    std::vector<float> got(n + 5);
    by.download(got);
    for (uint32_t k = 0; k < n; ++k) ASSERT_EQ(got[k], a * x[k] + y[k]) << "cpu:" << i << " element " << k;
    for (uint32_t k = n; k < n + 5; ++k) ASSERT_TRUE(std::isnan(got[k])) << "cpu:" << i << " wrote past n";
  }
  const quiver::Error e = error_of([] { Device::open("cpu:3"); });
  EXPECT_EQ(e.code(), ErrorCode::NotFound);
  EXPECT_CONTAINS(e.what(), "has no device 3: it has 3 devices (cpu:0 to cpu:2)");
}

TEST(MultiDevice, InvalidCpuDeviceCountIsReported) {
  for (const char* value : {"0", "abc", "65", "2x", "-1"}) {
    ScopedEnv devices("QUIVER_CPU_DEVICES", value);
    EXPECT_EQ(Device::count("cpu"), 0u) << value;
    const quiver::Error e = error_of([] { Device::open("cpu"); });
    EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable) << value;
    EXPECT_CONTAINS(e.what(), std::string("QUIVER_CPU_DEVICES=") + value + " is not a device count");
  }
}

// Threads of this process, from /proc/self/task.
size_t process_threads() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory() ? 1 : 0;
  return n;
}

// One launch of saxpy over 64 elements (the first launch on a CPU device starts its workers).
void run_small_saxpy(Device& dev) {
  Module mod = dev.load(fatbin(), "test.qfb");
  Buffer<float> x = dev.alloc<float>(64), y = dev.alloc<float>(64);
  x.upload(std::vector<float>(64, 1.0f));
  y.upload(std::vector<float>(64, 2.0f));
  mod.kernel("saxpy").launch(Grid{1}, x, y, 3.0f, 64u);
  std::vector<float> got(64);
  y.download(got);
  EXPECT_EQ(got[63], 5.0f);
}

// The CPU backend's workers: as many as the CPUs the process may use (the calling thread's
// affinity mask here), or QUIVER_CPU_THREADS.
TEST(MultiDevice, CpuWorkersFollowTheAffinityMask) {
  ScopedEnv threads("QUIVER_CPU_THREADS", nullptr);
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  std::string name;
  {
    Device dev = Device::open("cpu");
    name = dev.device_name();
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_CONTAINS(name, "(1 threads)");
  Device all = Device::open("cpu");
  EXPECT_CONTAINS(all.device_name(), "(" + std::to_string(CPU_COUNT(&saved)) + " threads)");
}

TEST(MultiDevice, CpuThreadsSetsTheWorkers) {
  ScopedEnv threads("QUIVER_CPU_THREADS", "3");
  const size_t before = process_threads();
  {
    Device dev = Device::open("cpu");
    EXPECT_CONTAINS(dev.device_name(), "(3 threads)");
    run_small_saxpy(dev);   // starts the workers
    EXPECT_EQ(process_threads(), before + 3);
  }
  EXPECT_EQ(process_threads(), before) << "a dropped device stops its workers";
}

// Two devices, one set of workers: the process gains 3 threads for both, and loses them with the
// last device (LaunchesOnTwoCpuDevicesRunAtTheSameTime shows both still run at once).
TEST(MultiDevice, CpuDevicesShareOneSetOfWorkers) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", "2");
  ScopedEnv threads("QUIVER_CPU_THREADS", "3");
  const size_t before = process_threads();
  {
    Device a = Device::open("cpu:0"), b = Device::open("cpu:1");
    for (Device* dev : {&a, &b}) {
      EXPECT_CONTAINS(dev->device_name(), "(3 threads)");
      run_small_saxpy(*dev);   // starts the workers
    }
    EXPECT_EQ(process_threads(), before + 3) << "two devices, one set of 3 workers";
  }
  EXPECT_EQ(process_threads(), before) << "the last device dropped stops the workers";
}

TEST(MultiDevice, InvalidCpuThreadCountIsReported) {
  for (const char* value : {"0", "abc", "1025", "2x", "-1", "99999"}) {
    ScopedEnv threads("QUIVER_CPU_THREADS", value);
    const quiver::Error e = error_of([] { Device::open("cpu"); });
    EXPECT_EQ(e.code(), ErrorCode::BackendUnavailable) << value;
    EXPECT_CONTAINS(e.what(), std::string("QUIVER_CPU_THREADS=") + value + " is not a thread count");
  }
}

TEST(MultiDevice, MalformedSelectorsNameTheSelector) {
  for (const char* selector : {"cpu:", "cpu:x", "cpu:-1", ":1", "cpu:1:2", "cpu:99999999999"}) {
    const quiver::Error e = error_of([&] { Device::open(selector); });
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << selector;
    EXPECT_CONTAINS(e.what(), std::string("device selector '") + selector + "'");
  }
  EXPECT_EQ(error_of([] { Device::count("cpu:1"); }).code(), ErrorCode::InvalidArgument);
}

TEST(MultiDevice, CountOfBackendsNotHere) {
  EXPECT_EQ(Device::count("hip"), 0u);     // a backend of the project, not built into this library
  EXPECT_EQ(Device::count("metal"), 0u);
  const quiver::Error e = error_of([] { Device::count("opengl"); });
  EXPECT_EQ(e.code(), ErrorCode::NotFound);
  EXPECT_CONTAINS(e.what(), "unknown backend 'opengl'");
}

TEST(MultiDevice, QuiverBackendTakesASelector) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", "2");
  {
    ScopedEnv backend("QUIVER_BACKEND", "cpu:1");
    Device dev = Device::open();
    EXPECT_EQ(dev.backend_name(), "cpu");
    EXPECT_EQ(dev.index(), 1u);
  }
  ScopedEnv backend("QUIVER_BACKEND", "cpu:7");
  const quiver::Error e = error_of([] { Device::open(); });
  EXPECT_EQ(e.code(), ErrorCode::NotFound);
  EXPECT_CONTAINS(e.what(), "backend 'cpu' (from QUIVER_BACKEND) has no device 7: it has 2 devices");
}

TEST(MultiDevice, BuffersBelongToTheirDevice) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", "2");
  Device d0 = Device::open("cpu:0"), d1 = Device::open("cpu:1");
  Module m1 = d1.load(fatbin(), "test.qfb");
  Buffer<float> x0 = d0.alloc<float>(256), y1 = d1.alloc<float>(256);
  const quiver::Error e = error_of([&] { m1.kernel("saxpy").launch(Grid{1}, x0, y1, 1.0f, uint32_t{256}); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  EXPECT_CONTAINS(e.what(), "argument 1 ('x'): the buffer was allocated on a different quiver::Device");
}

// The handshake kernel raises its own flag and waits for the other's. Launched on two devices
// from two host threads over the same memory (shared through DLPack), both must see each
// other: the devices run at the same time. On one device, launches take turns, so exactly one
// of the two waits in vain — which shows the check can fail.
std::vector<uint32_t> handshake(Device& a, Device& b, uint32_t timeout_ms) {
  Buffer<uint32_t> flags = a.alloc<uint32_t>(4);
  flags.upload(std::vector<uint32_t>(4, 0));
  Buffer<uint32_t> flags_b = a.impl() == b.impl() ? flags : b.from_dlpack<uint32_t>(flags.to_dlpack());
  Module ma = a.load(fatbin(), "a.qfb"), mb = b.load(fatbin(), "b.qfb");
  std::string error_a, error_b;
  std::thread ta([&] {
    try {
      ma.kernel("handshake").launch(Grid{1}, flags, 0u, 1u, timeout_ms);
    } catch (const std::exception& e) {
      error_a = e.what();
    }
  });
  std::thread tb([&] {
    try {
      mb.kernel("handshake").launch(Grid{1}, flags_b, 1u, 0u, timeout_ms);
    } catch (const std::exception& e) {
      error_b = e.what();
    }
  });
  ta.join();
  tb.join();
  EXPECT_EQ(error_a, "");
  EXPECT_EQ(error_b, "");
  std::vector<uint32_t> got(4);
  flags.download(got);
  return got;
}

TEST(MultiDevice, LaunchesOnTwoCpuDevicesRunAtTheSameTime) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", "2");
  ScopedEnv threads("QUIVER_CPU_THREADS", "2");   // the two launches' blocks on two workers at once
  Device d0 = Device::open("cpu:0"), d1 = Device::open("cpu:1");
  EXPECT_EQ(handshake(d0, d1, 20'000), (std::vector<uint32_t>{1, 1, 1, 1}));
}

TEST(MultiDevice, LaunchesOnOneDeviceTakeTurns) {
  Device dev = Device::open("cpu");
  std::vector<uint32_t> got = handshake(dev, dev, 300);
  EXPECT_EQ(got[0], 1u);
  EXPECT_EQ(got[1], 1u);
  std::sort(got.begin() + 2, got.end());
  EXPECT_EQ(got[2], 1u) << "the second launch saw the first one's flag";
  EXPECT_EQ(got[3], 2u) << "the first launch waited in vain for the second";
}

TEST(MultiDevice, CApiCountsAndSelects) {
  ScopedEnv devices("QUIVER_CPU_DEVICES", "2");
  size_t count = 0;
  ASSERT_EQ(qv_device_count("cpu", &count), QV_SUCCESS) << qv_last_error_message();
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(qv_device_count("opengl", &count), QV_ERROR_NOT_FOUND);
  EXPECT_EQ(qv_device_count(nullptr, &count), QV_ERROR_INVALID_ARGUMENT);
  qv_device dev = nullptr;
  ASSERT_EQ(qv_device_open("cpu:1", &dev), QV_SUCCESS) << qv_last_error_message();
  size_t index = 99;
  EXPECT_EQ(qv_device_index(dev, &index), QV_SUCCESS);
  EXPECT_EQ(index, 1u);
  void* stream = &index;
  EXPECT_EQ(qv_device_native_stream(dev, &stream), QV_SUCCESS);
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(qv_device_close(dev), QV_SUCCESS);
  EXPECT_EQ(qv_device_open("cpu:2", &dev), QV_ERROR_NOT_FOUND);
  EXPECT_CONTAINS(qv_last_error_message(), "has no device 2");
  EXPECT_EQ(qv_device_open("cpu:two", &dev), QV_ERROR_INVALID_ARGUMENT);
}

}  // namespace
