// The MSL target (SPIR-V -> SPIRV-Cross -> one Metal translation unit per kernel) and the MSL
// image format the Metal backend reads (runtime/backends/metal/msl_image.h). No Metal compiler
// exists here: the sources are checked for the ABI of docs/abi.md "MSL / metallib".
#include <gtest/gtest.h>

#include <regex>

#include "msl_image.h"
#include "targets_cpu_harness.h"
#include "targets_cpu_kernels.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_msl_target();
}

namespace quiver::test {
namespace {

// Kernel A keeps a tile in workgroup memory and adds into a float with an atomic; kernel B has
// no workgroup memory: its translation unit must not declare A's.
constexpr const char* kTwoKernelsIR = R"mlir(
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
  func.func @qv_k1_scale(%y: memref<?xf32>, %s: f32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %y[%tid] : memref<?xf32>
    %p = arith.mulf %v, %s : f32
    memref.store %p, %y[%tid] : memref<?xf32>
    return
  }
}
)mlir";

msl_image::Image compile_msl(const std::string& ir) {
  auto target = compiler::create_msl_target();
  std::vector<compiler::TargetImage> images = compile(*target, ir, with_debug_options());
  // No Apple tools here: exactly the MSL image.
  EXPECT_EQ(images.size(), 1u);
  msl_image::Image image;
  if (images.empty()) return image;
  EXPECT_EQ(images[0].target, format::Target::MSL);
  EXPECT_EQ(images[0].arch, "msl2.3");
  std::string error;
  EXPECT_TRUE(msl_image::parse(image_text(images[0]), image, error)) << error;
  return image;
}

TEST(TargetsMsl, EachKernelIsAUnitWithParameterIAtBufferI) {
  msl_image::Image image = compile_msl(kSaxpyIR);
  EXPECT_EQ(image.msl_major, 2u);
  EXPECT_EQ(image.msl_minor, 3u);
  ASSERT_EQ(image.kernels.size(), 1u);
  const msl_image::KernelSource& k = image.kernels[0];
  EXPECT_EQ(k.symbol, "qv_k0_saxpy");
  EXPECT_EQ(k.function, "qv_k0_saxpy");
  EXPECT_EQ(k.buffer_index, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_NE(k.source.find("kernel void qv_k0_saxpy("), std::string::npos) << k.source;
  for (int i = 0; i < 4; ++i)
    EXPECT_NE(k.source.find("[[buffer(" + std::to_string(i) + ")]]"), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("[[buffer(4)]]"), std::string::npos);
}

TEST(TargetsMsl, UnitsDeclareOnlyTheirOwnThreadgroupMemoryAndFloatAtomicsAreCasLoops) {
  msl_image::Image image = compile_msl(kTwoKernelsIR);
  ASSERT_EQ(image.kernels.size(), 2u);
  const std::string& a = image.kernels[0].source;
  const std::string& b = image.kernels[1].source;
  // A threadgroup variable declaration ("threadgroup spvUnsafeArray<float, 64> tile;"), not the
  // address-space overloads of SPIRV-Cross's helper templates.
  const std::regex declaration(R"(threadgroup [\w<>, ]+ \w+;)");
  EXPECT_TRUE(std::regex_search(a, declaration)) << a;
  EXPECT_NE(a.find("threadgroup_barrier"), std::string::npos) << a;
  EXPECT_FALSE(std::regex_search(b, declaration)) << b;
  // SPIRV-Cross 2021 would print GLSL's atomicAdd(); quiver's helper is a CAS loop on the bits.
  EXPECT_EQ(a.find("atomicAdd("), std::string::npos) << a;
  EXPECT_NE(a.find("qv_atomic_fadd(device float& target"), std::string::npos) << a;
  EXPECT_NE(a.find("= qv_atomic_fadd("), std::string::npos) << a;
  EXPECT_NE(a.find("atomic_compare_exchange_weak_explicit"), std::string::npos) << a;
  EXPECT_EQ(b.find("qv_atomic_fadd"), std::string::npos) << b;
  EXPECT_EQ(image.kernels[1].buffer_index, (std::vector<uint32_t>{0, 1, 2}));
}

// A parameter the body never uses has no resource in the MSL signature (SPIRV-Cross drops it);
// the image still records its index, and binding it at launch is harmless.
TEST(TargetsMsl, UnusedParametersAreAllowed) {
  const char* ir = R"mlir(
module {
  func.func @qv_k0_first(%x: memref<?xf32>, %unused: memref<?xf32>, %y: memref<?xf32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    memref.store %v, %y[%tid] : memref<?xf32>
    return
  }
}
)mlir";
  msl_image::Image image = compile_msl(ir);
  ASSERT_EQ(image.kernels.size(), 1u);
  const std::string& source = image.kernels[0].source;
  EXPECT_EQ(image.kernels[0].buffer_index, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_NE(source.find("[[buffer(0)]]"), std::string::npos) << source;
  EXPECT_NE(source.find("[[buffer(2)]]"), std::string::npos) << source;
  EXPECT_EQ(source.find("[[buffer(1)]]"), std::string::npos) << source;
}

TEST(TargetsMsl, WhatSpirvCannotExpressIsAnMslError) {
  auto target = compiler::create_msl_target();
  try {
    compile(*target, kMathF64IR);
    FAIL() << "double compiled to MSL";
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.target(), "msl");
    EXPECT_NE(std::string(e.what()).find("SPIR-V"), std::string::npos) << e.what();
  }
  compiler::TargetOptions options;
  options.archs = {"msl3.0"};
  try {
    compile(*target, kSaxpyIR, options);
    FAIL() << "accepted arch msl3.0";
  } catch (const compiler::TargetError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown arch 'msl3.0'"), std::string::npos) << e.what();
  }
}

TEST(MslImage, WriteThenParseGivesTheSameImage) {
  msl_image::Image image;
  image.msl_major = 2;
  image.msl_minor = 3;
  image.kernels.push_back({"qv_a", "qv_a", {0, 1}, "kernel void qv_a(device float* x [[buffer(0)]]) {}\n"});
  image.kernels.push_back({"qv_b", "qv_b0", {}, "// no parameters\nkernel void qv_b0() {}\n"});
  msl_image::Image back;
  std::string error;
  ASSERT_TRUE(msl_image::parse(msl_image::write(image), back, error)) << error;
  ASSERT_EQ(back.kernels.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.kernels[i].symbol, image.kernels[i].symbol);
    EXPECT_EQ(back.kernels[i].function, image.kernels[i].function);
    EXPECT_EQ(back.kernels[i].buffer_index, image.kernels[i].buffer_index);
    EXPECT_EQ(back.kernels[i].source, image.kernels[i].source);
  }
}

TEST(MslImage, MalformedImagesAreRefusedWithTheReason) {
  const std::string unit = "kernel void f(device float* x [[buffer(0)]]) {}\n";
  struct Case {
    std::string text;
    const char* reason;
  };
  const Case cases[] = {
      {"", "does not start with"},
      {"// something else\n", "does not start with"},
      {"// quiver MSL image v1 msl=1.2\n//@qv-kernel k function=f buffers=0\n" + unit, "bad MSL version"},
      {"// quiver MSL image v1 msl=2.3\n", "holds no kernel"},
      {"// quiver MSL image v1 msl=2.3\nkernel void f() {}\n", "before the first kernel marker"},
      {"// quiver MSL image v1 msl=2.3\n//@qv-kernel k function=f\n" + unit, "expected '<symbol>"},
      {"// quiver MSL image v1 msl=2.3\n//@qv-kernel 9k function=f buffers=0\n" + unit, "not an identifier"},
      {"// quiver MSL image v1 msl=2.3\n//@qv-kernel k function=f buffers=0,x\n" + unit, "is not a number"},
      {"// quiver MSL image v1 msl=2.3\n//@qv-kernel k function=f buffers=31\n" + unit, "below 31"},
      {"// quiver MSL image v1 msl=2.3\n//@qv-kernel k function=g buffers=0\n" + unit, "has no 'kernel void g('"},
      {"// quiver MSL image v1 msl=2.3\n//@qv-kernel k function=f buffers=0\n" + unit +
           "//@qv-kernel k function=f buffers=0\n" + unit,
       "appears twice"},
  };
  for (const Case& c : cases) {
    msl_image::Image image;
    std::string error;
    EXPECT_FALSE(msl_image::parse(c.text, image, error)) << c.text;
    EXPECT_NE(error.find(c.reason), std::string::npos) << "expected '" << c.reason << "', got '" << error << "'";
  }
}

}  // namespace
}  // namespace quiver::test
