// The CPU target end to end: neutral IR -> shared object -> dlopen -> run per docs/abi.md,
// compared with host references on random inputs, outputs poisoned beforehand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ir/layout.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "targets_cpu_harness.h"
#include "targets_cpu_kernels.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_cpu_target();
}

namespace quiver::test {
namespace {

struct CpuKernelRun {
  ParsedIR parsed;
  std::vector<compiler::TargetImage> images;
};

// Compiles `ir` for the x86-64 baseline and returns its single CPU image (checked).
compiler::TargetImage compile_cpu(const std::string& ir, format::Kernel* kernel_out = nullptr) {
  auto target = compiler::create_cpu_target();
  ParsedIR parsed = parse_ir(ir);
  if (kernel_out) *kernel_out = parsed.kernels.at(0);
  compiler::TargetOptions options;
  options.archs = {"x86_64"};
  std::vector<compiler::TargetImage> images = target->compile(*parsed.module, parsed.kernels, with_debug_options(options));
  EXPECT_EQ(images.size(), 1u);
  EXPECT_EQ(images.at(0).target, format::Target::CPU);
  EXPECT_EQ(images.at(0).arch, "x86_64");
  EXPECT_EQ(images.at(0).kernels, std::vector<std::string>{parsed.kernels.at(0).symbol});
  return images.at(0);
}

uint32_t blocks_for(uint32_t n, uint32_t per_block) { return (n + per_block - 1) / per_block; }

TEST(TargetsCpu, SaxpyMatchesHost) {
  format::Kernel kernel;
  compiler::TargetImage image = compile_cpu(kSaxpyIR, &kernel);
  LoadedCpuImage so(image.data);
  void* fn = so.symbol("qv_k0_saxpy");

  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  for (int32_t n : {1, 255, 256, 1000, 4099}) {
    std::vector<float> x(n + 64), y(n + 64), expect(n + 64);
    for (auto& v : x) v = dist(rng);
    for (auto& v : y) v = dist(rng);
    // Elements past n must stay untouched: mark them.
    for (size_t i = n; i < y.size(); ++i) y[i] = std::nanf("");
    float a = dist(rng);
    for (int32_t i = 0; i < n; ++i) expect[i] = a * x[i] + y[i];
    void* xp = x.data();
    void* yp = y.data();
    run_cpu_kernel(fn, kernel, {blocks_for(n, 256) + 0, 1, 1}, {&xp, &yp, &a, &n});
    for (int32_t i = 0; i < n; ++i) ASSERT_EQ(y[i], expect[i]) << "n=" << n << " i=" << i;
    for (size_t i = n; i < y.size(); ++i) ASSERT_TRUE(std::isnan(y[i])) << "wrote past n at " << i;
  }
}

TEST(TargetsCpu, BlockSumWithBarriersAndWorkgroupMemory) {
  format::Kernel kernel;
  compiler::TargetImage image = compile_cpu(kBlockSumIR, &kernel);
  // 64 floats at 0, 2 doubles at the next 64-byte boundary (256), total rounded to 64.
  EXPECT_EQ(kernel.shared_bytes, 320u);
  EXPECT_TRUE(kernel.uses_barrier);
  LoadedCpuImage so(image.data);
  // Its barriers became loops over the threads: the block entry, one call per block.
  void* fn = so.symbol("__qv_block_qv_k1_block_sum");
  kernel.uses_barrier = false;

  std::mt19937 rng(99);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  for (int32_t n : {1, 64, 200}) {
    uint32_t blocks = blocks_for(n, 64);
    std::vector<float> x(n);
    for (auto& v : x) v = static_cast<float>(dist(rng)) / 8.0f;   // exact sums in any order
    std::vector<float> out(blocks + 1, std::nanf(""));
    void* xp = x.data();
    void* op = out.data();
    run_cpu_kernel(fn, kernel, {blocks, 1, 1}, {&xp, &op, &n});
    for (uint32_t b = 0; b < blocks; ++b) {
      float expect = 0;
      for (int32_t i = b * 64; i < std::min<int32_t>(n, (b + 1) * 64); ++i) expect += x[i];
      ASSERT_EQ(out[b], expect) << "n=" << n << " block " << b;
    }
    ASSERT_TRUE(std::isnan(out[blocks])) << "wrote past the last block";
  }
}

int32_t collatz_reference(int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  int32_t steps = 0;
  while (u > 1) {
    u = (u & 1) ? u * 3 + 1 : u >> 1;
    ++steps;
  }
  switch (static_cast<uint32_t>(steps) % 3) {
    case 0: return steps * 10;
    case 1: return steps + 100;
    default: return -steps;
  }
}

// With no arch asked for, an x86-64 quiverc writes the three levels; each the host runs gives
// the same results.
TEST(TargetsCpu, DefaultArchsAreTheX86LevelsEachRunningTheKernel) {
  auto target = compiler::create_cpu_target();
  ParsedIR parsed = parse_ir(kSaxpyIR);
  std::vector<compiler::TargetImage> images = target->compile(*parsed.module, parsed.kernels, with_debug_options());
#if defined(__x86_64__)
  ASSERT_EQ(images.size(), 3u);
  EXPECT_EQ(images[0].arch, "x86_64");
  EXPECT_EQ(images[1].arch, "x86_64_v3");
  EXPECT_EQ(images[2].arch, "x86_64_v4");
  __builtin_cpu_init();
  const bool runs[] = {true, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                       __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")};
  for (size_t i = 0; i < images.size(); ++i) {
    if (!runs[i]) continue;
    LoadedCpuImage so(images[i].data);
    int32_t n = 1000;
    std::vector<float> x(n), y(n + 16, std::nanf("")), expect(n);
    for (int32_t j = 0; j < n; ++j) {
      x[j] = float(j % 37) - 18.0f;
      y[j] = float(j % 11) * 0.5f;
      expect[j] = 3.0f * x[j] + y[j];
    }
    float a = 3.0f;
    void* xp = x.data();
    void* yp = y.data();
    run_cpu_kernel(so.symbol("qv_k0_saxpy"), parsed.kernels.at(0), {blocks_for(n, 256), 1, 1}, {&xp, &yp, &a, &n});
    for (int32_t j = 0; j < n; ++j) ASSERT_EQ(y[j], expect[j]) << images[i].arch << " j=" << j;
    for (size_t j = n; j < y.size(); ++j) ASSERT_TRUE(std::isnan(y[j])) << images[i].arch << " wrote past n";
  }
#else
  ASSERT_EQ(images.size(), 1u);
#endif
}

TEST(TargetsCpu, StructuredControlFlowIn2DBlocks) {
  format::Kernel kernel;
  compiler::TargetImage image = compile_cpu(kCollatzIR, &kernel);
  EXPECT_FALSE(kernel.uses_barrier);
  LoadedCpuImage so(image.data);
  void* fn = so.symbol("qv_k2_collatz");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> dist(1, 100000);
  int32_t n = 1000;
  std::vector<int32_t> in(n), out(n + 64, static_cast<int32_t>(0xABABABAB));
  for (auto& v : in) v = dist(rng);
  in[0] = 1;
  in[1] = 27;
  void* ip = in.data();
  void* op = out.data();
  run_cpu_kernel(fn, kernel, {blocks_for(n, 64), 1, 1}, {&ip, &op, &n});
  for (int32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], collatz_reference(in[i])) << "i=" << i << " in=" << in[i];
  for (size_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<int32_t>(0xABABABAB));
}

double math_f64_reference(double x) {
  double ax = std::fabs(x);
  return std::exp(x) / 4 + std::sin(x) + std::cos(x) * std::tanh(x) + std::erf(x) +
         std::log(ax + 1) + std::log2(ax + 2) + std::exp2(x / 2) + std::pow(ax + 0.5, 1.5) +
         std::sqrt(ax) + 1 / std::sqrt(ax + 1);
}

TEST(TargetsCpu, MathF64MatchesLibm) {
  format::Kernel kernel;
  compiler::TargetImage image = compile_cpu(kMathF64IR, &kernel);
  LoadedCpuImage so(image.data);
  void* fn = so.symbol("qv_k3_math_f64");
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> dist(-20.0, 20.0);
  int32_t n = 3000;
  std::vector<double> x(n), out(n + 1, std::nan(""));
  for (auto& v : x) v = dist(rng);
  void* xp = x.data();
  void* op = out.data();
  run_cpu_kernel(fn, kernel, {blocks_for(n, 128), 1, 1}, {&xp, &op, &n});
  for (int32_t i = 0; i < n; ++i) {
    double expect = math_f64_reference(x[i]);
    // Sum of ten terms each within a few ulp: relative to the largest term (exp x / 4).
    double scale = std::max(1.0, std::exp(x[i]) / 4);
    ASSERT_NEAR(out[i], expect, 1e-13 * scale) << "x=" << x[i];
  }
  ASSERT_TRUE(std::isnan(out[n]));
}

TEST(TargetsCpu, ImageImportsNothingButLibm) {
  compiler::TargetImage image = compile_cpu(kMathF64IR);
  auto buffer = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char*>(image.data.data()), image.data.size()), "so", false);
  auto file = llvm::object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  ASSERT_TRUE(!!file);
  auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(file->get());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->getEType(), llvm::ELF::ET_DYN);
  bool exported = false;
  for (const auto& sym : elf->getDynamicSymbolIterators()) {
    auto name = sym.getName();
    ASSERT_TRUE(!!name);
    auto flags = sym.getFlags();
    ASSERT_TRUE(!!flags);
    if (*flags & llvm::object::SymbolRef::SF_Undefined) {
      EXPECT_TRUE(*name == "fma" || *name == "fmaf" || name->empty()) << "imports " << name->str();
    }
    if (*name == "qv_k3_math_f64") exported = true;
  }
  EXPECT_TRUE(exported);
}

TEST(TargetsCpu, ErrorsNameTheKernel) {
  auto target = compiler::create_cpu_target();
  ParsedIR parsed = parse_ir(kSaxpyIR);
  parsed.kernels[0].name = "saxpy";
  parsed.kernels[0].params.pop_back();   // manifest and IR disagree
  try {
    target->compile(*parsed.module, parsed.kernels, {});
    FAIL() << "expected a TargetError";
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.kernel(), "saxpy");
    EXPECT_EQ(e.target(), "cpu");
    EXPECT_NE(std::string(e.what()).find("parameters"), std::string::npos) << e.what();
  }
  ParsedIR barrier = parse_ir(kBlockSumIR);
  barrier.kernels[0].uses_barrier = false;
  EXPECT_THROW(target->compile(*barrier.module, barrier.kernels, {}), compiler::TargetError);
  ParsedIR missing = parse_ir(kSaxpyIR);
  missing.kernels[0].symbol = "qv_k9_nope";
  EXPECT_THROW(target->compile(*missing.module, missing.kernels, {}), compiler::TargetError);
}

}  // namespace
}  // namespace quiver::test
