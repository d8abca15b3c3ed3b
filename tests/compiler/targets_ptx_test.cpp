// The PTX target: neutral IR -> one PTX per arch (+ cubin when ptxas exists). Each PTX is
// assembled again here with ptxas (the CUDA toolkit's, skipped only when absent) and its
// entries checked against docs/abi.md: `.entry <symbol>`, one .u64 per buffer, .maxntid.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <regex>

#include "targets/llvm_common/process.h"
#include "targets_cpu_harness.h"
#include "targets_cpu_kernels.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_ptx_target();
}

namespace quiver::test {
namespace {

namespace fs = std::filesystem;
using compiler::llvm_common::find_executable;

std::optional<fs::path> ptxas() {
  std::vector<std::string> dirs{"/usr/local/cuda/bin"};
  auto p = find_executable("ptxas", dirs);
  return p ? p : find_executable("ptxas");
}

// The parameter list of `.entry name( ... )`.
std::string entry_params(const std::string& ptx, const std::string& name) {
  size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos) return {};
  size_t close = ptx.find(')', at);
  return ptx.substr(at, close - at);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

void assemble_with_ptxas(const std::string& ptx, const std::string& arch) {
  auto tool = ptxas();
  if (!tool) GTEST_SKIP() << "ptxas not installed";
  compiler::llvm_common::ScratchDir dir;
  compiler::llvm_common::write_file(dir.path() / "k.ptx", ptx);
  auto r = compiler::llvm_common::run_process(
      {tool->string(), "-arch=" + arch, "-v", "-o", (dir.path() / "k.cubin").string(), (dir.path() / "k.ptx").string()});
  EXPECT_EQ(r.exit_code, 0) << "ptxas -arch=" << arch << ":\n" << r.output << "\n" << ptx;
  EXPECT_GT(fs::file_size(dir.path() / "k.cubin"), 0u);
}

struct Expectation {
  const char* ir;
  const char* symbol;
  int buffers;
  const char* maxntid;
  bool shared;
};

const Expectation kKernels[] = {
    {kSaxpyIR, "qv_k0_saxpy", 2, ".maxntid 256, 1, 1", false},
    {kBlockSumIR, "qv_k1_block_sum", 2, ".maxntid 64, 1, 1", true},
    {kCollatzIR, "qv_k2_collatz", 2, ".maxntid 32, 2, 1", false},
    {kMathF64IR, "qv_k3_math_f64", 2, ".maxntid 128, 1, 1", false},
};

TEST(TargetsPtx, EveryKernelAssemblesForEachArch) {
  for (const Expectation& k : kKernels) {
    auto target = compiler::create_ptx_target();
    std::vector<compiler::TargetImage> images = compile(*target, k.ir);
    bool have_ptxas = ptxas().has_value();
    ASSERT_EQ(images.size(), have_ptxas ? 4u : 2u) << k.symbol;
    int ptx_images = 0;
    for (const compiler::TargetImage& image : images) {
      EXPECT_EQ(image.kernels, std::vector<std::string>{k.symbol});
      if (image.target == format::Target::CUBIN) {
        ASSERT_GE(image.data.size(), 4u);
        EXPECT_EQ(std::memcmp(image.data.data(), "\x7f" "ELF", 4), 0) << "cubin is not ELF";
        continue;
      }
      ASSERT_EQ(image.target, format::Target::PTX);
      ++ptx_images;
      EXPECT_EQ(static_cast<char>(image.data.back()), '\0') << "PTX must be NUL-terminated";
      std::string ptx = image_text(image);
      EXPECT_NE(ptx.find(".target " + image.arch), std::string::npos) << ptx;
      std::string params = entry_params(ptx, k.symbol);
      ASSERT_FALSE(params.empty()) << "no .entry " << k.symbol << "\n" << ptx;
      EXPECT_EQ(count(params, ".param .u64"), static_cast<size_t>(k.buffers)) << params;
      EXPECT_EQ(count(params, ".param"), 3u + (k.ir == kSaxpyIR ? 1u : 0u)) << params;
      EXPECT_NE(ptx.find(k.maxntid), std::string::npos) << ptx;
      EXPECT_EQ(ptx.find(".extern"), std::string::npos) << "unresolved calls (libdevice?)\n" << ptx;
      EXPECT_EQ(ptx.find("call"), std::string::npos) << ptx;
      EXPECT_EQ(ptx.find(".shared") != std::string::npos, k.shared) << ptx;
      if (k.shared) EXPECT_NE(ptx.find("bar.sync"), std::string::npos) << ptx;
      assemble_with_ptxas(ptx, image.arch);
    }
    EXPECT_EQ(ptx_images, 2);
  }
}

TEST(TargetsPtx, SaxpyKeepsSeparateMultiplyAndAdd) {
  // One numeric behaviour on every target: a*x + y written as two ops stays two roundings
  // (mul.rn / add.rn, which ptxas may not fuse), like the CPU target.
  auto target = compiler::create_ptx_target();
  compiler::TargetOptions options;
  options.archs = {"sm_90"};
  std::vector<compiler::TargetImage> images = compile(*target, kSaxpyIR, options);
  ASSERT_FALSE(images.empty());
  std::string ptx = image_text(images[0]);
  EXPECT_NE(ptx.find("mul.rn.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f32"), std::string::npos) << ptx;
}

// A kernel's block shape is fixed (qv.block): block_dim reads become constants and thread_id along
// an axis of size 1 becomes 0 (compiler/ir/normalize.cpp), so loops over a block's subgroups get
// constant trip counts. The launch's %ntid and %tid.y are never read.
inline constexpr const char* kBlockShapeIR = R"mlir(
module {
  func.func @qv_k0_shape(%out: memref<?xi32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tx = gpu.thread_id x
    %ty = gpu.thread_id y
    %bx = gpu.block_dim x
    %by = gpu.block_dim y
    %bid = gpu.block_id x
    %threads = arith.muli %bx, %by : index
    %row = arith.muli %bid, %threads : index
    %i0 = arith.addi %row, %tx : index
    %i = arith.addi %i0, %ty : index
    %v = arith.index_cast %threads : index to i32
    memref.store %v, %out[%i] : memref<?xi32>
    return
  }
}
)mlir";

TEST(TargetsPtx, BlockShapeIsAConstant) {
  auto target = compiler::create_ptx_target();
  compiler::TargetOptions options;
  options.archs = {"sm_90"};
  std::vector<compiler::TargetImage> images = compile(*target, kBlockShapeIR, options);
  ASSERT_FALSE(images.empty());
  std::string ptx = image_text(images[0]);
  EXPECT_EQ(ptx.find("%ntid"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("%tid.y"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("%tid.x"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("st.global.u32"), std::string::npos) << ptx;
  EXPECT_TRUE(std::regex_search(ptx, std::regex("mov\\.(b|u)32\\s+%r[0-9]+, 64;"))) << "the block's 64 threads stored\n" << ptx;
  assemble_with_ptxas(ptx, "sm_90");
}

TEST(TargetsPtx, ArchListAndSm90a) {
  auto target = compiler::create_ptx_target();
  compiler::TargetOptions options;
  options.archs = {"sm_90a"};
  std::vector<compiler::TargetImage> images = compile(*target, kBlockSumIR, options);
  ASSERT_GE(images.size(), 1u);
  EXPECT_EQ(images[0].arch, "sm_90a");
  std::string ptx = image_text(images[0]);
  EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos) << ptx;
  assemble_with_ptxas(ptx, "sm_90a");
}

TEST(TargetsPtx, BadArchAndBadIRAreTargetErrors) {
  auto target = compiler::create_ptx_target();
  compiler::TargetOptions options;
  options.archs = {"gfx90a"};
  try {
    compile(*target, kSaxpyIR, options);
    FAIL() << "expected a TargetError";
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.target(), "ptx");
    EXPECT_NE(std::string(e.what()).find("gfx90a"), std::string::npos);
  }
  ParsedIR parsed = parse_ir(kSaxpyIR);
  parsed.kernels[0].name = "saxpy";
  parsed.kernels[0].block = {128, 1, 1};   // disagrees with qv.block
  try {
    target->compile(*parsed.module, parsed.kernels, {});
    FAIL() << "expected a TargetError";
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.kernel(), "saxpy");
  }
}

}  // namespace
}  // namespace quiver::test
