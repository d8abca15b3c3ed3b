// The WGSL target (compiler/targets/wgsl) on hand-written neutral IR: the image format and
// binding layout of docs/abi.md "WGSL", the lowering of what WGSL lacks (16-bit elements packed
// in u32 words with race-free stores, float atomics, subgroups with a portable fallback,
// dot4_i8), and the kernels it must refuse. Dawn validates and runs the WGSL of every kernel of
// the suite and the op library in tests/web.
#include <gtest/gtest.h>

#include "targets/target.h"
#include "targets_cpu_harness.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_wgsl_target();
}

namespace quiver::test {
namespace {

std::string compile_wgsl(const std::string& ir, compiler::TargetOptions options = {}) {
  auto target = compiler::create_wgsl_target();
  std::vector<compiler::TargetImage> images = compile(*target, ir, with_debug_options(options));
  EXPECT_EQ(images.size(), 1u);
  if (images.empty()) return {};
  EXPECT_EQ(images[0].target, format::Target::WGSL);
  EXPECT_EQ(images[0].arch, "webgpu");
  return image_text(images[0]);
}

// The TargetError message of compiling `ir`, or "" when it compiled.
std::string wgsl_error(const std::string& ir, compiler::TargetOptions options = {}) {
  auto target = compiler::create_wgsl_target();
  try {
    compile(*target, ir, options);
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.target(), "wgsl");
    return e.what();
  }
  return "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

constexpr const char* kSaxpyIR = R"mlir(
module {
  func.func @qv_k0_saxpy(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 256, 1, 1>} {
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %c256 = arith.constant 256 : index
    %base = arith.muli %bid, %c256 : index
    %i = arith.addi %base, %tid : index
    %i32 = arith.index_cast %i : index to i32
    %in = arith.cmpi ult, %i32, %n : i32
    scf.if %in {
      %xv = memref.load %x[%i] : memref<?xf32>
      %yv = memref.load %y[%i] : memref<?xf32>
      %p = arith.mulf %a, %xv : f32
      %s = arith.addf %p, %yv : f32
      memref.store %s, %y[%i] : memref<?xf32>
    }
    return
  }
}
)mlir";

TEST(TargetsWgsl, OneUnitPerKernelWithBufferIAtBindingIAndScalarsInOneUniform) {
  std::string text = compile_wgsl(kSaxpyIR);
  EXPECT_EQ(text.rfind("// quiver WGSL image v1\n", 0), 0u) << text;
  EXPECT_NE(text.find("//@qv-kernel qv_k0_saxpy entry=qv_k0_saxpy features=none bindings=0:"), std::string::npos) << text;
  EXPECT_NE(text.find(",1:read_write,4:uniform\n"), std::string::npos) << text;
  EXPECT_NE(text.find("@compute @workgroup_size(256, 1, 1)\nfn qv_k0_saxpy("), std::string::npos) << text;
  EXPECT_NE(text.find("@group(0) @binding(1) var<storage, read_write> qv_buf1: array<f32>;"), std::string::npos) << text;
  // Parameter 2 (a) and 3 (n) are members 0 and 1 of the uniform struct at binding 4.
  EXPECT_NE(text.find("  s2: f32,"), std::string::npos) << text;
  EXPECT_NE(text.find("  s3: u32,"), std::string::npos) << text;
  EXPECT_NE(text.find("@group(0) @binding(4) var<uniform> qv_scalars: QvScalars;"), std::string::npos) << text;
  EXPECT_EQ(text.find("enable "), std::string::npos) << text;
}

TEST(TargetsWgsl, HalfElementsArePackedAndStoredWithoutDisturbingNeighbours) {
  std::string text = compile_wgsl(R"mlir(
module {
  func.func @qv_k0_to_half(%x: memref<?xf32>, %h: memref<?xf16>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    %t = arith.truncf %v : f32 to f16
    memref.store %t, %h[%tid] : memref<?xf16>
    return
  }
}
)mlir");
  EXPECT_NE(text.find("var<storage, read_write> qv_buf1: array<atomic<u32>>;"), std::string::npos) << text;
  EXPECT_EQ(count(text, "atomicAnd(&qv_buf1["), 1u) << text;
  EXPECT_EQ(count(text, "atomicOr(&qv_buf1["), 1u) << text;
  EXPECT_EQ(text.find("f16"), std::string::npos) << "no f16 type may appear in the WGSL:\n" << text;
}

TEST(TargetsWgsl, WorkgroupMemoryBarriersAndFloatAtomics) {
  std::string text = compile_wgsl(R"mlir(
module {
  func.func @qv_k0_tile_sum(%x: memref<?xf32>, %sum: memref<?xf32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tile = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    memref.store %v, %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %tile[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
    %old = memref.atomic_rmw addf %w, %sum[%c0] : (f32, memref<?xf32>) -> f32
    return
  }
}
)mlir");
  EXPECT_NE(text.find("var<workgroup> qv_shared0: array<f32, 64>;"), std::string::npos) << text;
  EXPECT_NE(text.find("workgroupBarrier();"), std::string::npos) << text;
  EXPECT_NE(text.find("var<storage, read_write> qv_buf1: array<atomic<u32>>;"), std::string::npos) << text;
  EXPECT_NE(text.find("atomicCompareExchangeWeak(&qv_buf1["), std::string::npos) << text;
}

TEST(TargetsWgsl, SubgroupKernelsGetASubgroupUnitAndAPortableOne) {
  std::string text = compile_wgsl(R"mlir(
module {
  func.func @qv_k0_sg(%x: memref<?xf32>, %y: memref<?xf32>)
      attributes {qv.kernel, qv.block = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    %s = gpu.subgroup_reduce add %v : (f32) -> f32
    memref.store %s, %y[%tid] : memref<?xf32>
    return
  }
}
)mlir");
  size_t first = text.find("//@qv-kernel qv_k0_sg entry=qv_k0_sg features=subgroups ");
  size_t second = text.find("//@qv-kernel qv_k0_sg entry=qv_k0_sg features=none ");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  ASSERT_LT(first, second) << "the subgroup unit comes first (loaders take the first they can run)";
  std::string native = text.substr(first, second - first), portable = text.substr(second);
  EXPECT_NE(native.find("enable subgroups;"), std::string::npos) << native;
  EXPECT_NE(native.find("subgroupAdd("), std::string::npos) << native;
  EXPECT_EQ(portable.find("enable subgroups;"), std::string::npos) << portable;
  EXPECT_EQ(portable.find("subgroupAdd("), std::string::npos) << portable;
}

TEST(TargetsWgsl, Dot4I8IsDot4I8Packed) {
  std::string text = compile_wgsl(R"mlir(
module {
  func.func @qv_k0_dot(%a: memref<?xi32>, %out: memref<?xi32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %a[%tid] : memref<?xi32>
    %d = qv.dot4_i8 %v, %v, %v
    memref.store %d, %out[%tid] : memref<?xi32>
    return
  }
}
)mlir");
  EXPECT_NE(text.find("dot4I8Packed("), std::string::npos) << text;
}

TEST(TargetsWgsl, Int64IsAPairOfWordsWithHelpersAndTwoScalarMembers) {
  std::string text = compile_wgsl(R"mlir(
module {
  func.func @qv_k0_wide(%a: memref<?xi64>, %out: memref<?xi64>, %k: i64)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %a[%tid] : memref<?xi64>
    %p = arith.muli %v, %k : i64
    %q = arith.divsi %p, %v : i64
    %s = arith.shrsi %q, %k : i64
    memref.store %s, %out[%tid] : memref<?xi64>
    return
  }
}
)mlir");
  EXPECT_NE(text.find("array<vec2<u32>>"), std::string::npos) << text;
  EXPECT_NE(text.find("s2_lo: u32"), std::string::npos) << text;
  EXPECT_NE(text.find("s2_hi: u32"), std::string::npos) << text;
  for (const char* helper : {"fn qv_mul64(", "fn qv_mul32x32(", "fn qv_sdivrem64(", "fn qv_udivrem64(", "fn qv_shrs64("})
    EXPECT_NE(text.find(helper), std::string::npos) << helper << "\n" << text;
  EXPECT_EQ(text.find("fn qv_u64_to_f32("), std::string::npos) << "only the helpers the kernel uses";
}

TEST(TargetsWgsl, RefusesWhatWgslCannotExpressNamingKernelAndReason) {
  std::string i64 = wgsl_error(R"mlir(
module {
  func.func @qv_k0_wide(%out: memref<?xi64>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %c = arith.constant 1 : i64
    %tid = gpu.thread_id x
    %old = memref.atomic_rmw addi %c, %out[%tid] : (i64, memref<?xi64>) -> i64
    return
  }
}
)mlir");
  EXPECT_NE(i64.find("kernel 'qv_k0_wide'"), std::string::npos) << i64;
  EXPECT_NE(i64.find("atomics on 64-bit elements"), std::string::npos) << i64;
  std::string f64 = wgsl_error(R"mlir(
module {
  func.func @qv_k0_dbl(%out: memref<?xf64>, %v: f64)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    memref.store %v, %out[%tid] : memref<?xf64>
    return
  }
}
)mlir");
  EXPECT_NE(f64.find("kernel 'qv_k0_dbl'"), std::string::npos) << f64;
  EXPECT_NE(f64.find("double"), std::string::npos) << f64;
  compiler::TargetOptions arch;
  arch.archs = {"webgpu2"};
  EXPECT_NE(wgsl_error(kSaxpyIR, arch).find("unknown arch 'webgpu2'"), std::string::npos);
}

}  // namespace
}  // namespace quiver::test
