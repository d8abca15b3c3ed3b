// Runs the spirv target's output on a Vulkan device (lavapipe on CI machines): every test kernel
// comes from ONE build of all of them (each kernel's own image), gets fresh random inputs and
// poisoned outputs, and is compared with a host reference. Elements past `n` must keep their
// poison.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>
#include <random>

#include "targets_spirv_support.h"
#include "targets_spirv_vulkan.h"

namespace quiver::test {
namespace {

constexpr uint32_t kPoison32 = 0x7fc0dead;   // a NaN no kernel computes
constexpr std::byte kPoisonByte{0xAB};

// The image of kernel `entry` out of one build of every test kernel.
const std::vector<uint32_t>& image_of(const std::string& entry) {
  static const std::vector<CompiledSpirv> images = compile_spirv_each(all_test_kernels());
  for (const CompiledSpirv& image : images)
    if (image.image.kernels == std::vector<std::string>{entry}) return image.words;
  throw std::runtime_error("no image holds only " + entry);
}

class SpirvOnVulkan : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      vk_ = &VulkanCompute::instance();
    } catch (const std::exception& e) {
      FAIL() << "no Vulkan device (install mesa-vulkan-drivers for lavapipe): " << e.what();
    }
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }
  void run(const std::string& entry, uint32_t groups, std::vector<std::vector<std::byte>*> args) {
    vk_->run(image_of(entry), entry, {groups, 1, 1}, args);
  }
  std::vector<float> random_floats(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    return v;
  }
  template <typename T>
  std::vector<T> random_ints(size_t n, T lo, T hi) {
    std::uniform_int_distribution<int64_t> d(lo, hi);
    std::vector<T> v(n);
    for (T& x : v) x = T(d(rng_));
    return v;
  }
  static std::vector<std::byte> poisoned_f32(size_t n) {
    std::vector<uint32_t> bits(n, kPoison32);
    return to_bytes(bits);
  }
  static std::vector<std::byte> poisoned_bytes(size_t n) { return std::vector<std::byte>(n, kPoisonByte); }

  VulkanCompute* vk_ = nullptr;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

bool is_poison(float f) { return std::bit_cast<uint32_t>(f) == kPoison32; }

TEST_F(SpirvOnVulkan, Saxpy) {
  const uint32_t n = 1000, groups = (n + 63) / 64 + 1;   // one spare block must write nothing
  std::vector<float> x = random_floats(n, -10, 10), y = random_floats(n, -10, 10);
  float a = random_floats(1, -3, 3)[0];
  auto bx = to_bytes(x), by = to_bytes(y), bout = poisoned_f32(groups * 64);
  auto ba = scalar_bytes(a), bn = scalar_bytes(int32_t(n));
  run("qv_k0_saxpy", groups, {&bx, &by, &bout, &ba, &bn});
  std::vector<float> out = from_bytes<float>(bout);
  for (uint32_t i = 0; i < n; ++i) {
    float ref = a * x[i] + y[i];
    // The driver may contract a*x+y into an fma: allow the one rounding that saves.
    ASSERT_NEAR(out[i], ref, 1e-6f * (std::fabs(a * x[i]) + std::fabs(y[i])) + 1e-7f)
        << "i=" << i << " seed=" << seed_;
  }
  for (uint32_t i = n; i < out.size(); ++i) ASSERT_TRUE(is_poison(out[i])) << "wrote past n at " << i;
  EXPECT_EQ(x, from_bytes<float>(bx)) << "input buffer modified";
}

TEST_F(SpirvOnVulkan, SharedMemoryBlockSum) {
  const uint32_t n = 1000, groups = (n + 127) / 128;
  std::vector<float> in = random_floats(n, -1, 1);
  auto bin = to_bytes(in), bout = poisoned_f32(groups + 3), bn = scalar_bytes(int32_t(n));
  run("qv_k1_block_sum", groups, {&bin, &bout, &bn});
  std::vector<float> out = from_bytes<float>(bout);
  for (uint32_t g = 0; g < groups; ++g) {
    // The same tree order as the kernel, so the sums must match bit for bit.
    float tile[128];
    for (uint32_t t = 0; t < 128; ++t) tile[t] = g * 128 + t < n ? in[g * 128 + t] : 0.0f;
    for (uint32_t stride = 64; stride > 0; stride >>= 1)
      for (uint32_t t = 0; t < stride; ++t) tile[t] += tile[t + stride];
    ASSERT_EQ(std::bit_cast<uint32_t>(out[g]), std::bit_cast<uint32_t>(tile[0]))
        << "block " << g << ": " << out[g] << " vs " << tile[0] << " seed=" << seed_;
  }
  for (uint32_t g = groups; g < out.size(); ++g) ASSERT_TRUE(is_poison(out[g]));
}

TEST_F(SpirvOnVulkan, ForIfAndIndexSwitch) {
  const uint32_t n = 777, groups = (n + 63) / 64 + 1;
  std::vector<int32_t> in = random_ints<int32_t>(n, INT32_MIN, INT32_MAX);
  int32_t m = random_ints<int32_t>(1, 5, 40)[0];
  auto bin = to_bytes(in), bout = poisoned_bytes(groups * 64 * 4);
  auto bm = scalar_bytes(m), bn = scalar_bytes(int32_t(n));
  run("qv_k2_loops", groups, {&bin, &bout, &bm, &bn});
  std::vector<uint32_t> out = from_bytes<uint32_t>(bout);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t x = uint32_t(in[i]), acc = 0;
    for (uint32_t k = 0; k < uint32_t(m); ++k) acc = (k & 1) ? acc + x * k : acc ^ k;
    uint32_t ref = i % 4 == 0 ? acc : i % 4 == 1 ? acc * 3 : i % 4 == 2 ? acc - x : 0xffffffffu;
    ASSERT_EQ(out[i], ref) << "i=" << i << " m=" << m << " seed=" << seed_;
  }
  for (uint32_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], 0xABABABABu) << "wrote past n at " << i;
}

TEST_F(SpirvOnVulkan, DataDependentWhile) {
  const uint32_t n = 500, groups = (n + 31) / 32 + 1;
  std::vector<int32_t> in = random_ints<int32_t>(n, 1, 5000);
  auto bin = to_bytes(in), bout = poisoned_bytes(groups * 32 * 4), bn = scalar_bytes(int32_t(n));
  run("qv_k3_collatz", groups, {&bin, &bout, &bn});
  std::vector<uint32_t> out = from_bytes<uint32_t>(bout);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t v = uint32_t(in[i]), steps = 0;
    while (v != 1) {
      v = (v & 1) ? v * 3 + 1 : v >> 1;
      ++steps;
    }
    ASSERT_EQ(out[i], steps) << "collatz(" << in[i] << ") seed=" << seed_;
  }
  for (uint32_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], 0xABABABABu);
}

TEST_F(SpirvOnVulkan, NarrowAndWideIntegers) {
  const uint32_t n = 300, groups = (n + 31) / 32 + 1, cap = groups * 32;
  auto a8 = random_ints<int8_t>(n, INT8_MIN, INT8_MAX);
  auto a16 = random_ints<int16_t>(n, INT16_MIN, INT16_MAX);
  auto a64 = random_ints<int64_t>(n, INT64_MIN / 4, INT64_MAX / 4);
  int8_t s8 = random_ints<int8_t>(1, INT8_MIN, INT8_MAX)[0];
  int16_t s16 = random_ints<int16_t>(1, INT16_MIN, INT16_MAX)[0];
  int64_t s64 = random_ints<int64_t>(1, -1000000, 1000000)[0];
  for (int32_t flip : {0, 1}) {
    SCOPED_TRACE("flip=" + std::to_string(flip));
    auto b8 = to_bytes(a8), b16 = to_bytes(a16), b64 = to_bytes(a64);
    auto o8 = poisoned_bytes(cap), o16 = poisoned_bytes(cap * 2), o64 = poisoned_bytes(cap * 8);
    auto neg = poisoned_bytes(cap);
    auto bs8 = scalar_bytes(s8), bs16 = scalar_bytes(s16), bs64 = scalar_bytes(s64);
    auto bflip = scalar_bytes(flip), bn = scalar_bytes(int32_t(n));
    run("qv_k4_ints", groups, {&b8, &b16, &b64, &o8, &o16, &o64, &neg, &bs8, &bs16, &bs64, &bflip, &bn});
    auto r8 = from_bytes<uint8_t>(o8);
    auto r16 = from_bytes<uint16_t>(o16);
    auto r64 = from_bytes<uint64_t>(o64);
    auto rneg = from_bytes<uint8_t>(neg);
    for (uint32_t i = 0; i < n; ++i) {
      uint8_t e8 = uint8_t(uint8_t(a8[i]) * 3u + uint8_t(s8));
      uint16_t e16 = uint16_t(uint16_t(a16[i] >> 2) + uint16_t(int16_t(a8[i])) + uint16_t(s16));
      uint64_t v = uint64_t(a64[i]) * uint64_t(s64) + uint64_t(uint16_t(a16[i]));
      uint64_t e64 = flip ? 0 - v : v;
      ASSERT_EQ(r8[i], e8) << "i8 at " << i << " seed=" << seed_;
      ASSERT_EQ(r16[i], e16) << "i16 at " << i << " seed=" << seed_;
      ASSERT_EQ(r64[i], e64) << "i64 at " << i << " seed=" << seed_;
      ASSERT_EQ(rneg[i], a8[i] < 0 ? 1 : 0) << "bool at " << i << " seed=" << seed_;
    }
    for (uint32_t i = n; i < cap; ++i) {
      ASSERT_EQ(r8[i], 0xABu);
      ASSERT_EQ(r16[i], 0xABABu);
      ASSERT_EQ(r64[i], 0xABABABABABABABABull);
      ASSERT_EQ(rneg[i], 0xABu);
    }
  }
}

TEST_F(SpirvOnVulkan, MathFunctions) {
  const uint32_t n = 1000, groups = (n + 63) / 64 + 1, cap = groups * 64;
  std::vector<float> x = random_floats(n, -6, 6);
  x[0] = 0.0f;
  x[1] = -0.0f;
  auto bx = to_bytes(x), be = poisoned_f32(cap), bt = poisoned_f32(cap), bs = poisoned_f32(cap),
       ber = poisoned_f32(cap), bn = scalar_bytes(int32_t(n));
  run("qv_k5_math", groups, {&bx, &be, &bt, &bs, &ber, &bn});
  auto e = from_bytes<float>(be), t = from_bytes<float>(bt), s = from_bytes<float>(bs),
       er = from_bytes<float>(ber);
  for (uint32_t i = 0; i < n; ++i) {
    double xi = x[i];
    // Polynomial approximations (quiver::ir::lower_math): a few ulp of float.
    ASSERT_NEAR(e[i], std::exp(xi), 4e-7 * std::exp(xi) + 1e-30) << "exp(" << xi << ") seed=" << seed_;
    ASSERT_NEAR(t[i], std::tanh(xi), 4e-7) << "tanh(" << xi << ") seed=" << seed_;
    ASSERT_NEAR(s[i], std::sqrt(std::fabs(xi)), 2e-7 * std::sqrt(std::fabs(xi)))
        << "sqrt(" << xi << ") seed=" << seed_;
    ASSERT_NEAR(er[i], std::erf(xi), 4e-7) << "erf(" << xi << ") seed=" << seed_;
  }
  for (uint32_t i = n; i < cap; ++i)
    ASSERT_TRUE(is_poison(e[i]) && is_poison(t[i]) && is_poison(s[i]) && is_poison(er[i]));
}

TEST_F(SpirvOnVulkan, SecondWorkgroupBufferInTheSameModule) {
  const uint32_t n = 200, groups = (n + 63) / 64 + 1;
  std::vector<int32_t> in = random_ints<int32_t>(n, INT32_MIN, INT32_MAX);
  auto bin = to_bytes(in), bout = poisoned_bytes(groups * 64 * 4), bn = scalar_bytes(int32_t(n));
  run("qv_k6_reverse", groups, {&bin, &bout, &bn});
  std::vector<uint32_t> out = from_bytes<uint32_t>(bout);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t src = i / 64 * 64 + (63 - i % 64);
    uint32_t ref = src < n ? uint32_t(in[src]) : 0;
    ASSERT_EQ(out[i], ref) << "i=" << i << " seed=" << seed_;
  }
  for (uint32_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], 0xABABABABu);
}

TEST_F(SpirvOnVulkan, Vec4BuffersAnd2DBlock) {
  const uint32_t n = 100, groups = (n + 31) / 32 + 1, cap = groups * 32;
  std::vector<float> x = random_floats(n * 4, -100, 100);
  float a = random_floats(1, -2, 2)[0];
  auto bx = to_bytes(x), bout = poisoned_f32(cap * 4), ba = scalar_bytes(a), bn = scalar_bytes(int32_t(n));
  run("qv_k7_vec4", groups, {&bx, &bout, &ba, &bn});
  std::vector<float> out = from_bytes<float>(bout);
  for (uint32_t i = 0; i < n; ++i) {
    float ty = float((i % 32) / 8);
    for (uint32_t c = 0; c < 4; ++c) {
      float ref = x[i * 4 + c] * a + ty;
      ASSERT_NEAR(out[i * 4 + c], ref, 1e-6f * (std::fabs(x[i * 4 + c] * a) + ty) + 1e-7f)
          << "element " << i << "." << c << " seed=" << seed_;
    }
  }
  for (uint32_t i = n * 4; i < out.size(); ++i) ASSERT_TRUE(is_poison(out[i]));
}

TEST_F(SpirvOnVulkan, SubgroupReduceLaneAndShuffle) {
  const uint32_t groups = 5, n = groups * 64, spare = 16;
  std::vector<int32_t> x = random_ints<int32_t>(n, -100000, 100000);
  auto bx = to_bytes(x), bsum = poisoned_bytes((n + spare) * 4),
       binfo = poisoned_bytes((n + spare) * 12), bswap = poisoned_f32(n + spare);
  run("qv_k8_subgroup", groups, {&bx, &bsum, &binfo, &bswap});
  auto sum = from_bytes<uint32_t>(bsum), info = from_bytes<uint32_t>(binfo);
  auto swapped = from_bytes<float>(bswap);
  // Group the threads by (block, subgroup id) as the device reports them; every thread must see
  // its subgroup's sum, and shuffle xor 1 must deliver the value of the lane next door.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> members;
  const uint32_t size = info[0];
  ASSERT_TRUE(size >= 1 && size <= 128 && std::has_single_bit(size)) << "subgroup size " << size;
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(info[3 * i], size) << "thread " << i;
    ASSERT_LT(info[3 * i + 1], size) << "lane of thread " << i;
    members[{i / 64, info[3 * i + 2]}].push_back(i);
  }
  for (auto& [key, threads] : members) {
    uint32_t total = 0;
    std::map<uint32_t, uint32_t> by_lane;
    for (uint32_t t : threads) {
      total += uint32_t(x[t]);
      ASSERT_TRUE(by_lane.emplace(info[3 * t + 1], t).second) << "two threads share a lane";
    }
    for (uint32_t t : threads) {
      ASSERT_EQ(sum[t], total) << "thread " << t << " seed=" << seed_;
      uint32_t partner_lane = info[3 * t + 1] ^ 1u;
      auto partner = by_lane.find(partner_lane);
      if (partner_lane < size && partner != by_lane.end())
        ASSERT_EQ(swapped[t], float(x[partner->second])) << "shuffle at thread " << t;
    }
  }
  for (uint32_t i = n; i < n + spare; ++i) {
    ASSERT_EQ(sum[i], 0xABABABABu);
    ASSERT_TRUE(is_poison(swapped[i]));
  }
}

}  // namespace
}  // namespace quiver::test
