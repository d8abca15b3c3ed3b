// A dropped Device releases everything it owns, whatever the module caches hold
// (docs/runtime.md, "Lifetimes"). Cycles of Device::open / one quiver::ops::rms_norm / one load
// and launch through a quiverc-generated header / drop, on the backend QUIVER_BACKEND names:
// after each cycle no backend Device or Module is left (backend::live_objects()), and the
// process's threads and resident memory are back where the first cycle left them. A Device kept
// alive per cycle shows in all three: the CPU backend's worker threads, lavapipe's ~90 MB.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <quiver/ops.h>
#include <quiver/runtime.h>

#include "backends/backend.h"   // live_objects(): the backend's own count of its objects
#include "oracle.h"
#include "release_kernels.h"

// AddressSanitizer's, when its allocator is in the process (built in, or preloaded).
extern "C" void __sanitizer_purge_allocator() __attribute__((weak));

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::backend::live_objects;

struct ProcessUsage {
  long threads = 0;
  long resident_mb = 0;
};

// Threads (/proc/self/status) and resident memory (/proc/self/statm), once freed memory has
// gone back to the system: glibc keeps freed chunks in its arenas, AddressSanitizer in its
// quarantine, and either would read as growth.
ProcessUsage process_usage() {
  if (__sanitizer_purge_allocator != nullptr) __sanitizer_purge_allocator();
  else malloc_trim(0);
  ProcessUsage u;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) u.threads = std::stol(line.substr(8));
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  u.resident_mb = pages_resident * sysconf(_SC_PAGESIZE) / (1024 * 1024);
  EXPECT_GT(u.threads, 0) << "no Threads line in /proc/self/status";
  EXPECT_GT(u.resident_mb, 0) << "cannot read /proc/self/statm";
  return u;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

class DeviceRelease : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }

  std::vector<float> uniform(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& f : v) f = d(rng_);
    return v;
  }

  // One quiver::ops::rms_norm on `dev`, checked against the fp64 oracle.
  void check_rms_norm(const Device& dev) {
    const size_t rows = 1 + rng_() % 4, cols = 32 * (1 + rng_() % 8);
    const float eps = 1e-5f;
    std::vector<float> x = uniform(rows * cols, -2.f, 2.f), w = uniform(cols, 0.5f, 1.5f);
    Buffer<float> dx = dev.alloc<float>(x.size()), dw = dev.alloc<float>(w.size()), dout = dev.alloc<float>(x.size());
    dx.upload(x);
    dw.upload(w);
    dout.upload(std::vector<float>(x.size(), std::numeric_limits<float>::quiet_NaN()));
    quiver::ops::rms_norm(dev, dx, dw, dout, rows, cols, eps);
    std::vector<float> got(x.size());
    dout.download(got);
    const oracle::Vec want = oracle::rms_norm(oracle::Vec(x.begin(), x.end()), oracle::Vec(w.begin(), w.end()),
                                              rows, cols, eps);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
          << "rms_norm " << rows << "x" << cols << " element " << i << ", seed " << seed_;
  }

  // One launch through the generated header (release_kernels::load(dev) underneath). Integer
  // values make a * x + b exact, with or without a fused multiply-add.
  void check_generated_launch(const Device& dev) {
    const uint32_t n = 1 + rng_() % 3000;
    const float a = float(int(rng_() % 7) - 3), b = float(int(rng_() % 101) - 50);
    std::vector<float> x(n);
    for (float& v : x) v = float(int(rng_() % 2001) - 1000);
    Buffer<float> dx = dev.alloc<float>(n), dy = dev.alloc<float>(n + 1);
    dx.upload(x);
    dy.upload(std::vector<float>(n + 1, std::numeric_limits<float>::quiet_NaN()));
    release_kernels::scale_shift(dev, quiver::Grid{(n + 63) / 64}, dx, dy, a, b, n);
    std::vector<float> got(n + 1);
    dy.download(got);
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], a * x[i] + b) << "scale_shift element " << i << " of " << n << ", seed " << seed_;
    ASSERT_TRUE(std::isnan(got[n])) << "scale_shift wrote past n = " << n << ", seed " << seed_;
  }

  unsigned seed_ = 0;
  std::mt19937 rng_;
};

// The cycles of the file comment. QUIVER_RELEASE_CYCLES changes their number.
TEST_F(DeviceRelease, DroppedDeviceReleasesEverything) {
  const int cycles = env_int("QUIVER_RELEASE_CYCLES", 6);
  // Resident memory may move a little between cycles (allocator state, driver caches kept per
  // process); a device kept per cycle moves it by far more over the cycles (lavapipe ~90 MB, the
  // CPU backend its images and worker stacks) and its threads never go.
  const long resident_slack_mb = env_int("QUIVER_RELEASE_RESIDENT_SLACK_MB", 48);
  const quiver::backend::LiveObjects before = live_objects();
  ProcessUsage first;
  std::string backend;
  for (int cycle = 1; cycle <= cycles; ++cycle) {
    {
      Device dev = Device::open();
      backend = dev.backend_name();
      ASSERT_NO_FATAL_FAILURE(check_rms_norm(dev));
      ASSERT_NO_FATAL_FAILURE(check_generated_launch(dev));
    }
    const quiver::backend::LiveObjects now = live_objects();
    EXPECT_EQ(now.devices, before.devices) << backend << ", cycle " << cycle << ": backend Devices still alive";
    EXPECT_EQ(now.modules, before.modules) << backend << ", cycle " << cycle << ": backend Modules still alive";
    const ProcessUsage u = process_usage();
    std::printf("%s cycle %d: %ld threads, %ld MB resident\n", backend.c_str(), cycle, u.threads, u.resident_mb);
    if (cycle == 1) {
      first = u;
      continue;
    }
    EXPECT_LE(u.threads, first.threads) << backend << ", cycle " << cycle << ": threads grew since cycle 1";
    EXPECT_LE(u.resident_mb, first.resident_mb + resident_slack_mb)
        << backend << ", cycle " << cycle << ": resident memory grew since cycle 1";
  }
}

// The module loaded through a generated header (or quiver::ops) is loaded once per Device and
// shared by every Module the header hands out; a second Device gets its own.
TEST_F(DeviceRelease, LoadedOncePerDevice) {
  const size_t modules_before = live_objects().modules;
  {
    Device a = Device::open();
    quiver::Module first = release_kernels::load(a);
    quiver::Module again = release_kernels::load(a);
    EXPECT_EQ(live_objects().modules, modules_before + 1) << "a second load() on the same Device loaded again";
    Device b = Device::open();
    release_kernels::load(b);
    EXPECT_EQ(live_objects().modules, modules_before + 2) << "a second Device shared the first one's module";
    ASSERT_NO_FATAL_FAILURE(check_generated_launch(a));
    ASSERT_NO_FATAL_FAILURE(check_generated_launch(b));
  }
  EXPECT_EQ(live_objects().modules, modules_before);
}

// Buffers, Modules and Kernels keep their Device's backend alive when the Device handle goes
// first (they stay usable), and the backend goes with the last of them.
TEST_F(DeviceRelease, HandlesOutlivingTheDeviceKeepItsBackend) {
  const quiver::backend::LiveObjects before = live_objects();
  const uint32_t n = 1000;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i) - 500.f;
  Buffer<float> dx, dy;
  std::optional<quiver::Module> cached, ops_library;
  {
    Device dev = Device::open();
    dx = dev.alloc<float>(n);
    dy = dev.alloc<float>(n);
    cached = release_kernels::load(dev);
    ops_library = quiver::ops::library(dev);
  }
  EXPECT_EQ(live_objects().devices, before.devices + 1) << "the backend went while its Buffers and Modules live";
  std::optional<quiver::Kernel> kernel = cached->kernel("scale_shift");
  cached.reset();
  dx.upload(x);
  kernel->launch(quiver::Grid{(n + 63) / 64}, dx, dy, 2.f, 1.f, n);
  std::vector<float> got(n);
  dy.download(got);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.f * x[i] + 1.f) << "element " << i;
  EXPECT_TRUE(ops_library->has_kernel("rms_norm<float>"));
  kernel.reset();
  ops_library.reset();
  // What the generated header and quiver::ops loaded belongs to the Device, which the Buffers hold.
  EXPECT_EQ(live_objects().modules, before.modules + 2);
  dx = Buffer<float>();
  EXPECT_EQ(live_objects().devices, before.devices + 1) << "the backend went while a Buffer lives";
  dy = Buffer<float>();
  EXPECT_EQ(live_objects().devices, before.devices);
  EXPECT_EQ(live_objects().modules, before.modules);
}

}  // namespace
