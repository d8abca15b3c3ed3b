// PTX target: neutral IR -> gpu.module/gpu.func -> NVVM -> LLVM NVPTX -> PTX per arch, plus a
// cubin per arch when ptxas is available (docs/abi.md "PTX / cubin").
//
// Buffers: the entry takes one .u64 pointer per buffer (outline_kernels.h).
#include <algorithm>
#include <cstdio>
#include <regex>

#include "ir/layout.h"
#include "ir/math.h"
#include "ir/warpgroup.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "ir/passes.h"
#include "targets/llvm_common/llvm_common.h"
#include "targets/llvm_common/passes.h"
#include "targets/llvm_common/process.h"
#include "targets/ptx/launch_waits.h"
#include "targets/ptx/outline_kernels.h"
#include "targets/target.h"

namespace quiver::compiler {

void register_ptx_passes();   // passes.cpp

namespace {

using llvm_common::ErrorContext;

constexpr const char* kTargetName = "ptx";
// Each kernel's gpu.module, from the neutral IR to the LLVM dialect (NVVM).
constexpr const char* kKernelPipeline =
    "qv-ptx-subgroups-to-shuffles,qv-math-to-llvm-intrinsics,"
    "convert-scf-to-cf,convert-vector-to-llvm,convert-ub-to-llvm,"
    "convert-gpu-to-nvvm{index-bitwidth=64 use-bare-ptr-memref-call-conv=1},"
    "reconcile-unrealized-casts";


std::string ptx_features(const std::string& arch) {
  // PTX ISA 7.8 covers sm_80..sm_90 and is accepted by CUDA 12+/13 drivers and ptxas;
  // sm_90a needs 8.0.
  return arch.back() == 'a' ? "+ptx80" : "+ptx78";
}

class PtxTarget final : public Target {
 public:
  std::string_view name() const override { return kTargetName; }

  // sm_90a: wgmma (the H100's cubin); sm_80: every other NVIDIA GPU through PTX or its cubin.
  std::vector<std::string> default_archs() const override { return {"sm_80", "sm_90a"}; }

  // Warpgroup products are wgmma on sm_90a and the portable fallback on every other arch, so a
  // module that has them and archs of both kinds is lowered twice, once per kind.
  std::vector<TargetImage> compile(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                   const TargetOptions& options) override {
    std::vector<std::string> archs = options.archs.empty() ? default_archs() : options.archs;
    std::vector<std::string> wgmma, other;
    for (const std::string& arch : archs) (has_wgmma(arch) ? wgmma : other).push_back(arch);
    if (wgmma.empty() || other.empty() || !quiver::ir::uses_warpgroup_mma(module))
      return compile_archs(module, kernels, options, archs, !wgmma.empty());
    // The same split as arch_groups, for a caller that builds every arch in one call.
    mlir::OwningOpRef<mlir::ModuleOp> copy(module.clone());
    std::vector<TargetImage> images = compile_archs(*copy, kernels, options, other, false);
    for (TargetImage& image : compile_archs(module, kernels, options, wgmma, true)) images.push_back(std::move(image));
    return images;
  }

  // Kernels with warpgroup products are lowered once for the wgmma archs and once for the
  // others (see compile()): two groups, other archs first.
  std::vector<std::vector<std::string>> arch_groups(const mlir::ModuleOp& neutral, std::span<const format::Kernel> kernels,
                                                    const std::vector<std::string>& archs) const override {
    mlir::ModuleOp module = neutral;
    std::vector<std::string> wgmma, other;
    for (const std::string& arch : archs) (has_wgmma(arch) ? wgmma : other).push_back(arch);
    bool uses_wgmma = std::any_of(kernels.begin(), kernels.end(), [&](const format::Kernel& k) {
      mlir::Operation* func = module.lookupSymbol(k.symbol);
      return func && quiver::ir::uses_warpgroup_mma(func);
    });
    if (wgmma.empty() || other.empty() || !uses_wgmma) return {archs};
    return {other, wgmma};
  }

 private:
  // wgmma is in sm_90a only (not in sm_90, nor in later archs' PTX).
  static bool has_wgmma(const std::string& arch) { return arch == "sm_90a"; }

  std::vector<TargetImage> compile_archs(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                         const TargetOptions& options, const std::vector<std::string>& archs,
                                         bool wgmma) {
    std::string all_names;
    std::vector<std::string> symbols;
    for (const format::Kernel& k : kernels) {
      all_names += (all_names.empty() ? "" : ", ") + k.name;
      symbols.push_back(k.symbol);
    }
    ErrorContext all{all_names, kTargetName};
    static const std::regex arch_pattern("sm_[0-9]+a?");
    for (const std::string& arch : archs)
      if (!std::regex_match(arch, arch_pattern))
        throw TargetError(all_names, kTargetName, "'" + arch + "' is not an NVIDIA arch (sm_80, sm_90a, ...)");

    llvm_common::prepare_context(*module.getContext());
    register_ptx_passes();
    quiver::ir::LegalizeOptions legal;
    legal.expand_dot4_i8 = false;   // dp4a below
    legal.expand_matrix = false;    // mma.sync below
    legal.keep_async_copies = true; // cp.async below
    legal.keep_launch_waits = true; // griddepcontrol.wait below, per arch
    legal.keep_warpgroup_mma = wgmma;
    llvm_common::run_passes(module,
                            quiver::ir::legalize_pipeline(legal) +
                                ",qv-ptx-dot4-to-dp4a,qv-ptx-matrix-to-mma-sync" +
                                (wgmma ? ",qv-ptx-warpgroup-to-wgmma" : "") +
                                ",qv-ptx-async-copy-to-cp-async,qv-ptx-launch-waits,qv-ptx-device-fence,"
                                "qv-ptx-exp2-to-ex2-approx,qv-ptx-rcp-to-rcp-approx,qv-lower-math",
                            all, options);
    // The IR agrees with the manifest (block, parameters, workgroup bytes) before the kernels
    // leave their func.func.
    llvm_common::run_passes(
        module, "qv-ptx-outline-kernels{kernels=" + llvm_common::checked_kernel_list(module, kernels, kTargetName) + "}",
        all, options);

    // Lower each kernel in its own gpu.module so that an error names its kernel.
    mlir::OwningOpRef<mlir::ModuleOp> llvm_module = mlir::ModuleOp::create(module.getLoc());
    print_pipeline(options, kTargetName, "gpu.module", kKernelPipeline);
    for (size_t i = 0; i < kernels.size(); ++i) {
      ErrorContext where{kernels[i].name, kTargetName};
      auto gpu_module = module.lookupSymbol<mlir::gpu::GPUModuleOp>(ptx::kernel_module_name(kernels[i].symbol));
      llvm_common::run_pipeline(gpu_module, kKernelPipeline, where);
      llvm_common::move_kernel_module(gpu_module, *llvm_module);
    }
    llvm_common::run_passes(*llvm_module, "qv-ptx-share-dynamic-shared-memory", all, options);
    // Named after the first arch: each group of archs lowered on its own (arch_groups) has its own.
    llvm_common::keep_temp(options, "ptx." + archs.front() + ".llvm.mlir", llvm_common::print(*llvm_module));

    llvm_common::run_passes(*llvm_module, "qv-align-vector-accesses,qv-align-workgroup-globals", all, options);

    std::vector<std::string> cuda_dirs{"/usr/local/cuda/bin"};
    std::optional<std::filesystem::path> ptxas = llvm_common::find_executable("ptxas", {});
    if (!ptxas) ptxas = llvm_common::find_executable("ptxas", cuda_dirs);

    std::vector<TargetImage> images;
    for (const std::string& arch : archs) {
      // The waits differ per arch: each arch lowers a copy of the module.
      const bool overlap = ptx::has_launch_waits(arch);
      mlir::OwningOpRef<mlir::ModuleOp> arch_module = llvm_module->clone();
      const std::string waits = std::string("qv-ptx-place-launch-waits{overlap=") + (overlap ? "true" : "false") + "}";
      llvm_common::run_passes(*arch_module, waits, all, options);
      llvm::LLVMContext llvm_context;
      std::unique_ptr<llvm::Module> m = llvm_common::translate(*arch_module, llvm_context, all);
      auto machine = llvm_common::create_target_machine("nvptx64-nvidia-cuda", arch, ptx_features(arch), all);
      llvm_common::optimize(*m, *machine, /*no_library_calls=*/true);
      llvm_common::keep_temp(options, "ptx." + arch + ".ll", llvm_common::print(*m));
      std::string ptx = llvm_common::emit(*m, *machine, llvm::CodeGenFileType::AssemblyFile, all);
      llvm_common::keep_temp(options, "kernels." + arch + ".ptx", ptx);
      TargetImage image{format::Target::PTX, arch, {}, symbols};
      image.programmatic_launch = overlap;
      // NUL-terminated: cuModuleLoadData takes PTX as a C string.
      const auto* bytes = reinterpret_cast<const std::byte*>(ptx.c_str());
      image.data.assign(bytes, bytes + ptx.size() + 1);
      images.push_back(std::move(image));
      if (ptxas) {
        images.push_back(assemble(*ptxas, arch, ptx, kernels, symbols, options));
        images.back().programmatic_launch = overlap;
      }
    }
    return images;
  }

  static TargetImage assemble(const std::filesystem::path& ptxas, const std::string& arch,
                              const std::string& ptx, std::span<const format::Kernel> kernels,
                              const std::vector<std::string>& symbols, const TargetOptions& options) {
    llvm_common::ScratchDir dir;
    auto in = dir.path() / "kernels.ptx";
    auto out = dir.path() / "kernels.cubin";
    llvm_common::write_file(in, ptx);
    llvm_common::ProcessResult r = llvm_common::run_process(
        {ptxas.string(), "-arch=" + arch, "-O3", "-o", out.string(), in.string()});
    if (options.verbose && !r.output.empty()) fprintf(stderr, "%s", r.output.c_str());
    if (r.exit_code != 0) {
      // Name the kernel ptxas complains about when its message mentions one.
      std::string culprit;
      for (const format::Kernel& k : kernels)
        if (r.output.find(k.symbol) != std::string::npos) culprit = k.name;
      if (culprit.empty())
        for (const format::Kernel& k : kernels) culprit += (culprit.empty() ? "" : ", ") + k.name;
      throw TargetError(culprit, kTargetName, "ptxas -arch=" + arch + " failed: " + r.output);
    }
    TargetImage image{format::Target::CUBIN, arch, llvm_common::read_file(out), symbols};
    llvm_common::keep_temp(options, "kernels." + arch + ".cubin",
                           std::string_view(reinterpret_cast<const char*>(image.data.data()), image.data.size()));
    return image;
  }
};

}  // namespace

std::unique_ptr<Target> create_ptx_target() { return std::make_unique<PtxTarget>(); }

}  // namespace quiver::compiler
