// CPU target: neutral IR -> per-thread function (gpu ids as arguments, workgroup memory inside
// qv_cpu_ctx::shared) -> LLVM dialect -> LLVM IR + exported entries (cpu_entry.cpp) -> O3 ->
// ELF object for the host (or the arch asked for) -> ld.lld -shared -> Target::CPU image.
//
// CPU baseline: x86-64-v2 (every x86-64 CPU since ~2009) / aarch64 generic; fma becomes a call
// of libm's fma/fmaf where the baseline lacks the instruction, so results stay identical to
// the GPU targets (glibc picks the hardware instruction when the CPU has it).
#include <cstdio>

#include "ir/passes.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/cpu/cpu_entry.h"
#include "targets/cpu/thread_function.h"
#include "targets/llvm_common/llvm_common.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler {

void register_cpu_passes();

namespace {

using llvm_common::ErrorContext;
using cpu::ThreadFunction;

constexpr const char* kTargetName = "cpu";
// Each kernel's per-thread function (a module of its own), to the LLVM dialect.
constexpr const char* kThreadPipeline =
    "convert-scf-to-cf,convert-vector-to-llvm,convert-math-to-llvm,"
    "convert-arith-to-llvm,finalize-memref-to-llvm,convert-ub-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,reconcile-unrealized-casts";

struct ArchInfo {
  std::string triple;
  std::string cpu;
};

// x86_64_v3 (AVX2, FMA) and x86_64_v4 (AVX-512) are the same code for wider vectors: the runtime
// loads the best one the CPU runs (docs/abi.md "CPU"), x86_64 being the fallback every set has.
ArchInfo arch_info(const std::string& arch, const ErrorContext& where) {
  if (arch == "x86_64") return {"x86_64-unknown-linux-gnu", "x86-64-v2"};
  if (arch == "x86_64_v3") return {"x86_64-unknown-linux-gnu", "x86-64-v3"};
  if (arch == "x86_64_v4") return {"x86_64-unknown-linux-gnu", "x86-64-v4"};
  if (arch == "aarch64") return {"aarch64-unknown-linux-gnu", "generic"};
  throw TargetError(where.kernel, where.target,
                    "unsupported CPU arch '" + arch + "' (x86_64, x86_64_v3, x86_64_v4, aarch64)");
}

std::vector<std::string> host_archs() {
  llvm::Triple host(llvm::sys::getProcessTriple());
  if (host.getArch() == llvm::Triple::aarch64) return {"aarch64"};
  return {"x86_64", "x86_64_v3", "x86_64_v4"};
}

// The IR of the thread function of `kernel` (made by qv-cpu-thread-functions) in a module of its
// own, lowered to the LLVM dialect; `info` from the manifest and the function's attributes.
mlir::OwningOpRef<mlir::ModuleOp> lower_thread_function(mlir::func::FuncOp func, const format::Kernel& kernel,
                                                        ThreadFunction& info, const ErrorContext& where,
                                                        const TargetOptions& options) {
  info.symbol = kernel.symbol;
  info.thread_name = cpu::thread_function_name(kernel.symbol);
  info.block = kernel.block;
  for (const format::Param& p : kernel.params) info.param_is_buffer.push_back(p.is_buffer);
  info.shared_bytes = kernel.shared_bytes;
  info.uses_barrier = kernel.uses_barrier;
  info.block_loops = func->hasAttr(cpu::kBlockLoopsAttr);
  if (auto kept = func->getAttrOfType<mlir::StringAttr>(cpu::kKeptAttr); kept && options.verbose)
    fprintf(stderr, "quiverc: cpu: %s keeps %s\n", kernel.name.c_str(), kept.str().c_str());
  for (const char* attr : {cpu::kBlockLoopsAttr, cpu::kKeptAttr}) func->removeAttr(attr);

  mlir::Location loc = func.getLoc();
  mlir::OwningOpRef<mlir::ModuleOp> sub = mlir::ModuleOp::create(loc);
  func->moveBefore(sub->getBody(), sub->getBody()->end());
  llvm_common::verify(*sub, where);
  llvm_common::keep_temp(options, "cpu." + kernel.symbol + ".thread.mlir", llvm_common::print(*sub));
  llvm_common::run_pipeline(*sub, kThreadPipeline, where);
  llvm_common::keep_temp(options, "cpu." + kernel.symbol + ".llvm.mlir", llvm_common::print(*sub));
  return sub;
}

class CpuTarget final : public Target {
 public:
  std::string_view name() const override { return kTargetName; }

  std::vector<TargetImage> compile(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                   const TargetOptions& options) override {
    std::string all_names;
    std::vector<std::string> symbols;
    for (const format::Kernel& k : kernels) {
      all_names += (all_names.empty() ? "" : ", ") + k.name;
      symbols.push_back(k.symbol);
    }
    ErrorContext all{all_names, kTargetName};
    std::vector<std::string> archs = options.archs;
    if (archs.empty()) archs = host_archs();
    for (const std::string& arch : archs) arch_info(arch, all);

    llvm_common::prepare_context(*module.getContext());
    register_cpu_passes();
    // No compiler-rt at the x86-64-v2 baseline: 16-bit float conversions as integer arithmetic.
    quiver::ir::LegalizeOptions legal;
    legal.f16_as_bits = legal.bf16_as_bits = true;
    llvm_common::run_passes(module,
                            quiver::ir::legalize_pipeline(legal) + ",qv-device-fence-to-llvm-fence,qv-lower-math", all,
                            options);
    // The IR agrees with the manifest (block, parameters, workgroup bytes, barriers) before the
    // kernels become thread functions.
    const std::string kernel_list = llvm_common::checked_kernel_list(module, kernels, kTargetName);
    for (const format::Kernel& kernel : kernels) {
      bool has_barrier = false;
      llvm_common::find_kernel(module, kernel.symbol, {kernel.name, kTargetName}).walk([&](mlir::gpu::BarrierOp) {
        has_barrier = true;
      });
      if (has_barrier && !kernel.uses_barrier)
        throw TargetError(kernel.name, kTargetName, "uses gpu.barrier but the manifest says uses_barrier = false");
    }
    llvm_common::run_passes(module, "qv-cpu-thread-functions{kernels=" + kernel_list + "}", all, options);
    print_pipeline(options, kTargetName, "builtin.module", kThreadPipeline);

    mlir::OwningOpRef<mlir::ModuleOp> llvm_module = mlir::ModuleOp::create(module.getLoc());
    std::vector<ThreadFunction> threads(kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) {
      ErrorContext where{kernels[i].name, kTargetName};
      auto func = module.lookupSymbol<mlir::func::FuncOp>(cpu::thread_function_name(kernels[i].symbol));
      mlir::OwningOpRef<mlir::ModuleOp> sub = lower_thread_function(func, kernels[i], threads[i], where, options);
      llvm_module->getBody()->getOperations().splice(llvm_module->getBody()->end(),
                                                     sub->getBody()->getOperations());
    }
    llvm_common::keep_temp(options, "cpu.llvm.mlir", llvm_common::print(*llvm_module));
    llvm::LLVMContext llvm_context;
    llvm_common::run_passes(*llvm_module, "qv-align-vector-accesses", all, options);
    std::unique_ptr<llvm::Module> base = llvm_common::translate(*llvm_module, llvm_context, all);

    std::vector<TargetImage> images;
    for (const std::string& arch : archs) {
      ArchInfo info = arch_info(arch, all);
      std::unique_ptr<llvm::Module> m = llvm::CloneModule(*base);
      auto machine = llvm_common::create_target_machine(info.triple, info.cpu, "", all);
      m->setDataLayout(machine->createDataLayout());
      for (size_t i = 0; i < kernels.size(); ++i)
        cpu::add_entry(*m, threads[i], {kernels[i].name, kTargetName});
      cpu::add_abi_version(*m);
      cpu::expand_float_atomics(*m);
      llvm_common::optimize(*m, *machine, /*no_library_calls=*/true);
      llvm_common::keep_temp(options, "cpu." + arch + ".ll", llvm_common::print(*m));
      std::string object = llvm_common::emit(*m, *machine, llvm::CodeGenFileType::ObjectFile, all);
      cpu::check_undefined_symbols(object, all);
      TargetImage image{format::Target::CPU, arch, cpu::link_shared_object(object, arch, all, options), symbols};
      llvm_common::keep_temp(options, "kernels." + arch + ".so",
                             std::string_view(reinterpret_cast<const char*>(image.data.data()), image.data.size()));
      images.push_back(std::move(image));
    }
    return images;
  }
};

}  // namespace

std::unique_ptr<Target> create_cpu_target() { return std::make_unique<CpuTarget>(); }

}  // namespace quiver::compiler
