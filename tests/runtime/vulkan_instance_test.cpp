// One VkInstance per process (runtime/backends/vulkan/vulkan_context.cpp, "The process-wide
// instance"): NVIDIA's driver 580 refuses vkCreateInstance after about 30 instances have been
// created and destroyed in one process, so Devices opened and closed one after another must not
// each create their own. Opens and closes a Vulkan Device 40 times, launching a kernel on each and
// checking it against the host, and reads the backend's instance counter (an internal hook
// exported by libquiver). Also: detection that fails under a changed environment (no drivers)
// creates nothing that later opens would reuse, and works again once the environment is back.
// Runs on lavapipe in CI and on the NVIDIA driver on the GPU machine.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_context.h"
#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "scoped_env.h"
#include "vulkan_test_spirv.h"

namespace {

using quiver::Device;
using quiver::backend::vulkan::instances_created;
using quiver::format::Access;
using quiver::format::ScalarType;
using quiver::test::ScopedEnv;

constexpr int32_t kPoison = static_cast<int32_t>(0xABABABABu);

// int_mix(const int32_t* in, int32_t* out, int32_t mul, int32_t bias, uint32_t mask, uint32_t n)
// from vulkan_int_mix.comp, alone in the fat binary.
std::vector<std::byte> int_mix_fatbin() {
  quiver::format::Manifest m;
  m.compiler_version = "hand-written GLSL (glslangValidator)";
  m.source_hash = "0123456789abcdef";
  auto param = [](const char* name, ScalarType t, bool buffer, Access a) {
    quiver::format::Param p;
    p.name = name;
    p.type = t;
    p.is_buffer = buffer;
    p.access = a;
    return p;
  };
  quiver::format::Kernel k;
  k.name = "int_mix";
  k.symbol = "qv_k2_int_mix";
  k.params = {param("in", ScalarType::I32, true, Access::Read), param("out", ScalarType::I32, true, Access::ReadWrite),
              param("mul", ScalarType::I32, false, Access::Read), param("bias", ScalarType::I32, false, Access::Read),
              param("mask", ScalarType::U32, false, Access::Read), param("n", ScalarType::U32, false, Access::Read)};
  k.block = {64, 1, 1};
  k.targets = {quiver::format::Target::SPIRV};
  m.kernels.push_back(k);
  std::vector<quiver::format::ImageInput> images;
  images.push_back({quiver::format::Target::SPIRV, "vulkan1.2",
                    quiver::test::to_bytes(quiver::test::kernel_spirv_words()), {"qv_k2_int_mix"}});
  return quiver::format::write_fatbin(std::move(m), images, 3);
}

// Opens a Device, runs int_mix on fresh random data into a poisoned output (with a tail the
// kernel must not touch) and compares with the host; closes everything. "" when it matched.
std::string open_run_close(const std::vector<std::byte>& qfb, std::mt19937& rng) {
  Device dev = Device::open("vulkan");
  quiver::Module mod = dev.load(qfb, "int_mix.qfb");
  const uint32_t n = std::uniform_int_distribution<uint32_t>(100, 5000)(rng);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::vector<int32_t> in(n);
  for (int32_t& v : in) v = any(rng);
  const int32_t mul = any(rng), bias = any(rng);
  const uint32_t mask = static_cast<uint32_t>(any(rng));
  std::vector<int32_t> out(n + 64, kPoison);
  quiver::Buffer<int32_t> bin = dev.alloc<int32_t>(n), bout = dev.alloc<int32_t>(out.size());
  bin.upload(in);
  bout.upload(out);
  mod.kernel("int_mix").launch(quiver::Grid{(n + 63) / 64}, bin, bout, mul, bias, mask, n);
  std::vector<int32_t> got(out.size(), 0);
  bout.download(got);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t want = (static_cast<uint32_t>(in[i]) * static_cast<uint32_t>(mul) + static_cast<uint32_t>(bias)) ^ mask;
    if (static_cast<uint32_t>(got[i]) != want)
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", want " +
             std::to_string(static_cast<int32_t>(want));
  }
  for (size_t i = n; i < got.size(); ++i)
    if (got[i] != kPoison) return "tail element " + std::to_string(i) + " was written";
  return "";
}

TEST(VulkanInstance, FortyDevicesOpenedAndClosedShareOneInstance) {
  const std::vector<std::byte> qfb = int_mix_fatbin();
  std::mt19937 rng{std::random_device{}()};
  const size_t before = instances_created();
  ASSERT_GE(Device::count("vulkan"), 1u) << "no Vulkan device (CI has lavapipe)";
  const size_t first = instances_created();
  // Another test of this binary may have created the instance already; at most this one more.
  EXPECT_LE(first - before, 1u);
  if (before == 0) EXPECT_EQ(first, 1u);
  for (int round = 0; round < 40; ++round) {
    ASSERT_EQ(open_run_close(qfb, rng), "") << "round " << round;
    ASSERT_GE(Device::count("vulkan"), 1u) << "round " << round;
    ASSERT_EQ(instances_created(), first) << "round " << round << " created another VkInstance";
  }
}

// An empty directory for the test's lifetime.
struct EmptyDirectory {
  std::string path;
  EmptyDirectory() {
    char name[] = "/tmp/quiver-no-drivers-XXXXXX";
    if (mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = name;
  }
  ~EmptyDirectory() { std::filesystem::remove_all(path); }
};

TEST(VulkanInstance, FailedDetectionIsNotKeptAndTheSharedInstanceStaysUsable) {
  const std::vector<std::byte> qfb = int_mix_fatbin();
  std::mt19937 rng{std::random_device{}()};
  ASSERT_EQ(open_run_close(qfb, rng), "");
  const size_t created = instances_created();
  {
    EmptyDirectory empty;
    ScopedEnv files("VK_DRIVER_FILES", empty.path.c_str());
    ScopedEnv legacy("VK_ICD_FILENAMES", nullptr);
    ScopedEnv added("VK_ADD_DRIVER_FILES", nullptr);
    for (int attempt = 0; attempt < 3; ++attempt) {
      EXPECT_EQ(Device::count("vulkan"), 0u);
      try {
        Device::open("vulkan");
        ADD_FAILURE() << "a Vulkan device opened with no drivers";
      } catch (const quiver::Error& e) {
        EXPECT_EQ(e.code(), quiver::ErrorCode::BackendUnavailable);
        EXPECT_NE(std::string(e.what()).find("VK_ERROR_INCOMPATIBLE_DRIVER"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_EQ(instances_created(), created) << "a failed vkCreateInstance was counted";
  ASSERT_EQ(open_run_close(qfb, rng), "");
  EXPECT_EQ(instances_created(), created) << "the environment is back: its instance must be reused";
}

}  // namespace
