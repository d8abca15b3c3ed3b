// The HSACO target: neutral IR -> one AMDGPU code object per processor. Each image is read back
// with LLVM's own tools (llvm-readelf --notes for the metadata, llvm-objdump for the code) and
// checked against docs/abi.md "HSACO": ELF for the HSA OS ABI, kernel = manifest symbol, explicit
// arguments only (kernarg offsets computed here by hand), block, LDS and wave size.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <regex>

#include "hsaco_notes.h"
#include "targets/llvm_common/process.h"
#include "targets_cpu_harness.h"
#include "targets_cpu_kernels.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_hsaco_target();
}

namespace quiver::test {
namespace {

constexpr uint16_t kEmAmdgpu = 224;
constexpr uint8_t kElfOsAbiHsa = 64;

HsacoMeta metadata(const compiler::TargetImage& image) {
  std::optional<std::string> readelf = find_llvm_tool("llvm-readelf");
  if (!readelf) ADD_FAILURE() << "llvm-readelf (LLVM 19) is not installed";
  HsacoMeta meta;
  std::string error;
  EXPECT_TRUE(readelf && read_hsaco_metadata(*readelf, image.data, meta, error)) << image.arch << ": " << error;
  return meta;
}

std::string disassembly(const compiler::TargetImage& image) {
  std::optional<std::string> objdump = find_llvm_tool("llvm-objdump");
  if (!objdump) {
    ADD_FAILURE() << "llvm-objdump (LLVM 19) is not installed";
    return {};
  }
  compiler::llvm_common::ScratchDir dir;
  auto file = dir.path() / "k.hsaco";
  compiler::llvm_common::write_file(
      file, std::string_view(reinterpret_cast<const char*>(image.data.data()), image.data.size()));
  auto r = compiler::llvm_common::run_process({*objdump, "-d", "--mcpu=" + image.arch, file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

void expect_hsa_code_object(const compiler::TargetImage& image) {
  ASSERT_GE(image.data.size(), 64u);
  const auto* b = reinterpret_cast<const unsigned char*>(image.data.data());
  EXPECT_EQ(std::memcmp(b, "\x7f" "ELF", 4), 0) << image.arch;
  EXPECT_EQ(b[4], 2) << "ELFCLASS64";
  EXPECT_EQ(b[7], kElfOsAbiHsa) << image.arch;
  uint16_t type, machine;
  std::memcpy(&type, b + 16, 2);
  std::memcpy(&machine, b + 18, 2);
  EXPECT_EQ(type, 3) << "ET_DYN: a linked code object";
  EXPECT_EQ(machine, kEmAmdgpu) << image.arch;
}

// Compiles `ir` for `archs` (empty = the defaults) and checks every image's metadata against the
// manifest entries parse_ir derives, with the kernarg offsets `offsets` (per kernel).
std::vector<compiler::TargetImage> compile_and_check(const std::string& ir, std::vector<std::string> archs,
                                                     const std::vector<std::vector<uint32_t>>& offsets,
                                                     const std::vector<uint64_t>& kernarg_sizes) {
  ParsedIR parsed = parse_ir(ir);
  auto target = compiler::create_hsaco_target();
  compiler::TargetOptions options;
  options.archs = archs;
  std::vector<compiler::TargetImage> images = compile(*target, ir, with_debug_options(options));
  for (const compiler::TargetImage& image : images) {
    EXPECT_EQ(image.target, format::Target::HSACO);
    expect_hsa_code_object(image);
    HsacoMeta meta = metadata(image);
    EXPECT_EQ(meta.target, "amdgcn-amd-amdhsa--" + image.arch);
    EXPECT_EQ(meta.kernels.size(), parsed.kernels.size());
    for (size_t k = 0; k < parsed.kernels.size(); ++k) {
      const HsacoKernelMeta* km = nullptr;
      for (const HsacoKernelMeta& m : meta.kernels)
        if (m.name == parsed.kernels[k].symbol) km = &m;
      if (!km) {
        ADD_FAILURE() << parsed.kernels[k].symbol << " missing in " << image.arch;
        continue;
      }
      for (const std::string& p : compare_kernel_metadata(parsed.kernels[k], *km, offsets[k], kernarg_sizes[k],
                                                          expected_wave_size(image.arch)))
        ADD_FAILURE() << image.arch << ": " << p;
    }
  }
  return images;
}

TEST(TargetsHsaco, OneCodeObjectPerDefaultProcessor) {
  // saxpy(x, y, a, n): two pointers, then two 4-byte scalars.
  auto images = compile_and_check(kSaxpyIR, {}, {{0, 8, 16, 20}}, {24});
  std::vector<std::string> archs;
  for (const auto& image : images) {
    archs.push_back(image.arch);
    EXPECT_EQ(image.kernels, std::vector<std::string>{"qv_k0_saxpy"});
  }
  EXPECT_EQ(archs, (std::vector<std::string>{"gfx90a", "gfx942", "gfx1100", "gfx1151"}));
}

TEST(TargetsHsaco, SharedMemoryIsExactlyTheManifestsLdsSize) {
  // 64 floats at 0 and 3 ints at the next 64-byte boundary (256): 320 bytes.
  const char* ir = R"mlir(
module {
  func.func @qv_k0_two_tiles(%x: memref<?xf32>, %out: memref<?xi32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tile = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %count = memref.alloca() : memref<3xi32, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    memref.store %v, %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    %i = arith.fptosi %v : f32 to i32
    memref.store %i, %count[%c2] : memref<3xi32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %tile[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
    %k = memref.load %count[%c2] : memref<3xi32, #gpu.address_space<workgroup>>
    %wi = arith.fptosi %w : f32 to i32
    %s = arith.addi %wi, %k : i32
    memref.store %s, %out[%tid] : memref<?xi32>
    return
  }
}
)mlir";
  ParsedIR parsed = parse_ir(ir);
  ASSERT_EQ(parsed.kernels[0].shared_bytes, 320u);
  compile_and_check(ir, {"gfx90a", "gfx1100"}, {{0, 8}}, {16});
}

TEST(TargetsHsaco, MixedScalarsFollowTheirNaturalAlignment) {
  // out (8 bytes at 0), h: f16 at 8, flag: i32 at 12, big: i64 at 16, f: f32 at 24 -> 28 bytes.
  const char* ir = R"mlir(
module {
  func.func @qv_k0_mixed(%out: memref<?xf32>, %h: f16, %flag: i32, %big: i64, %f: f32)
      attributes {qv.kernel, qv.block = array<i32: 64, 2, 1>} {
    %tid = gpu.thread_id x
    %hf = arith.extf %h : f16 to f32
    %ff = arith.sitofp %flag : i32 to f32
    %bf = arith.sitofp %big : i64 to f32
    %s0 = arith.addf %hf, %ff : f32
    %s1 = arith.addf %s0, %bf : f32
    %s2 = arith.addf %s1, %f : f32
    memref.store %s2, %out[%tid] : memref<?xf32>
    return
  }
}
)mlir";
  compile_and_check(ir, {"gfx942"}, {{0, 8, 12, 16, 24}}, {28});
}

// Math lowered by quiver itself (exp, log, sqrt, erf, ...): the code object links with no
// undefined symbol, although there is no ROCm device library.
TEST(TargetsHsaco, MathNeedsNoDeviceLibrary) {
  const char* ir = R"mlir(
module {
  func.func @qv_k0_math(%x: memref<?xf32>, %out: memref<?xf32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    %e = math.exp %v : f32
    %l = math.log %e : f32
    %s = math.sqrt %l : f32
    %t = math.tanh %s : f32
    %r = math.erf %t : f32
    %f = math.floor %r : f32
    %a = math.absf %f : f32
    %m = math.fma %a, %v, %e : f32
    %p = math.powf %m, %v : f32
    memref.store %p, %out[%tid] : memref<?xf32>
    return
  }
}
)mlir";
  compile_and_check(ir, {"gfx942", "gfx1151"}, {{0, 8}}, {16});
}

TEST(TargetsHsaco, DoubleIsATargetError) {
  auto target = compiler::create_hsaco_target();
  try {
    compile(*target, kMathF64IR);
    FAIL() << "double compiled for hsaco";
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.target(), "hsaco");
    EXPECT_NE(std::string(e.what()).find("double is not supported by the hsaco target"), std::string::npos) << e.what();
  }
}

// One f32 subgroup sum: a butterfly of log2(wave) ds_bpermute shuffles, so the wave size the
// processor runs with (64 on gfx9, 32 on gfx11) is visible in the code.
TEST(TargetsHsaco, SubgroupReductionsSpanTheWholeWave) {
  const char* ir = R"mlir(
module {
  func.func @qv_k0_wave_sum(%x: memref<?xf32>, %out: memref<?xf32>, %sizes: memref<?xi32>)
      attributes {qv.kernel, qv.block = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    %s = gpu.subgroup_reduce add %v : (f32) -> f32
    memref.store %s, %out[%tid] : memref<?xf32>
    %size = gpu.subgroup_size : index
    %size32 = arith.index_cast %size : index to i32
    memref.store %size32, %sizes[%tid] : memref<?xi32>
    return
  }
}
)mlir";
  auto images = compile_and_check(ir, {"gfx90a", "gfx1100"}, {{0, 8, 16}}, {24});
  ASSERT_EQ(images.size(), 2u);
  std::string wave64 = disassembly(images[0]);
  std::string wave32 = disassembly(images[1]);
  EXPECT_EQ(count(wave64, "ds_bpermute_b32"), 6u) << wave64;
  EXPECT_EQ(count(wave32, "ds_bpermute_b32"), 5u) << wave32;
  // The subgroup size is a constant of the image: 64 and 32.
  EXPECT_NE(wave64.find(", 64"), std::string::npos);
  EXPECT_NE(wave32.find(", 32"), std::string::npos);
}

// grid_dim is the dispatch packet's grid_size (work-items, at byte 12 for x, 16 for y) divided by
// the block: no hidden kernel argument is needed for it.
TEST(TargetsHsaco, GridDimensionsComeFromTheDispatchPacket) {
  const char* ir = R"mlir(
module {
  func.func @qv_k0_grid(%out: memref<?xi32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 2, 1>} {
    %tid = gpu.thread_id x
    %gx = gpu.grid_dim x
    %gy = gpu.grid_dim y
    %by = gpu.block_dim y
    %a = arith.addi %gx, %gy : index
    %b = arith.addi %a, %by : index
    %v = arith.index_cast %b : index to i32
    memref.store %v, %out[%tid] : memref<?xi32>
    return
  }
}
)mlir";
  auto images = compile_and_check(ir, {"gfx90a"}, {{0}}, {8});
  ASSERT_EQ(images.size(), 1u);
  std::string code = disassembly(images[0]);
  // grid_size_x and _y read as one 8-byte scalar load at byte 12 of the packet, then divided by
  // the block's 64 and 2 (shifts by 6 and 1).
  EXPECT_TRUE(std::regex_search(code, std::regex(R"(s_load_dwordx2 s\[\d+:\d+\], s\[\d+:\d+\], 0xc)"))) << code;
  EXPECT_TRUE(std::regex_search(code, std::regex(R"(s_lshr_b32 s\d+, s\d+, 6)"))) << code;
  EXPECT_TRUE(std::regex_search(code, std::regex(R"(s_lshr_b32 s\d+, s\d+, 1)"))) << code;
}

TEST(TargetsHsaco, Dot4IsOneInstructionOnEveryDefaultProcessor) {
  const char* ir = R"mlir(
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
)mlir";
  for (const compiler::TargetImage& image : compile_and_check(ir, {}, {{0, 8}}, {16}))
    EXPECT_NE(disassembly(image).find("v_dot4"), std::string::npos) << image.arch;
}

TEST(TargetsHsaco, BadProcessorListsAreTargetErrors) {
  auto target = compiler::create_hsaco_target();
  struct Case {
    std::vector<std::string> archs;
    const char* message;
  };
  const Case cases[] = {
      {{"sm_90"}, "'sm_90' is not an AMD GPU processor name"},
      {{"gfx803"}, "'gfx803' is older than gfx9"},
      {{"gfx9999"}, "does not know the processor 'gfx9999'"},
      {{"gfx90a", "gfx90a"}, "arch 'gfx90a' is listed twice"},
  };
  for (const Case& c : cases) {
    compiler::TargetOptions options;
    options.archs = c.archs;
    try {
      compile(*target, kSaxpyIR, options);
      ADD_FAILURE() << "accepted " << c.archs[0];
    } catch (const compiler::TargetError& e) {
      EXPECT_EQ(e.target(), "hsaco");
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

// The checker itself must notice a disagreement (a test that cannot fail proves nothing).
TEST(TargetsHsaco, MetadataComparisonReportsEachMismatch) {
  ParsedIR parsed = parse_ir(kSaxpyIR);
  auto target = compiler::create_hsaco_target();
  compiler::TargetOptions options;
  options.archs = {"gfx90a"};
  auto images = compile(*target, kSaxpyIR, options);
  HsacoMeta meta = metadata(images[0]);
  ASSERT_EQ(meta.kernels.size(), 1u);
  const std::vector<uint32_t> offsets{0, 8, 16, 20};
  EXPECT_TRUE(compare_kernel_metadata(parsed.kernels[0], meta.kernels[0], offsets, 24, 64).empty());
  EXPECT_FALSE(compare_kernel_metadata(parsed.kernels[0], meta.kernels[0], offsets, 24, 32).empty()) << "wave size";
  EXPECT_FALSE(compare_kernel_metadata(parsed.kernels[0], meta.kernels[0], offsets, 280, 64).empty()) << "kernarg size";
  format::Kernel bigger = parsed.kernels[0];
  bigger.block = {128, 1, 1};
  EXPECT_FALSE(compare_kernel_metadata(bigger, meta.kernels[0], offsets, 24, 64).empty()) << "block";
  // Workgroup memory: the code object may use less than the manifest says (the backend drops what
  // no thread reads), never more.
  bigger = parsed.kernels[0];
  bigger.shared_bytes = 64;
  EXPECT_TRUE(compare_kernel_metadata(bigger, meta.kernels[0], offsets, 24, 64).empty()) << "LDS below the manifest";
  HsacoKernelMeta more_lds = meta.kernels[0];
  more_lds.group_segment_fixed_size = parsed.kernels[0].shared_bytes + 4;
  EXPECT_FALSE(compare_kernel_metadata(parsed.kernels[0], more_lds, offsets, 24, 64).empty()) << "LDS";
  HsacoKernelMeta hidden = meta.kernels[0];
  hidden.args.push_back({24, 4, "hidden_block_count_x", ""});
  EXPECT_FALSE(compare_kernel_metadata(parsed.kernels[0], hidden, offsets, 24, 64).empty()) << "hidden argument";
}

}  // namespace
}  // namespace quiver::test
