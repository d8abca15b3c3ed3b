// The Vulkan backend's lazy pipelines and its disk pipeline cache (runtime/backends/vulkan/
// pipeline_cache.h, docs/runtime.md "Vulkan pipelines"). Each test has a fresh QUIVER_CACHE_DIR.
// The cross-process tests run this same binary again as a child (the disabled test
// VulkanPipelineCacheChild.DISABLED_LaunchEveryKernel), which prints the process's counters.
// Runs on lavapipe in CI and on the NVIDIA driver on the GPU machine.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/vulkan/pipeline_cache.h"
#include "quiver/runtime.h"
#include "scoped_env.h"
#include "vulkan_test_module.h"

namespace {

namespace fs = std::filesystem;
namespace vk = quiver::backend::vulkan;
using quiver::ErrorCode;
using quiver::test::ScopedEnv;

constexpr size_t kKernels = 4;   // saxpy, block_sum, int_mix, grid2d

std::vector<std::byte> test_fatbin() {
  return quiver::test::vk::make_fatbin(quiver::test::vk::test_manifest(), quiver::test::vk::spirv_module());
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  if (!c.empty()) std::memcpy(out.data(), c.data(), c.size());
  return out;
}
void write_bytes(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The pipeline cache files ("vulkan-*.qvpc") in `dir`.
std::vector<fs::path> cache_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("vulkan-") && name.find(".qvpc") != std::string::npos) out.push_back(it->path());
  }
  return out;
}

// Launches each kernel of the test module once on fresh random inputs (outputs poisoned) and
// checks it against a host reference written from the shader's definition.
void check_every_kernel(const quiver::Device& dev, const quiver::Module& mod, std::mt19937& rng) {
  const uint32_t n = std::uniform_int_distribution<uint32_t>(3000, 9000)(rng);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = dist(rng);
  for (auto& v : y) v = dist(rng);
  const float a = dist(rng);
  auto bx = dev.alloc<float>(n), by = dev.alloc<float>(n);
  bx.upload(x);
  by.upload(y);
  mod.kernel("saxpy").launch(quiver::Grid{(n + 255) / 256}, bx, by, a, n);
  std::vector<float> got(n, std::nanf(""));
  by.download(got);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], a * x[i] + y[i], 1e-5f * (std::fabs(a * x[i]) + std::fabs(y[i]) + 1.0f)) << "saxpy " << i;

  const uint32_t blocks = (n + 255) / 256;
  auto partial = dev.alloc<float>(blocks);
  partial.upload(std::vector<float>(blocks, std::nanf("")));
  mod.kernel("block_sum").launch(quiver::Grid{blocks}, bx, partial, n);
  std::vector<float> sums(blocks);
  partial.download(sums);
  for (uint32_t b = 0; b < blocks; ++b) {
    double want = 0, magnitude = 0;
    for (uint32_t i = b * 256; i < std::min(n, b * 256 + 256); ++i) {
      want += x[i];
      magnitude += std::fabs(x[i]);
    }
    ASSERT_NEAR(sums[b], want, 1e-5 * magnitude + 1e-6) << "block_sum " << b;
  }

  std::uniform_int_distribution<int32_t> any(-1000000, 1000000);
  std::vector<int32_t> in(n);
  for (auto& v : in) v = any(rng);
  const int32_t mul = any(rng), bias = any(rng);
  const uint32_t mask = static_cast<uint32_t>(any(rng));
  auto bin = dev.alloc<int32_t>(n), bout = dev.alloc<int32_t>(n);
  bin.upload(in);
  bout.upload(std::vector<int32_t>(n, static_cast<int32_t>(0xABABABABu)));
  mod.kernel("int_mix").launch(quiver::Grid{(n + 63) / 64}, bin, bout, mul, bias, mask, n);
  std::vector<int32_t> mixed(n);
  bout.download(mixed);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(static_cast<uint32_t>(mixed[i]),
              (static_cast<uint32_t>(in[i]) * static_cast<uint32_t>(mul) + static_cast<uint32_t>(bias)) ^ mask)
        << "int_mix " << i;

  const uint32_t width = 40, height = 24;
  const float scale = dist(rng);
  auto grid = dev.alloc<float>(width * height);
  grid.upload(std::vector<float>(width * height, std::nanf("")));
  mod.kernel("grid2d").launch(quiver::Grid{(width + 15) / 16, (height + 7) / 8}, grid, width, height, scale);
  std::vector<float> cells(width * height);
  grid.download(cells);
  for (uint32_t r = 0; r < height; ++r)
    for (uint32_t c = 0; c < width; ++c) {
      const float want = static_cast<float>(c) * scale + static_cast<float>(r);
      ASSERT_NEAR(cells[r * width + c], want, 1e-5f * std::fabs(want) + 1e-6f) << "grid2d " << c << "," << r;
    }
}

// The counters as a child process prints them.
struct ChildReport {
  int status = -1;
  std::string output;
  vk::PipelineCacheCounters counters;
  bool parsed = false;
};

class VulkanPipelineCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/quiver-pipeline-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    env_.emplace("QUIVER_CACHE_DIR", dir_.c_str());
    try {
      device_.emplace(quiver::Device::open("vulkan"));
    } catch (const quiver::Error& e) {
      FAIL() << "Device::open(\"vulkan\") failed: " << e.what();
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  quiver::Module load() const { return device_->load(test_fatbin(), "cache_test.qfb"); }

  // The one cache file this test's module has written (fails the test when there is not one).
  fs::path the_cache_file() const {
    std::vector<fs::path> files = cache_files(dir_);
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? fs::path() : files[0];
  }

  // Runs this binary's child test in a new process with this test's environment. `rounds`
  // loads of the module, each launching every kernel.
  static std::string child_command(int rounds) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return "";
    self[n] = '\0';
    return "QV_PIPELINE_CACHE_CHILD=" + std::to_string(rounds) + " '" + std::string(self) +
           "' --gtest_also_run_disabled_tests --gtest_filter=VulkanPipelineCacheChild.DISABLED_LaunchEveryKernel 2>&1";
  }
  static FILE* start_child(int rounds) { return popen(child_command(rounds).c_str(), "r"); }
  static ChildReport finish_child(FILE* pipe) {
    ChildReport r;
    char line[4096];
    while (pipe && fgets(line, sizeof line, pipe)) {
      r.output += line;
      vk::PipelineCacheCounters& c = r.counters;
      if (std::sscanf(line, "pipeline cache counters: created=%zu hits=%zu accepted=%zu rejected=%zu written=%zu",
                      &c.pipelines_created, &c.cache_hits, &c.files_accepted, &c.files_rejected,
                      &c.files_written) == 5)
        r.parsed = true;
    }
    const int status = pipe ? pclose(pipe) : -1;
    r.status = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  static ChildReport run_child(int rounds) { return finish_child(start_child(rounds)); }

  // Whether the driver keeps pipelines in its cache data (lavapipe's is a header and nothing else).
  static bool driver_data_holds_pipelines(const fs::path& file) {
    const std::vector<std::byte> bytes = read_bytes(file);
    if (bytes.size() < vk::kCacheFileHeaderBytes + 4) return false;
    uint32_t header_size = 0;
    std::memcpy(&header_size, bytes.data() + vk::kCacheFileHeaderBytes, 4);
    return bytes.size() > vk::kCacheFileHeaderBytes + header_size;
  }

  fs::path dir_;
  std::optional<ScopedEnv> env_;
  std::optional<quiver::Device> device_;
  std::mt19937 rng_{std::random_device{}()};
};

// ---- (a) Lazy pipelines ----

TEST_F(VulkanPipelineCache, KernelIsCompiledAtItsFirstLaunchOnly) {
  const size_t before = vk::pipeline_cache_counters().pipelines_created;
  quiver::Module mod = load();
  EXPECT_EQ(vk::pipeline_cache_counters().pipelines_created, before) << "Module load created pipelines";
  EXPECT_TRUE(cache_files(dir_).empty()) << "Module load wrote a cache file";

  auto bx = device_->alloc<float>(256), by = device_->alloc<float>(256);
  bx.upload(std::vector<float>(256, 1.0f));
  by.upload(std::vector<float>(256, 2.0f));
  for (int i = 0; i < 3; ++i) mod.kernel("saxpy").launch(quiver::Grid{1}, bx, by, 0.5f, 256u);
  device_->synchronize();
  EXPECT_EQ(vk::pipeline_cache_counters().pipelines_created, before + 1) << "saxpy launched 3 times";
  std::vector<float> y(256);
  by.download(y);
  for (float v : y) ASSERT_EQ(v, 3.5f);

  check_every_kernel(*device_, mod, rng_);
  EXPECT_EQ(vk::pipeline_cache_counters().pipelines_created, before + kKernels);
  EXPECT_EQ(cache_files(dir_).size(), 1u) << "the new pipelines were not written to the cache directory";
  EXPECT_TRUE(mod.has_kernel("saxpy"));
  EXPECT_FALSE(mod.has_kernel("no_such_kernel"));
}

TEST_F(VulkanPipelineCache, KernelOverADeviceLimitLoadsAndNamesTheLimitAtLaunch) {
  // 16 MiB of shared memory (the format's maximum) is beyond every device's
  // maxComputeSharedMemorySize: the module loads, the other kernels run, block_sum says why not.
  quiver::format::Manifest m = quiver::test::vk::test_manifest();
  m.kernels[1].shared_bytes = 16u << 20;
  const size_t before = vk::pipeline_cache_counters().pipelines_created;
  quiver::Module mod = device_->load(quiver::test::vk::make_fatbin(m, quiver::test::vk::spirv_module()), "limit.qfb");
  EXPECT_TRUE(mod.has_kernel("block_sum"));   // in the image: has_kernel does not ask the device
  auto in = device_->alloc<float>(256), out = device_->alloc<float>(1);
  try {
    mod.kernel("block_sum").launch(quiver::Grid{1}, in, out, 256u);
    FAIL() << "a kernel over maxComputeSharedMemorySize launched";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceError);
    const std::string what = e.what();
    EXPECT_NE(what.find("block_sum"), std::string::npos) << what;
    EXPECT_NE(what.find("maxComputeSharedMemorySize"), std::string::npos) << what;
  }
  EXPECT_EQ(vk::pipeline_cache_counters().pipelines_created, before);
  auto x = device_->alloc<float>(256), y = device_->alloc<float>(256);
  x.upload(std::vector<float>(256, 3.0f));
  y.upload(std::vector<float>(256, 1.0f));
  mod.kernel("saxpy").launch(quiver::Grid{1}, x, y, 2.0f, 256u);
  std::vector<float> got(256);
  y.download(got);
  for (float v : got) ASSERT_EQ(v, 7.0f);
}

// ---- (b) A second load / process reuses the file ----

TEST_F(VulkanPipelineCache, SecondProcessReadsTheFileAndHitsTheCache) {
  const ChildReport first = run_child(1);
  ASSERT_EQ(first.status, 0) << first.output;
  ASSERT_TRUE(first.parsed) << first.output;
  EXPECT_EQ(first.counters.pipelines_created, kKernels);
  EXPECT_EQ(first.counters.files_accepted, 0u);
  EXPECT_EQ(first.counters.cache_hits, 0u);
  EXPECT_GE(first.counters.files_written, 1u);
  const fs::path file = the_cache_file();
  std::string why;
  ASSERT_TRUE(fs::exists(file));

  const ChildReport second = run_child(1);
  ASSERT_EQ(second.status, 0) << second.output;
  ASSERT_TRUE(second.parsed) << second.output;
  EXPECT_EQ(second.counters.files_accepted, 1u) << "the second process did not use the first one's file";
  EXPECT_EQ(second.counters.files_rejected, 0u);
  EXPECT_EQ(second.counters.pipelines_created, kKernels);
  if (driver_data_holds_pipelines(file)) {
    // The driver keeps pipelines in its cache data: every one of them must come from the file.
    EXPECT_EQ(second.counters.cache_hits, kKernels) << second.output;
  } else {
    std::printf("the driver's pipeline cache data holds only its header (lavapipe): hits are not measurable\n");
  }
}

// ---- (c) Bad files never fail a launch ----

enum class Damage { Empty, Truncated, DataByte, HeaderByte, Garbage, ForeignIdentity, ForeignDriverHeader, Directory,
                    OverTheSizeBound, OtherOwner };

class VulkanPipelineCacheDamage : public VulkanPipelineCache, public ::testing::WithParamInterface<Damage> {};

TEST_P(VulkanPipelineCacheDamage, LaunchesStillRunCorrectlyAndTheFileIsReplaced) {
  if (GetParam() == Damage::OtherOwner && geteuid() != 0) GTEST_SKIP() << "giving a file away needs root";
  {
    quiver::Module mod = load();
    check_every_kernel(*device_, mod, rng_);
  }
  const fs::path file = the_cache_file();
  std::vector<std::byte> bytes = read_bytes(file);
  ASSERT_GT(bytes.size(), vk::kCacheFileHeaderBytes + 16);
  std::optional<ScopedEnv> bound;
  switch (GetParam()) {
    case Damage::Empty: bytes.clear(); break;
    case Damage::Truncated: bytes.resize(bytes.size() - 7); break;
    case Damage::DataByte: bytes[vk::kCacheFileHeaderBytes + 9] ^= std::byte{0x40}; break;   // the driver's vendorID
    case Damage::HeaderByte: bytes[33] ^= std::byte{0x01}; break;   // our data size
    case Damage::Garbage:
      for (auto& b : bytes) b = std::byte(rng_() & 0xff);
      break;
    case Damage::ForeignIdentity:
    case Damage::ForeignDriverHeader: {
      // Properly framed, checksums right: only the identity checks can refuse it.
      vk::CacheIdentity id;
      std::memcpy(&id.key, bytes.data() + 16, 8);
      uint64_t image = 0;
      std::memcpy(&image, bytes.data() + 24, 8);
      std::vector<std::byte> data(bytes.begin() + vk::kCacheFileHeaderBytes, bytes.end());
      if (GetParam() == Damage::ForeignIdentity) id.key ^= 1;
      else data[8] ^= std::byte{0x01};   // VkPipelineCacheHeaderVersionOne::vendorID
      bytes = vk::frame_cache_file(id, image, data);
      break;
    }
    case Damage::Directory:
    case Damage::OtherOwner: break;
    case Damage::OverTheSizeBound:
      bound.emplace("QUIVER_CACHE_MAX_BYTES", std::to_string(bytes.size() - 1).c_str());
      break;
  }
  if (GetParam() == Damage::Directory) {
    fs::remove(file);
    fs::create_directory(file);
  } else {
    write_bytes(file, bytes);
  }
  if (GetParam() == Damage::OtherOwner) ASSERT_EQ(chown(file.c_str(), 65534, 65534), 0);   // nobody

  const vk::PipelineCacheCounters before = vk::pipeline_cache_counters();
  {
    quiver::Module mod = load();
    check_every_kernel(*device_, mod, rng_);
  }
  const vk::PipelineCacheCounters after = vk::pipeline_cache_counters();
  EXPECT_EQ(after.files_rejected, before.files_rejected + 1) << "the damaged file was not noticed";
  EXPECT_EQ(after.files_accepted, before.files_accepted);
  EXPECT_EQ(after.pipelines_created, before.pipelines_created + kKernels);
  if (GetParam() == Damage::Directory || GetParam() == Damage::OverTheSizeBound) return;   // cannot be replaced
  // The file was replaced by a valid one: the next load accepts it.
  { quiver::Module mod = load(); }
  EXPECT_EQ(vk::pipeline_cache_counters().files_accepted, after.files_accepted + 1);
  EXPECT_EQ(vk::pipeline_cache_counters().files_rejected, after.files_rejected);
}

std::string damage_name(const ::testing::TestParamInfo<Damage>& info) {
  static const char* const names[] = {"Empty",           "Truncated",           "DataByte",
                                      "HeaderByte",      "Garbage",             "ForeignIdentity",
                                      "ForeignDriverHeader", "Directory",       "OverTheSizeBound",
                                      "OtherOwner"};
  return names[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Files, VulkanPipelineCacheDamage,
                         ::testing::Values(Damage::Empty, Damage::Truncated, Damage::DataByte, Damage::HeaderByte,
                                           Damage::Garbage, Damage::ForeignIdentity, Damage::ForeignDriverHeader,
                                           Damage::Directory, Damage::OverTheSizeBound, Damage::OtherOwner),
                         damage_name);

TEST_F(VulkanPipelineCache, UnusableDirectoriesMeanNoDiskCache) {
  const fs::path file = dir_ / "a-file";
  write_bytes(file, std::vector<std::byte>(8, std::byte{1}));
  std::vector<std::string> dirs = {(file / "sub").string(),   // under a regular file: cannot be created
                                   "/proc/quiver-cache",        // cannot be created, even by root
                                   ""};                         // the documented switch: off
  if (geteuid() != 0) {   // permissions bind only a user other than root
    fs::create_directory(dir_ / "read-only");
    fs::permissions(dir_ / "read-only", fs::perms::owner_read | fs::perms::owner_exec);
    dirs.push_back((dir_ / "read-only").string());
  } else {
    dirs.push_back("/proc");   // exists, and no file can be made in it
  }
  for (const std::string& d : dirs) {
    SCOPED_TRACE("QUIVER_CACHE_DIR=" + d);
    ScopedEnv env("QUIVER_CACHE_DIR", d.c_str());
    const size_t written = vk::pipeline_cache_counters().files_written;
    quiver::Module mod = load();
    check_every_kernel(*device_, mod, rng_);
    EXPECT_EQ(vk::pipeline_cache_counters().files_written, written);
  }
  EXPECT_TRUE(cache_files(dir_).empty());
}

TEST_F(VulkanPipelineCache, DirectoryFallsBackToXdgCacheHomeThenHome) {
  ScopedEnv no_dir("QUIVER_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", (dir_ / "xdg").c_str());
    quiver::Module mod = load();
    check_every_kernel(*device_, mod, rng_);
    EXPECT_EQ(cache_files(dir_ / "xdg" / "quiver").size(), 1u);
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", (dir_ / "home").c_str());
  quiver::Module mod = load();
  check_every_kernel(*device_, mod, rng_);
  EXPECT_EQ(cache_files(dir_ / "home" / ".cache" / "quiver").size(), 1u);
}

// ---- (d) Two processes writing one file at once ----

TEST_F(VulkanPipelineCache, TwoProcessesWritingAtOnceBothSucceedAndLeaveAValidFile) {
  constexpr int kRounds = 8;   // each round loads the module anew (and may write the file again)
  FILE* a = start_child(kRounds);
  FILE* b = start_child(kRounds);
  const ChildReport ra = finish_child(a), rb = finish_child(b);
  ASSERT_EQ(ra.status, 0) << ra.output;
  ASSERT_EQ(rb.status, 0) << rb.output;
  ASSERT_TRUE(ra.parsed && rb.parsed) << ra.output << rb.output;
  EXPECT_EQ(ra.counters.pipelines_created, kRounds * kKernels);
  EXPECT_EQ(ra.counters.files_rejected + rb.counters.files_rejected, 0u) << "a reader saw a partly written file";
  // A round writes the file when it compiled a pipeline the file lacked: every round where the
  // driver's cache data is its header alone (lavapipe), the first rounds only where the data
  // holds the pipelines (NVIDIA's driver, whose later rounds hit the cache).
  EXPECT_GE(ra.counters.files_written + rb.counters.files_written, size_t{2});

  std::vector<fs::path> files = cache_files(dir_);
  ASSERT_EQ(files.size(), 1u) << "temporary files were left behind";
  const vk::PipelineCacheCounters before = vk::pipeline_cache_counters();
  { quiver::Module mod = load(); }
  EXPECT_EQ(vk::pipeline_cache_counters().files_accepted, before.files_accepted + 1);
  EXPECT_EQ(vk::pipeline_cache_counters().files_rejected, before.files_rejected);
}

// ---- (e) Bounds ----

// A fake cache file of `bytes` bytes, modified `age_s` seconds ago.
void fake_cache_file(const fs::path& dir, int index, size_t bytes, int age_s) {
  char name[64];
  std::snprintf(name, sizeof name, "vulkan-%016x-%016x.qvpc", index, index);
  write_bytes(dir / name, std::vector<std::byte>(bytes, std::byte{7}));
  fs::last_write_time(dir / name, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
}

TEST_F(VulkanPipelineCache, FileCountIsBoundedOldestFirst) {
  const int fakes = static_cast<int>(vk::kMaxCacheFiles) + 6;
  for (int i = 0; i < fakes; ++i) fake_cache_file(dir_, i, 100, 1000 + 10 * (fakes - i));   // 0 the oldest
  write_bytes(dir_ / "not-a-cache-file", std::vector<std::byte>(100, std::byte{1}));
  quiver::Module mod = load();
  check_every_kernel(*device_, mod, rng_);
  EXPECT_EQ(cache_files(dir_).size(), vk::kMaxCacheFiles);
  EXPECT_FALSE(fs::exists(dir_ / "vulkan-0000000000000000-0000000000000000.qvpc")) << "the oldest file was kept";
  char newest[64];
  std::snprintf(newest, sizeof newest, "vulkan-%016x-%016x.qvpc", fakes - 1, fakes - 1);
  EXPECT_TRUE(fs::exists(dir_ / newest)) << "a newer file was evicted before an older one";
  EXPECT_TRUE(fs::exists(dir_ / "not-a-cache-file")) << "a file that is not a cache file was removed";
  // The module's own file is among those kept.
  size_t ours = 0;
  for (const fs::path& p : cache_files(dir_)) ours += fs::file_size(p) != 100;
  EXPECT_EQ(ours, 1u);
}

TEST_F(VulkanPipelineCache, TotalBytesAreBoundedAndAnOversizedCacheIsNotWritten) {
  { quiver::Module mod = load(); check_every_kernel(*device_, mod, rng_); }
  const fs::path file = the_cache_file();
  const uintmax_t size = fs::file_size(file);
  for (int i = 0; i < 5; ++i) fake_cache_file(dir_, i, 1000, 1000 - i);
  fs::remove(file);
  {
    ScopedEnv bound("QUIVER_CACHE_MAX_BYTES", std::to_string(size + 2500).c_str());
    quiver::Module mod = load();
    check_every_kernel(*device_, mod, rng_);
    uintmax_t total = 0;
    for (const fs::path& p : cache_files(dir_)) total += fs::file_size(p);
    EXPECT_LE(total, size + 2500);
    EXPECT_TRUE(fs::exists(file)) << "the new file was evicted";
    EXPECT_EQ(cache_files(dir_).size(), 3u) << "more files were evicted than the bound needs";
  }
  fs::remove(file);
  // Below the smallest valid file (our header and the driver's): not even one pipeline is written.
  ScopedEnv tiny("QUIVER_CACHE_MAX_BYTES",
                 std::to_string(vk::kCacheFileHeaderBytes + sizeof(VkPipelineCacheHeaderVersionOne) - 1).c_str());
  quiver::Module mod = load();
  check_every_kernel(*device_, mod, rng_);
  EXPECT_FALSE(fs::exists(file)) << "a file over QUIVER_CACHE_MAX_BYTES was written";
}

// ---- The child process of the cross-process tests ----

TEST(VulkanPipelineCacheChild, DISABLED_LaunchEveryKernel) {
  const char* rounds = std::getenv("QV_PIPELINE_CACHE_CHILD");
  ASSERT_NE(rounds, nullptr) << "run by VulkanPipelineCache's cross-process tests";
  quiver::Device dev = quiver::Device::open("vulkan");
  std::mt19937 rng{std::random_device{}()};
  for (int r = 0; r < std::atoi(rounds); ++r) {
    quiver::Module mod = dev.load(test_fatbin(), "cache_test.qfb");
    check_every_kernel(dev, mod, rng);
  }
  const vk::PipelineCacheCounters c = vk::pipeline_cache_counters();
  std::printf("pipeline cache counters: created=%zu hits=%zu accepted=%zu rejected=%zu written=%zu\n",
              c.pipelines_created, c.cache_hits, c.files_accepted, c.files_rejected, c.files_written);
}

}  // namespace
