// The SPIR-V entry-point reader the Vulkan backend runs before handing a module to the driver.
// Checked against the glslang-built module embedded in this binary (its entry points and
// LocalSizes are known from the GLSL sources) and against corrupted copies of it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/vulkan/spirv_inspect.h"
#include "vulkan_test_spirv.h"

namespace {

using quiver::backend::vulkan::inspect_spirv;
using quiver::backend::vulkan::kExecutionModelGLCompute;

std::vector<uint32_t> module_words() { return quiver::test::kernel_spirv_words(); }

TEST(SpirvInspect, FindsEveryEntryPointWithItsLocalSize) {
  auto info = inspect_spirv(module_words());
  EXPECT_GE(info.version, 0x00010500u);   // --target-env vulkan1.2 gives SPIR-V 1.5
  struct Expect {
    const char* name;
    std::array<uint32_t, 3> size;
  };
  const Expect expected[] = {{"qv_k0_saxpy", {256, 1, 1}},
                             {"qv_k1_block_sum", {256, 1, 1}},
                             {"qv_k2_int_mix", {64, 1, 1}},
                             {"qv_k3_grid2d", {16, 8, 1}}};
  EXPECT_EQ(info.entry_points.size(), std::size(expected));
  for (const Expect& e : expected) {
    const auto* entry = info.find(e.name);
    ASSERT_NE(entry, nullptr) << e.name;
    EXPECT_EQ(entry->execution_model, kExecutionModelGLCompute) << e.name;
    ASSERT_TRUE(entry->local_size.has_value()) << e.name;
    EXPECT_EQ(*entry->local_size, e.size) << e.name;
  }
  EXPECT_EQ(info.find("main"), nullptr);   // renamed by glslangValidator -e
}

TEST(SpirvInspect, WorkgroupSizeBuiltinOverridesLocalSize) {
  // Several such objects (the raw linked module) are ambiguous and refused.
  EXPECT_THROW(inspect_spirv(quiver::test::linked_spirv_words()), std::invalid_argument);
  // Exactly one applies to every entry point: OpConstant 7, 3, 1 -> composite -> BuiltIn.
  std::vector<uint32_t> words = {0x07230203, 0x00010500, 0, 20, 0};
  auto emit = [&](uint32_t opcode, std::vector<uint32_t> operands) {
    words.push_back(static_cast<uint32_t>(operands.size() + 1) << 16 | opcode);
    words.insert(words.end(), operands.begin(), operands.end());
  };
  const uint32_t name_a = 'a', name_b = 'b';   // "a\0\0\0", "b\0\0\0"
  emit(15, {kExecutionModelGLCompute, 1, name_a});
  emit(15, {kExecutionModelGLCompute, 2, name_b});
  emit(16, {1, 17, 64, 1, 1});   // LocalSize of a: overridden
  emit(71, {10, 11, 25});        // OpDecorate %10 BuiltIn WorkgroupSize
  emit(43, {3, 4, 7});
  emit(43, {3, 5, 3});
  emit(43, {3, 6, 1});
  emit(44, {9, 10, 4, 5, 6});
  auto info = inspect_spirv(words);
  ASSERT_EQ(info.entry_points.size(), 2u);
  for (const auto& e : info.entry_points) {
    ASSERT_TRUE(e.local_size.has_value()) << e.name;
    EXPECT_EQ(*e.local_size, (std::array<uint32_t, 3>{7, 3, 1})) << e.name;
  }
}

TEST(SpirvInspect, RejectsBadHeaderAndTruncation) {
  std::vector<uint32_t> words = module_words();
  EXPECT_THROW(inspect_spirv(std::span(words).first(4)), std::invalid_argument);

  std::vector<uint32_t> swapped = words;
  swapped[0] = __builtin_bswap32(swapped[0]);
  EXPECT_THROW(inspect_spirv(swapped), std::invalid_argument);

  // Cutting the module anywhere inside an instruction is caught, never read past.
  std::mt19937 rng{std::random_device{}()};
  for (int trial = 0; trial < 50; ++trial) {
    const size_t cut = std::uniform_int_distribution<size_t>(5, words.size() - 1)(rng);
    std::vector<uint32_t> prefix(words.begin(), words.begin() + cut);
    try {
      inspect_spirv(prefix);   // a cut on an instruction boundary is a valid (shorter) stream
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
    }
  }

  std::vector<uint32_t> zero_count = words;
  zero_count[5] = 0;   // first instruction with word count 0 would loop forever
  EXPECT_THROW(inspect_spirv(zero_count), std::invalid_argument);
}

TEST(SpirvInspect, RejectsUnterminatedEntryPointName) {
  // Header + OpEntryPoint GLCompute %1 "abcd" with the NUL word dropped.
  std::vector<uint32_t> words = {0x07230203, 0x00010500, 0, 10, 0};
  const uint32_t name_word = 'a' | ('b' << 8) | ('c' << 16) | (uint32_t('d') << 24);
  words.push_back((4u << 16) | 15u);
  words.push_back(kExecutionModelGLCompute);
  words.push_back(1);
  words.push_back(name_word);
  EXPECT_THROW(inspect_spirv(words), std::invalid_argument);
  // With its terminator it parses.
  words[5] = (5u << 16) | 15u;
  words.push_back(0);
  auto info = inspect_spirv(words);
  ASSERT_EQ(info.entry_points.size(), 1u);
  EXPECT_EQ(info.entry_points[0].name, "abcd");
  EXPECT_FALSE(info.entry_points[0].local_size.has_value());
}

}  // namespace
