// The spirv target's cooperative-matrix image (compiler/targets/spirv/matrix_coop*.cpp): which
// kernels get cooperative matrices, which accumulator math moves to lane shares, and what the
// image then requires — read back from the SPIR-V words, independently of MLIR.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "targets_spirv_support.h"

namespace quiver::test {
namespace {

// An online-softmax step on one 16 x 16 band: S from memory, P = exp2(S - rowmax S),
// O = T(P) x V / rowsum P. `T` is the tiles' 16-bit type.
std::string softmax_ir(const std::string& t) {
  return R"(module {
  func.func @qv_k0_softmax(%s: memref<?xf32>, %v: memref<?xT>, %out: memref<?xf32>, %sgs: memref<?xi32>) attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %sg = gpu.subgroup_size : index
    %sg_i32 = arith.index_castui %sg : index to i32
    %tid = gpu.thread_id x
    %packed = memref.load %sgs[%tid] : memref<?xi32>
    %dot = qv.dot4_i8 %packed, %packed, %sg_i32
    memref.store %dot, %sgs[%tid] : memref<?xi32>
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c16_i32 = arith.constant 16 : i32
    %c32_i32 = arith.constant 32 : i32
    %zero = arith.constant dense<0.0> : vector<256xf32>
    %s0 = qv.matrix_load acc %s[%c0], %c32_i32 : memref<?xf32> -> vector<256xf32>
    %s1 = qv.matrix_load acc %s[%c16], %c32_i32 : memref<?xf32> -> vector<256xf32>
    %mx = arith.maxnumf %s0, %s1 : vector<256xf32>
    %m = qv.matrix_row_max %mx : vector<256xf32>
    %d = arith.subf %s0, %m : vector<256xf32>
    %p = math.exp2 %d : vector<256xf32>
    %l = qv.matrix_row_sum %p : vector<256xf32>
    %a = qv.matrix_to_a %p : vector<256xf32> -> vector<256xT>
    %b = qv.matrix_load b %v[%c0], %c16_i32 : memref<?xT> -> vector<256xT>
    %o = qv.matrix_mma %a, %b, %zero : vector<256xT>, vector<256xT>, vector<256xf32>
    %r = arith.divf %o, %l : vector<256xf32>
    qv.matrix_store %r, %out[%c0], %c16_i32 : vector<256xf32>, memref<?xf32>
    return
  }
})";
}

std::string with_type(std::string text, const std::string& t) {
  for (size_t at = text.find("xT"); at != std::string::npos; at = text.find("xT", at)) text.replace(at + 1, 1, t);
  return text;
}

format::Kernel softmax_manifest(format::ScalarType t, uint32_t threads) {
  using S = format::ScalarType;
  return manifest_entry("qv_k0_softmax",
                        {buffer_param("s", S::F32), buffer_param("v", t), buffer_param("out", S::F32),
                         buffer_param("sgs", S::I32)},
                        {threads, 1, 1});
}

CompiledSpirv compile_coop(const std::string& t, format::ScalarType type, uint32_t threads = 64) {
  compiler::TargetOptions options;
  options.archs = {"vulkan1.3_coopmat"};
  std::string ir = with_type(softmax_ir(t), t);
  const std::string block = "qv.block = array<i32: 64, 1, 1>";
  ir.replace(ir.find(block), block.size(), "qv.block = array<i32: " + std::to_string(threads) + ", 1, 1>");
  return compile_spirv_ir(ir, {softmax_manifest(type, threads)}, options);
}

// How often each opcode occurs in the module.
std::map<uint32_t, int> opcode_counts(const std::vector<uint32_t>& words) {
  std::map<uint32_t, int> counts;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16;
    ++counts[words[i] & 0xffff];
    if (count == 0) break;
    i += count;
  }
  return counts;
}

constexpr uint32_t kOpSDot = 4450, kOpControlBarrier = 224, kOpShuffleXor = 346, kOpCoopLoad = 4457, kOpCoopStore = 4458,
                   kOpCoopMulAdd = 4459;

constexpr uint32_t kBuiltInSubgroupSize = 36;

// Whether some OpDecorate gives an id the BuiltIn `builtin`.
bool decorates_builtin(const std::vector<uint32_t>& words, uint32_t builtin) {
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, opcode = words[i] & 0xffff;
    if (count == 0) break;
    if (opcode == 71 && count >= 4 && words[i + 2] == 11 && words[i + 3] == builtin) return true;   // OpDecorate BuiltIn
    i += count;
  }
  return false;
}

bool has_requirement(const compiler::TargetImage& image, const std::string& r) {
  return std::find(image.requirements.begin(), image.requirements.end(), r) != image.requirements.end();
}

TEST(SpirvCooperativeMatrix, RowStatisticsRunOnLaneSharesAndTheProductStaysCooperative) {
  CompiledSpirv out = compile_coop("f16", format::ScalarType::F16);
  EXPECT_EQ(out.image.arch, "vulkan1.3_coopmat");
  EXPECT_TRUE(has_requirement(out.image, "subgroup_size:32"));
  EXPECT_TRUE(has_requirement(out.image, "cooperative_matrix:16x16x16:f16*f16+f32:subgroup"));
  std::map<uint32_t, int> ops = opcode_counts(out.words);
  EXPECT_EQ(ops[kOpCoopMulAdd], 1);
  // Only where a value crosses between the forms: S is read straight into lane shares (every
  // user of it wants one), P goes to a left operand through the half scratch (one load), O
  // goes to a share for the division by l (one store); B is a cooperative load.
  EXPECT_EQ(ops[kOpCoopLoad], 2);
  EXPECT_EQ(ops[kOpCoopStore], 1);
  EXPECT_EQ(ops[kOpShuffleXor], 2);   // one exchange per row reduction
  EXPECT_EQ(ops[kOpControlBarrier], 4);   // two per trip through the scratch
  // qv::dot4_i8 is one OpSDot (and an addition) there, which needs the device's integer dot product.
  EXPECT_EQ(ops[kOpSDot], 1);
  EXPECT_TRUE(has_requirement(out.image, "feature:shaderIntegerDotProduct"));
  // The image requires 32-invocation subgroups, so the subgroup size is a constant in it.
  EXPECT_FALSE(decorates_builtin(out.words, kBuiltInSubgroupSize));
  SpirvModuleInfo info = reflect_spirv(out.words);
  EXPECT_EQ(info.version, 0x00010600u);
}

// bf16 tiles have no cooperative form on the devices this image targets: the kernel keeps the
// portable fallback, and a module with no other tiles gets no cooperative-matrix image at all.
TEST(SpirvCooperativeMatrix, Bf16TilesGetNoCooperativeImage) {
  try {
    compile_coop("bf16", format::ScalarType::BF16);
    ADD_FAILURE() << "a cooperative-matrix image was built for bf16 tiles";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("returned 0 images"), std::string::npos) << e.what();
  }
}

// Lane shares hold a 32nd of a tile per invocation: a block that ends in a partial subgroup keeps
// the portable fallback (and here, with no other kernel, there is no cooperative image).
TEST(SpirvCooperativeMatrix, BlocksOfPartialSubgroupsGetNoLaneShares) {
  EXPECT_NO_THROW(compile_coop("f16", format::ScalarType::F16, 96));
  try {
    compile_coop("f16", format::ScalarType::F16, 48);
    ADD_FAILURE() << "a cooperative-matrix image was built for a block of 48 threads";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("returned 0 images"), std::string::npos) << e.what();
  }
}

// Each kernel's image requires what that kernel needs: built together in the cooperative-matrix
// arch, the tile kernel's image requires its configuration, 32-invocation subgroups and the
// integer dot product; saxpy's image (no tiles) requires nothing and declares no
// cooperative-matrix capability, so a device without the extension still takes it.
TEST(SpirvCooperativeMatrix, RequirementsArePerKernel) {
  compiler::TargetOptions options;
  options.archs = {"vulkan1.3_coopmat"};
  TestKernel saxpy = saxpy_kernel();
  std::string ir = with_type(softmax_ir("f16"), "f16");
  ir.insert(ir.rfind('}'), saxpy.ir + "\n");
  std::vector<CompiledSpirv> images =
      compile_spirv_images(ir, {softmax_manifest(format::ScalarType::F16, 64), saxpy.manifest}, options);
  ASSERT_EQ(images.size(), 2u);
  EXPECT_EQ(images[0].image.kernels, std::vector<std::string>{"qv_k0_softmax"});
  EXPECT_EQ(images[1].image.kernels, std::vector<std::string>{saxpy.manifest.symbol});
  for (const CompiledSpirv& image : images) EXPECT_EQ(image.image.arch, "vulkan1.3_coopmat");
  EXPECT_TRUE(has_requirement(images[0].image, "cooperative_matrix:16x16x16:f16*f16+f32:subgroup"));
  EXPECT_TRUE(has_requirement(images[0].image, "subgroup_size:32"));
  EXPECT_TRUE(has_requirement(images[0].image, "feature:shaderIntegerDotProduct"));
  EXPECT_EQ(images[1].image.requirements, std::vector<std::string>{});
  constexpr uint32_t kCapabilityCooperativeMatrixKHR = 6022;
  const std::vector<uint32_t> tile_caps = reflect_spirv(images[0].words).capabilities;
  const std::vector<uint32_t> saxpy_caps = reflect_spirv(images[1].words).capabilities;
  EXPECT_TRUE(std::count(tile_caps.begin(), tile_caps.end(), kCapabilityCooperativeMatrixKHR));
  EXPECT_FALSE(std::count(saxpy_caps.begin(), saxpy_caps.end(), kCapabilityCooperativeMatrixKHR));
}

}  // namespace
}  // namespace quiver::test
