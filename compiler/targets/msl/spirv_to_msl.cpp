#include "targets/msl/spirv_to_msl.h"

#include <pthread.h>

#include <cstring>
#include <exception>
#include <stdexcept>

#include <spirv_msl.hpp>

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/BuiltinOps.h"
#include "targets/target.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_spirv_target_one_variable_per_binding();
}

namespace quiver::compiler::msl {
namespace {

constexpr const char* kTargetName = "msl";

constexpr uint32_t kHeaderWords = 5;

// SPIRV-Cross 2021 (Debian 12) prints OpAtomicFAddEXT as GLSL's atomicAdd(), which is no MSL
// function, and MSL has atomic floats only from 3.0. quiver prints a call of this helper
// instead: a compare-and-swap loop on the value's bits, in device or threadgroup memory.
// Header lines land before `using namespace metal`, hence the qualified names.
constexpr const char* kAtomicFaddHelper = R"(#include <metal_atomic>
static inline float qv_atomic_fadd(device float& target, float value) {
  device metal::atomic_uint* bits = (device metal::atomic_uint*)&target;
  uint expected = metal::atomic_load_explicit(bits, metal::memory_order_relaxed);
  while (!metal::atomic_compare_exchange_weak_explicit(bits, &expected, as_type<uint>(as_type<float>(expected) + value),
                                                      metal::memory_order_relaxed, metal::memory_order_relaxed)) {
  }
  return as_type<float>(expected);
}
static inline float qv_atomic_fadd(threadgroup float& target, float value) {
  threadgroup metal::atomic_uint* bits = (threadgroup metal::atomic_uint*)&target;
  uint expected = metal::atomic_load_explicit(bits, metal::memory_order_relaxed);
  while (!metal::atomic_compare_exchange_weak_explicit(bits, &expected, as_type<uint>(as_type<float>(expected) + value),
                                                      metal::memory_order_relaxed, metal::memory_order_relaxed)) {
  }
  return as_type<float>(expected);
})";

class QuiverCompilerMsl final : public spirv_cross::CompilerMSL {
 public:
  explicit QuiverCompilerMsl(std::vector<uint32_t> words) : CompilerMSL(std::move(words)) {}
  bool uses_float_atomics = false;

 protected:
  void emit_instruction(const spirv_cross::Instruction& instr) override {
    if (static_cast<spv::Op>(instr.op) == spv::OpAtomicFAddEXT) {
      // Operands: result type, result id, pointer, scope, semantics, value. The GLSL helper
      // keeps the call as a statement of its own (an atomic is never folded away).
      const uint32_t* ops = stream(instr);
      CompilerGLSL::emit_atomic_func_op(ops[0], ops[1], ops[2], ops[5], "qv_atomic_fadd");
      uses_float_atomics = true;
      return;
    }
    CompilerMSL::emit_instruction(instr);
  }
};

bool has_opcode(std::span<const uint32_t> words, uint32_t opcode) {
  for (size_t at = kHeaderWords; at < words.size();) {
    uint32_t count = words[at] >> 16;
    if ((words[at] & 0xffff) == opcode) return true;
    if (count == 0) return false;
    at += count;
  }
  return false;
}

}  // namespace

std::vector<std::vector<uint32_t>> spirv_per_kernel(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                                    bool verbose) {
  // The spirv target itself, on a copy of the module holding one kernel at a time: the same
  // lowering (and its future changes) as the SPIR-V image, one module per kernel.
  std::unique_ptr<Target> spirv = create_spirv_target_one_variable_per_binding();
  std::vector<std::vector<uint32_t>> out;
  for (const format::Kernel& kernel : kernels) {
    if (verbose) llvm::errs() << "msl: lowering " << kernel.symbol << " to SPIR-V\n";
    mlir::OwningOpRef<mlir::ModuleOp> single(module.clone());
    for (mlir::Operation& op : llvm::make_early_inc_range(single->getBody()->getOperations())) {
      auto name = op.getAttrOfType<mlir::StringAttr>("sym_name");
      // Other kernels go; intrinsic declarations (ir/intrinsics.h) stay.
      if (op.hasAttr("qv.kernel") && (!name || name.getValue() != kernel.symbol)) op.erase();
    }
    TargetOptions options;
    options.verbose = verbose;
    std::vector<TargetImage> images = spirv->compile(*single, std::span<const format::Kernel>(&kernel, 1), options);
    if (images.size() != 1 || images[0].data.size() % 4 != 0)
      throw TargetError(kernel.name, kTargetName, "the spirv target did not produce one SPIR-V module");
    std::vector<uint32_t> words(images[0].data.size() / 4);
    std::memcpy(words.data(), images[0].data.data(), images[0].data.size());
    out.push_back(std::move(words));
  }
  return out;
}

namespace {

msl_image::KernelSource translate_here(std::span<const uint32_t> words, const format::Kernel& kernel) {
  try {
    QuiverCompilerMsl compiler(std::vector<uint32_t>(words.begin(), words.end()));
    compiler.set_entry_point(kernel.symbol, spv::ExecutionModelGLCompute);
    spirv_cross::CompilerMSL::Options options = compiler.get_msl_options();
    options.platform = spirv_cross::CompilerMSL::Options::macOS;
    options.set_msl_version(kMslMajor, kMslMinor);
    compiler.set_msl_options(options);
    // docs/abi.md: descriptor (set 0, binding i) of the SPIR-V image = manifest parameter i =
    // [[buffer(i)]] in MSL, for buffers and scalars alike.
    for (uint32_t i = 0; i < kernel.params.size(); ++i) {
      spirv_cross::MSLResourceBinding binding;
      binding.stage = spv::ExecutionModelGLCompute;
      binding.desc_set = 0;
      binding.binding = i;
      binding.msl_buffer = i;
      compiler.add_msl_resource_binding(binding);
    }
    if (has_opcode(words, spv::OpAtomicFAddEXT)) compiler.add_header_line(kAtomicFaddHelper);

    msl_image::KernelSource out;
    out.symbol = kernel.symbol;
    out.source = compiler.compile();
    out.function = compiler.get_cleansed_entry_point_name(kernel.symbol, spv::ExecutionModelGLCompute);

    // Every resource must be one of the parameters, at the binding docs/abi.md gives it, and
    // must have been placed where we asked (not at an index SPIRV-Cross picked itself).
    // Only the resources the entry point uses: a parameter the kernel never touches keeps its
    // (unreferenced) SPIR-V variable, which SPIRV-Cross leaves out of the MSL signature.
    spirv_cross::ShaderResources resources = compiler.get_shader_resources(compiler.get_active_interface_variables());
    if (!resources.uniform_buffers.empty() || !resources.push_constant_buffers.empty() ||
        !resources.storage_images.empty() || !resources.sampled_images.empty())
      throw std::runtime_error("the SPIR-V entry point uses resources other than storage buffers");
    for (const spirv_cross::Resource& r : resources.storage_buffers) {
      uint32_t set = compiler.get_decoration(r.id, spv::DecorationDescriptorSet);
      uint32_t binding = compiler.get_decoration(r.id, spv::DecorationBinding);
      if (set != 0 || binding >= kernel.params.size())
        throw std::runtime_error("storage buffer '" + r.name + "' is at (set " + std::to_string(set) + ", binding " +
                                 std::to_string(binding) + "), which is no parameter of the kernel");
      if (!compiler.is_msl_resource_binding_used(spv::ExecutionModelGLCompute, 0, binding))
        throw std::runtime_error("SPIRV-Cross did not place binding " + std::to_string(binding) + " at [[buffer(" +
                                 std::to_string(binding) + ")]]");
    }
    for (uint32_t i = 0; i < kernel.params.size(); ++i) out.buffer_index.push_back(i);
    if (out.source.find("kernel void " + out.function + "(") == std::string::npos)
      throw std::runtime_error("the MSL has no 'kernel void " + out.function + "('");
    return out;
  } catch (const spirv_cross::CompilerError& e) {
    throw std::runtime_error(std::string("SPIRV-Cross: ") + e.what());
  }
}

// SPIRV-Cross emits nested control flow by recursion, a few frames per block: a kernel with
// many guarded matrix-fallback stores (docs/matrix.md; tests/kernels/matrix_tiles.cpp's
// matrix_softmax when it was built for MSL) overflowed an 8 MiB stack and crashed quiverc. The
// translation runs on a thread of its own with room for that.
constexpr size_t kTranslationStack = size_t(512) << 20;

struct Translation {
  std::span<const uint32_t> words;
  const format::Kernel* kernel;
  msl_image::KernelSource result;
  std::exception_ptr error;
};

void* translate_on_thread(void* arg) {
  auto* t = static_cast<Translation*>(arg);
  try {
    t->result = translate_here(t->words, *t->kernel);
  } catch (...) {
    t->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

msl_image::KernelSource translate_kernel(std::span<const uint32_t> words, const format::Kernel& kernel) {
  Translation t{words, &kernel, {}, {}};
  pthread_attr_t attr;
  pthread_t thread;
  bool started = false;
  if (pthread_attr_init(&attr) == 0) {   // only an initialised attribute object may be destroyed
    started = pthread_attr_setstacksize(&attr, kTranslationStack) == 0 &&
              pthread_create(&thread, &attr, translate_on_thread, &t) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) return translate_here(words, kernel);   // no thread to be had: the caller's stack
  pthread_join(thread, nullptr);
  if (t.error) std::rethrow_exception(t.error);
  return std::move(t.result);
}

}  // namespace quiver::compiler::msl
