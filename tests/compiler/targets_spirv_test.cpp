// The spirv target's output, checked structurally: spirv-val (the CLI, independent of the
// target's in-process validation), entry point names, LocalSize and descriptor bindings per
// docs/abi.md, read from the SPIR-V words; and its errors for kernels it cannot build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "targets_spirv_support.h"

namespace quiver::test {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("qv_spirv_test_" + std::to_string(rd()));
  fs::create_directories(dir);
  return dir;
}

// Runs the spirv-val CLI on `words`; returns its exit status and output.
std::pair<int, std::string> run_spirv_val(const std::vector<uint32_t>& words) {
  fs::path dir = temp_dir();
  fs::path spv = dir / "module.spv", log = dir / "val.txt";
  {
    std::ofstream out(spv, std::ios::binary);
    out.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4));
  }
  std::string cmd = std::string(QUIVER_SPIRV_VAL) + " --target-env vulkan1.2 " + spv.string() +
                    " > " + log.string() + " 2>&1";
  int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  return {status, text};
}

uint32_t element_bytes(const format::Param& p) {
  using T = format::ScalarType;
  uint32_t scalar = 4;
  switch (p.type) {
    case T::Bool: case T::I8: case T::U8: scalar = 1; break;
    case T::I16: case T::U16: case T::F16: case T::BF16: scalar = 2; break;
    case T::I32: case T::U32: case T::F32: scalar = 4; break;
    case T::I64: case T::U64: case T::F64: scalar = 8; break;
  }
  return scalar;   // qv::vec buffers are arrays of their element type on SPIR-V
}

void expect_entry_matches(const SpirvModuleInfo& info, const format::Kernel& kernel) {
  SCOPED_TRACE(kernel.symbol);
  const SpirvEntryPoint* entry = info.find(kernel.symbol);
  ASSERT_NE(entry, nullptr) << "no OpEntryPoint named " << kernel.symbol;
  EXPECT_EQ(entry->execution_model, 5u) << "not GLCompute";
  ASSERT_TRUE(entry->local_size.has_value()) << "no LocalSize execution mode";
  EXPECT_EQ(*entry->local_size, kernel.block);
  // Each parameter is reached through its own variable at binding i, or through word views of
  // its buffer (i32 / v2i32 / v4i32 arrays at the same binding, decorated Aliased, as are the
  // buffer's own variable when both are used), or both.
  std::vector<int> own(kernel.params.size(), 0), views(kernel.params.size(), 0);
  for (const SpirvBinding& b : entry->bindings) {
    SCOPED_TRACE("binding " + std::to_string(b.binding));
    ASSERT_LT(b.binding, kernel.params.size()) << "a resource at a binding that is no parameter";
    const format::Param& p = kernel.params[b.binding];
    EXPECT_EQ(b.set, 0u);
    EXPECT_EQ(b.storage_class, 12u) << "not StorageBuffer";
    EXPECT_TRUE(b.block_decorated);
    EXPECT_EQ(b.runtime_array, p.is_buffer);
    // docs/abi.md: buffers are tightly packed arrays of the element type (vec4 = 16 bytes).
    if (b.element == expected_element(p) && (!p.is_buffer || b.array_stride == element_bytes(p))) {
      ++own[b.binding];
      continue;
    }
    ++views[b.binding];
    EXPECT_TRUE(p.is_buffer) << "a word view of a scalar parameter";
    EXPECT_TRUE(b.aliased) << "a word view without the Aliased decoration";
    const uint32_t stride = b.element == "i32" ? 4 : b.element == "v2i32" ? 8 : b.element == "v4i32" ? 16 : 0;
    EXPECT_NE(stride, 0u) << "neither the parameter's type nor a word view: " << b.element;
    EXPECT_EQ(b.array_stride, stride);
  }
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i) + " " + kernel.params[i].name);
    EXPECT_LE(own[i], 1);
    EXPECT_GE(own[i] + views[i], 1) << "the parameter is not bound";
    if (own[i] && views[i]) EXPECT_TRUE(std::any_of(entry->bindings.begin(), entry->bindings.end(), [&](const SpirvBinding& b) {
      return b.binding == i && b.element == expected_element(kernel.params[i]) && b.aliased;
    })) << "the buffer's own variable is not decorated Aliased";
  }
}

TEST(SpirvTarget, EachKernelAloneIsValidWithManifestEntryPointAndBindings) {
  for (const TestKernel& kernel : all_test_kernels()) {
    SCOPED_TRACE(kernel.manifest.symbol);
    CompiledSpirv out = compile_spirv(kernel);
    EXPECT_EQ(out.image.target, format::Target::SPIRV);
    EXPECT_EQ(out.image.arch, "vulkan1.2");
    EXPECT_EQ(out.image.kernels, std::vector<std::string>{kernel.manifest.symbol});
    auto [status, text] = run_spirv_val(out.words);
    EXPECT_EQ(status, 0) << text;
    SpirvModuleInfo info = reflect_spirv(out.words);
    EXPECT_LE(info.version, 0x00010500u) << "Vulkan 1.2 accepts SPIR-V up to 1.5";
    EXPECT_EQ(info.entry_points.size(), 1u);
    expect_entry_matches(info, kernel.manifest);
  }
}

// The literal string operand starting at word `at` (SPIR-V: UTF-8, NUL-terminated, padded).
std::string literal_string(std::span<const uint32_t> words, size_t at, size_t end) {
  std::string s;
  for (size_t w = at; w < end; ++w)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((words[w] >> (8 * b)) & 0xff);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

// Several kernels built together give one image per kernel: read from the words alone (not the
// compiler's reflection), each module has exactly one OpEntryPoint, its own kernel's, one
// OpFunction, and no name of another kernel anywhere; each passes spirv-val.
TEST(SpirvTarget, SeveralKernelsGetAModuleEach) {
  constexpr uint32_t kOpName = 5, kOpEntryPoint = 15, kOpFunction = 54;
  std::vector<TestKernel> kernels = all_test_kernels();
  std::vector<CompiledSpirv> images = compile_spirv_each(kernels);
  ASSERT_EQ(images.size(), kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string& symbol = kernels[k].manifest.symbol;
    SCOPED_TRACE(symbol);
    const CompiledSpirv& out = images[k];
    EXPECT_EQ(out.image.kernels, std::vector<std::string>{symbol});
    EXPECT_EQ(out.image.arch, "vulkan1.2");
    auto [status, text] = run_spirv_val(out.words);
    EXPECT_EQ(status, 0) << text;
    ASSERT_GE(out.words.size(), 5u);
    EXPECT_EQ(out.words[0], 0x07230203u);
    std::vector<std::string> entry_points, names;
    size_t functions = 0;
    for (size_t at = 5; at < out.words.size();) {
      const uint32_t count = out.words[at] >> 16, opcode = out.words[at] & 0xffff;
      ASSERT_GT(count, 0u) << "word " << at;
      ASSERT_LE(at + count, out.words.size()) << "word " << at;
      if (opcode == kOpEntryPoint) entry_points.push_back(literal_string(out.words, at + 3, at + count));
      if (opcode == kOpName) names.push_back(literal_string(out.words, at + 2, at + count));
      if (opcode == kOpFunction) ++functions;
      at += count;
    }
    EXPECT_EQ(entry_points, std::vector<std::string>{symbol});
    EXPECT_EQ(functions, 1u);
    for (const TestKernel& other : kernels) {
      if (other.manifest.symbol == symbol) continue;
      for (const std::string& name : names) EXPECT_EQ(name.find(other.manifest.symbol), std::string::npos) << name;
    }
    expect_entry_matches(reflect_spirv(out.words), kernels[k].manifest);
  }
}

// Buffers of vec4 are read and written 16 bytes at a time through word views (docs/abi.md):
// the entry point uses v4i32 arrays at the buffers' bindings, decorated Aliased, and no longer
// the f32 arrays (every access is a whole vector). SpirvOnVulkan.Vec4BuffersAnd2DBlock runs it.
TEST(SpirvTarget, VectorBufferAccessesGoThroughWordViews) {
  TestKernel k = vec4_kernel();
  SpirvModuleInfo info = reflect_spirv(compile_spirv(k).words);
  const SpirvEntryPoint* entry = info.find(k.manifest.symbol);
  ASSERT_NE(entry, nullptr);
  for (uint32_t binding : {0u, 1u}) {
    SCOPED_TRACE("binding " + std::to_string(binding));
    size_t views = 0, own = 0;
    for (const SpirvBinding& b : entry->bindings) {
      if (b.binding != binding) continue;
      if (b.element == "v4i32" && b.array_stride == 16 && b.aliased) ++views;
      else ++own;
    }
    EXPECT_EQ(views, 1u);
    EXPECT_EQ(own, 0u);
  }
}

// A loop as the front end writes it (a test block, a body, a back edge) reaches SPIR-V with its
// test at the top (targets/spirv/top_tested_loops.h): the loop header (the block holding
// OpLoopMerge) compares and branches, and the body's arithmetic lies in another block. Also:
// `qv.specialize` parameters are specialization constants with SpecId = their index (docs/abi.md).
TEST(SpirvTarget, LoopsKeepTheirTestAtTheTopAndSpecializedParametersAreSpecConstants) {
  using T = format::ScalarType;
  TestKernel k{R"(
  func.func @loop_sum(%out: memref<?xf32>, %n: i32, %m: i32) attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>,
      qv.specialize = array<i32: 2>} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %f0 = arith.constant 0.0 : f32
    %step = arith.constant 1.5 : f32
    cf.br ^header(%c0, %f0 : i32, f32)
  ^header(%i: i32, %acc: f32):
    %more = arith.cmpi ult, %i, %n : i32
    cf.cond_br %more, ^body, ^exit
  ^body:
    %mf = arith.uitofp %m : i32 to f32
    %scaled = arith.mulf %step, %mf : f32
    %next = arith.addf %acc, %scaled : f32
    %i1 = arith.addi %i, %c1 : i32
    cf.br ^header(%i1, %next : i32, f32)
  ^exit:
    %z = arith.constant 0 : index
    memref.store %acc, %out[%z] : memref<?xf32>
    return
  })",
               manifest_entry("loop_sum", {buffer_param("out", T::F32), scalar_param("n", T::U32), scalar_param("m", T::U32)},
                              {64, 1, 1})};
  std::vector<uint32_t> w = compile_spirv(k).words;
  constexpr uint32_t kOpLabel = 248, kOpLoopMerge = 246, kOpFAdd = 129, kOpFMul = 133, kOpULessThan = 176,
                     kOpDecorate = 71, kOpSpecConstant = 50, kDecorationSpecId = 1;
  // Per block (from OpLabel to the next): its opcodes.
  std::vector<std::vector<uint32_t>> blocks;
  std::map<uint32_t, uint32_t> spec_id;   // id -> SpecId
  std::vector<uint32_t> spec_constants;
  for (size_t i = 5; i < w.size() && (w[i] >> 16) != 0; i += w[i] >> 16) {
    const uint32_t op = w[i] & 0xffffu;
    if (op == kOpLabel) blocks.emplace_back();
    if (!blocks.empty()) blocks.back().push_back(op);
    if (op == kOpDecorate && (w[i] >> 16) == 4 && w[i + 2] == kDecorationSpecId) spec_id[w[i + 1]] = w[i + 3];
    if (op == kOpSpecConstant) spec_constants.push_back(w[i + 2]);
  }
  auto has = [](const std::vector<uint32_t>& b, uint32_t op) { return std::find(b.begin(), b.end(), op) != b.end(); };
  size_t headers = 0;
  bool add_elsewhere = false;
  for (const auto& b : blocks) {
    if (has(b, kOpLoopMerge)) {
      ++headers;
      EXPECT_TRUE(has(b, kOpULessThan)) << "the loop header tests the condition";
      EXPECT_FALSE(has(b, kOpFAdd) || has(b, kOpFMul)) << "the body's arithmetic is in the loop header";
    } else if (has(b, kOpFAdd)) {
      add_elsewhere = true;
    }
  }
  EXPECT_EQ(headers, 1u);
  EXPECT_TRUE(add_elsewhere);
  ASSERT_EQ(spec_constants.size(), 1u) << "parameter m only";
  EXPECT_EQ(spec_id[spec_constants[0]], 2u);
}

// Capabilities follow use: a float-only kernel must not demand shaderInt64 or 8-bit storage.
TEST(SpirvTarget, CapabilitiesAreOnlyThoseTheKernelsUse) {
  constexpr uint32_t kInt64 = 11, kInt8 = 39, kStorageBuffer8BitAccess = 4448, kShader = 1;
  SpirvModuleInfo saxpy = reflect_spirv(compile_spirv(saxpy_kernel()).words);
  auto has = [](const SpirvModuleInfo& m, uint32_t cap) {
    return std::find(m.capabilities.begin(), m.capabilities.end(), cap) != m.capabilities.end();
  };
  EXPECT_TRUE(has(saxpy, kShader));
  EXPECT_FALSE(has(saxpy, kInt64));
  EXPECT_FALSE(has(saxpy, kInt8));
  SpirvModuleInfo ints = reflect_spirv(compile_spirv(ints_kernel()).words);
  EXPECT_TRUE(has(ints, kInt64));
  EXPECT_TRUE(has(ints, kInt8));
  EXPECT_TRUE(has(ints, kStorageBuffer8BitAccess));
}

TEST(SpirvTarget, KeepTempsWritesTheModule) {
  fs::path dir = temp_dir();
  TestKernel k = saxpy_kernel();
  compiler::TargetOptions options;
  options.keep_temps_dir = dir.string();
  CompiledSpirv out = compile_spirv_ir("module {" + k.ir + "}", {k.manifest}, options);
  std::ifstream in(dir / ("spirv.vulkan1.2." + k.manifest.symbol + ".spv"), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size(), out.image.data.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(),
                         reinterpret_cast<const char*>(out.image.data.data())));
  EXPECT_TRUE(fs::exists(dir / ("spirv.vulkan1.2." + k.manifest.symbol + ".mlir")));
  fs::remove_all(dir);
}

// Expects compiling `module_text` to throw a TargetError naming `kernel` whose message holds
// `needle`.
void expect_target_error(const std::string& module_text, const std::vector<format::Kernel>& kernels,
                         const std::string& kernel, const std::string& needle,
                         const compiler::TargetOptions& options = {}) {
  try {
    compile_spirv_ir(module_text, kernels, options);
    ADD_FAILURE() << "expected a TargetError containing '" << needle << "'";
  } catch (const compiler::TargetError& e) {
    EXPECT_EQ(e.target(), "spirv");
    EXPECT_NE(e.kernel().find(kernel), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const char* kDoubleKernel = R"(module {
  func.func @qv_k0_twice(%x: memref<?xf64>, %n: i32) attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf64>
    %w = arith.addf %v, %v : f64
    memref.store %w, %x[%tid] : memref<?xf64>
    return
  }
})";

format::Kernel double_manifest() {
  return manifest_entry("qv_k0_twice",
                        {buffer_param("x", format::ScalarType::F64),
                         scalar_param("n", format::ScalarType::I32)},
                        {64, 1, 1});
}

TEST(SpirvTargetErrors, DoubleIsRejectedNamingTheKernel) {
  expect_target_error(kDoubleKernel, {double_manifest()}, "qv_k0_twice", "double is not supported");
}

TEST(SpirvTargetErrors, DoubleInsideTheBodyIsRejected) {
  const char* ir = R"(module {
  func.func @qv_k0_widen(%x: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %x[%tid] : memref<?xf32>
    %d = arith.extf %v : f32 to f64
    %w = arith.truncf %d : f64 to f32
    memref.store %w, %x[%tid] : memref<?xf32>
    return
  }
})";
  expect_target_error(ir,
                      {manifest_entry("qv_k0_widen", {buffer_param("x", format::ScalarType::F32)},
                                      {64, 1, 1})},
                      "qv_k0_widen", "double is not supported");
}

// (bf16 is carried as its 16-bit pattern on SPIR-V since the kernel language's qv::bf16; the
// kernel suite's HalfBf16 tests run it on lavapipe.)

TEST(SpirvTargetErrors, ManifestAndIrMustAgree) {
  TestKernel k = saxpy_kernel();
  std::string module_text = "module {" + k.ir + "}";
  format::Kernel missing = k.manifest;
  missing.symbol = "qv_k9_absent";
  expect_target_error(module_text, {missing}, "qv_k9_absent", "no func.func named");

  format::Kernel short_params = k.manifest;
  short_params.params.pop_back();
  expect_target_error(module_text, {short_params}, "qv_k0_saxpy", "parameters");

  format::Kernel scalar_as_buffer = k.manifest;
  scalar_as_buffer.params[3].is_buffer = true;
  expect_target_error(module_text, {scalar_as_buffer}, "qv_k0_saxpy", "'a'");

  format::Kernel other_block = k.manifest;
  other_block.block = {128, 1, 1};
  expect_target_error(module_text, {other_block}, "qv_k0_saxpy", "qv.block");
}

TEST(SpirvTargetErrors, OversizedBlockAndUnknownArch) {
  const char* ir = R"(module {
  func.func @qv_k0_big(%x: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 2048, 1, 1>} {
    return
  }
})";
  expect_target_error(
      ir, {manifest_entry("qv_k0_big", {buffer_param("x", format::ScalarType::F32)}, {2048, 1, 1})},
      "qv_k0_big", "1024");
  TestKernel k = saxpy_kernel();
  compiler::TargetOptions options;
  options.archs = {"vulkan9"};
  expect_target_error("module {" + k.ir + "}", {k.manifest}, "qv_k0_saxpy", "vulkan9", options);
}

}  // namespace
}  // namespace quiver::test
