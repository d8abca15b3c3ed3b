// CPU backend launches checked against host references on fresh random data, with every
// output poisoned before the run so unwritten elements show up.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <thread>

#include "quiver/runtime.h"
#include "test_fatbin.h"

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::Grid;
using quiver::Module;

const std::vector<std::byte>& fatbin() {
  static const std::vector<std::byte> bytes = quiver::test::make_test_fatbin();
  return bytes;
}

// Per thread: ConcurrentLaunchesFromSeveralThreads draws from several threads at once.
std::mt19937& rng() {
  thread_local std::mt19937 gen{std::random_device{}()};
  return gen;
}

std::vector<float> random_floats(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng());
  return v;
}

class CpuLaunch : public ::testing::Test {
 protected:
  Device dev = Device::open("cpu");
  Module mod = dev.load(fatbin(), "test.qfb");
};

TEST_F(CpuLaunch, PicksTheHostCpuImage) {
  EXPECT_EQ(dev.backend_name(), "cpu");
  EXPECT_EQ(mod.backend_image(), "cpu " + quiver::test::host_arch());
  EXPECT_FALSE(dev.device_name().empty());
  const std::vector<std::string> names = mod.kernel_names();
  EXPECT_EQ(names.front(), "saxpy");
  EXPECT_EQ(names.size(), quiver::test::test_manifest().kernels.size());
}

TEST_F(CpuLaunch, SaxpyMatchesHostReference) {
  const uint32_t n = 1'000'003;   // not a multiple of the block: the last block is partial
  const size_t tail = 300;         // poisoned elements past n must stay untouched
  std::vector<float> x = random_floats(n);
  std::vector<float> y = random_floats(n + tail);
  for (size_t i = n; i < n + tail; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
  const float a = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng());

  Buffer<float> bx = dev.alloc<float>(n);
  Buffer<float> by = dev.alloc<float>(n + tail);
  bx.upload(x);
  by.upload(y);
  mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, a, n);
  dev.synchronize();

  std::vector<float> got(n + tail, -1.0f);
  by.download(got);
  for (uint32_t i = 0; i < n; ++i) {
    const float want = a * x[i] + y[i];
    ASSERT_NEAR(got[i], want, 1e-6f * (1.0f + std::fabs(want))) << "element " << i;
  }
  for (size_t i = n; i < n + tail; ++i) ASSERT_TRUE(std::isnan(got[i])) << "tail element " << i << " was written";
}

TEST_F(CpuLaunch, BlockSumWithBarriersOver1000Blocks) {
  const uint32_t blocks = 1000;
  const uint32_t n = blocks * 256 - 77;   // the last block reads past n and must use zeros
  std::vector<float> in = random_floats(n, 0.0f, 1.0f);
  Buffer<float> bin = dev.alloc<float>(n);
  Buffer<float> bout = dev.alloc<float>(blocks);
  bin.upload(in);
  bout.upload(std::vector<float>(blocks, std::numeric_limits<float>::quiet_NaN()));

  mod.kernel("block_sum").launch(Grid{blocks}, bin, bout, n);
  dev.synchronize();

  std::vector<float> got(blocks);
  bout.download(got);
  for (uint32_t b = 0; b < blocks; ++b) {
    double want = 0.0;
    for (uint32_t i = b * 256; i < std::min(n, (b + 1) * 256); ++i) want += in[i];
    ASSERT_NEAR(got[b], want, 1e-4 * (1.0 + want)) << "block " << b;
  }
}

// A barrier kernel whose image has only the block entry (docs/abi.md "CPU"): one call per
// block, no fibers, every block once.
TEST_F(CpuLaunch, BarrierKernelWithBlockEntryRunsEachBlockInOneCall) {
  const uint32_t blocks = 300;
  const uint32_t n = blocks * 256 - 31;
  std::vector<float> in = random_floats(n, 0.0f, 1.0f);
  Buffer<float> bin = dev.alloc<float>(n);
  Buffer<float> bout = dev.alloc<float>(blocks);
  Buffer<uint32_t> bcalls = dev.alloc<uint32_t>(blocks);
  bin.upload(in);
  bout.upload(std::vector<float>(blocks, std::numeric_limits<float>::quiet_NaN()));
  bcalls.upload(std::vector<uint32_t>(blocks, 0));

  mod.kernel("block_sum_loops").launch(Grid{blocks}, bin, bout, bcalls, n);
  dev.synchronize();

  std::vector<float> got(blocks);
  std::vector<uint32_t> calls(blocks);
  bout.download(got);
  bcalls.download(calls);
  for (uint32_t b = 0; b < blocks; ++b) {
    double want = 0.0;
    for (uint32_t i = b * 256; i < std::min(n, (b + 1) * 256); ++i) want += in[i];
    ASSERT_NEAR(got[b], want, 1e-4 * (1.0 + want)) << "block " << b;
    ASSERT_EQ(calls[b], 1u) << "block " << b;
  }
}

TEST_F(CpuLaunch, TwoDimensionalBarrierKernelTransposes) {
  const uint32_t width = 16 * 9, height = 16 * 7;
  std::uniform_int_distribution<int32_t> dist(std::numeric_limits<int32_t>::min(),
                                              std::numeric_limits<int32_t>::max());
  std::vector<int32_t> in(width * height);
  for (int32_t& v : in) v = dist(rng());
  Buffer<int32_t> bin = dev.alloc<int32_t>(in.size());
  Buffer<int32_t> bout = dev.alloc<int32_t>(in.size());
  bin.upload(in);
  int32_t poison;
  std::memset(&poison, 0xAB, sizeof poison);
  bout.upload(std::vector<int32_t>(in.size(), poison));

  mod.kernel("tile_transpose").launch(Grid{width / 16, height / 16}, bin, bout, width);
  std::vector<int32_t> got(in.size());
  bout.download(got);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      ASSERT_EQ(got[x * height + y], in[y * width + x]) << "x " << x << " y " << y;
    }
  }
}

TEST_F(CpuLaunch, DoubleInt64AndBoolScalars) {
  const uint32_t n = 64 * 13 + 5;
  std::vector<double> in(n);
  std::uniform_real_distribution<double> dist(-100.0, 100.0);
  for (double& v : in) v = dist(rng());
  const double s = dist(rng());
  const int64_t offset = (int64_t{1} << 40) + std::uniform_int_distribution<int64_t>(0, 1000)(rng());
  Buffer<double> bin = dev.alloc<double>(n);
  Buffer<double> bout = dev.alloc<double>(n);
  bin.upload(in);
  for (bool negate : {false, true}) {
    bout.upload(std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()));
    mod.kernel("affine64").launch(Grid{(n + 63) / 64}, bin, bout, s, negate, offset, n);
    std::vector<double> got(n);
    bout.download(got);
    for (uint32_t i = 0; i < n; ++i) {
      const double want = (negate ? -in[i] : in[i]) * s + static_cast<double>(offset);
      ASSERT_DOUBLE_EQ(got[i], want) << "negate " << negate << " element " << i;
    }
  }
}

TEST_F(CpuLaunch, VectorParameterTakesElementBuffer) {
  const uint32_t count4 = 1000;
  std::vector<float> a = random_floats(4 * count4), b = random_floats(4 * count4);
  Buffer<float> ba = dev.alloc<float>(a.size());
  Buffer<float> bb = dev.alloc<float>(b.size());
  ba.upload(a);
  bb.upload(b);
  mod.kernel("vec4_add").launch(Grid{(count4 + 63) / 64}, ba, bb, count4);
  std::vector<float> got(b.size());
  bb.download(got);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], a[i] + b[i]) << "element " << i;
}

TEST_F(CpuLaunch, ThreeDimensionalGridRunsEveryBlockOnce) {
  const Grid grid{7, 5, 3};
  const size_t blocks = size_t{grid.x} * grid.y * grid.z;
  Buffer<uint32_t> out = dev.alloc<uint32_t>(blocks * 4);
  out.upload(std::vector<uint32_t>(blocks * 4, 0xABABABABu));
  mod.kernel("block_ids").launch(grid, out);
  std::vector<uint32_t> got(blocks * 4);
  out.download(got);
  for (uint32_t z = 0; z < grid.z; ++z) {
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        const size_t b = (size_t{z} * grid.y + y) * grid.x + x;
        ASSERT_EQ(got[4 * b + 0], x) << "block " << b;
        ASSERT_EQ(got[4 * b + 1], y) << "block " << b;
        ASSERT_EQ(got[4 * b + 2], z) << "block " << b;
        ASSERT_EQ(got[4 * b + 3], grid.x * 100 + grid.y * 10 + grid.z) << "block " << b;
      }
    }
  }
}

TEST_F(CpuLaunch, BuffersAndSharedMemoryAre64ByteAligned) {
  for (size_t size : {1, 3, 65, 1000}) {
    Buffer<uint8_t> in = dev.alloc<uint8_t>(size);
    in.upload(std::vector<uint8_t>(size, 7));
    Buffer<uint32_t> out = dev.alloc<uint32_t>(3);
    out.upload(std::vector<uint32_t>(3, 0xABABABABu));
    mod.kernel("alignment").launch(Grid{4}, in, out);
    std::vector<uint32_t> got(3);
    out.download(got);
    EXPECT_EQ(got, (std::vector<uint32_t>{0, 0, 1})) << "buffer of " << size << " bytes";
  }
}

TEST_F(CpuLaunch, ConcurrentLaunchesFromSeveralThreads) {
  constexpr int kThreads = 4;
  constexpr uint32_t n = 50'000;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::vector<float> x = random_floats(n), y = random_floats(n);
        Buffer<float> bx = dev.alloc<float>(n);
        Buffer<float> by = dev.alloc<float>(n);
        bx.upload(x);
        for (int rep = 0; rep < 5; ++rep) {
          by.upload(y);
          const float a = static_cast<float>(t + rep);
          mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, a, n);
          std::vector<float> got(n);
          by.download(got);
          for (uint32_t i = 0; i < n; ++i) {
            if (got[i] != a * x[i] + y[i]) {
              failures[t] = "thread " + std::to_string(t) + " element " + std::to_string(i);
              return;
            }
          }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST(CpuLifetime, ModuleAndBuffersOutliveTheDeviceHandle) {
  std::optional<Module> mod;
  std::optional<Buffer<float>> bx, by;
  {
    Device dev = Device::open("cpu");
    mod = dev.load(fatbin());
    bx = dev.alloc<float>(256);
    by = dev.alloc<float>(256);
  }
  std::vector<float> x = random_floats(256), y = random_floats(256);
  bx->upload(x);
  by->upload(y);
  mod->kernel("saxpy").launch(Grid{1}, *bx, *by, 2.0f, uint32_t{256});
  std::vector<float> got(256);
  by->download(got);
  for (size_t i = 0; i < 256; ++i) ASSERT_EQ(got[i], 2.0f * x[i] + y[i]);
}

TEST(CpuLoad, FromFile) {
  const std::string path = ::testing::TempDir() + "quiver_runtime_test.qfb";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(fatbin().data()), static_cast<std::streamsize>(fatbin().size()));
  }
  Device dev = Device::open("cpu");
  Module mod = dev.load(path);
  std::vector<float> x = random_floats(300), y = random_floats(300);
  Buffer<float> bx = dev.alloc<float>(300), by = dev.alloc<float>(300);
  bx.upload(x);
  by.upload(y);
  mod.kernel("saxpy").launch(Grid{2}, bx, by, -1.5f, uint32_t{300});
  std::vector<float> got(300);
  by.download(got);
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], -1.5f * x[i] + y[i]);
  std::remove(path.c_str());
}

}  // namespace

// Device::elapsed_ms runs the work it is given (the launches complete, results are right) and
// reports a positive, finite time; timing a second span starts afresh.
TEST_F(CpuLaunch, ElapsedMsRunsTheWorkAndReportsATime) {
  const uint32_t n = 100'000;
  std::vector<float> x = random_floats(n), y = random_floats(n);
  Buffer<float> bx = dev.alloc<float>(n), by = dev.alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  for (int round = 1; round <= 2; ++round) {
    double ms = dev.elapsed_ms([&] { mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, 1.0f, n); });
    EXPECT_TRUE(std::isfinite(ms) && ms > 0) << ms;
    std::vector<float> got(n);
    by.download(got);
    for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], y[i] + round * x[i], 1e-5f) << "element " << i;
  }
}

// Device::elapsed_ms_each runs work(i) once per i, in order, and returns one time per run.
TEST_F(CpuLaunch, ElapsedMsEachRunsEveryRunInOrder) {
  const uint32_t n = 10'000;
  std::vector<float> x = random_floats(n), y = random_floats(n);
  Buffer<float> bx = dev.alloc<float>(n), by = dev.alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  std::vector<size_t> order;
  std::vector<double> ms = dev.elapsed_ms_each(4, [&](size_t i) {
    order.push_back(i);
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, float(i), n);
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
  ASSERT_EQ(ms.size(), 4u);
  for (double t : ms) EXPECT_TRUE(std::isfinite(t) && t >= 0) << t;
  std::vector<float> got(n);
  by.download(got);
  for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], y[i] + 6 * x[i], 1e-4f * (1 + std::fabs(y[i]) + 6 * std::fabs(x[i]))) << "element " << i;
  EXPECT_TRUE(dev.elapsed_ms_each(0, [](size_t) {}).empty());
}
