// HSACO target (AMD GPUs through HSA / HIP): neutral IR -> gpu.module/gpu.func -> ROCDL -> LLVM
// AMDGPU -> ELF object -> ld.lld -shared -> one code object per processor (docs/abi.md "HSACO").
//
// Processors are lowered in groups of equal wave size (64 on gfx9, 32 on gfx10+, set
// explicitly), which shapes the subgroup code, and equal dot4 support, each group from its own
// copy of the neutral IR. No ROCm device library is involved: lower_math leaves only ops with
// exact LLVM intrinsics (sqrt, fma, floor, ...), and the dimension queries that MLIR would lower
// to __ockl_* calls are replaced before (amdgpu_kernel.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "targets/hsaco/amdgpu_kernel.h"
#include "ir/passes.h"
#include "targets/llvm_common/llvm_common.h"
#include "targets/llvm_common/passes.h"
#include "targets/llvm_common/process.h"
#include "targets/target.h"

namespace quiver::compiler {

void register_hsaco_passes();   // passes.cpp

namespace {

using hsaco::AmdArch;
using llvm_common::ErrorContext;

constexpr const char* kTargetName = "hsaco";
constexpr const char* kTriple = "amdgcn-amd-amdhsa";
// CDNA 2 (MI200), CDNA 3 (MI300), RDNA 3 (Radeon 7900), RDNA 3.5 (Strix Halo).
const std::vector<std::string> kDefaultArchs = {"gfx90a", "gfx942", "gfx1100", "gfx1151"};

// Wave size and dot4 support of `arch`; TargetError when LLVM does not know it or it predates
// gfx9 (older processors need the queue pointer for address-space casts, which quiver's kernels
// are compiled without).
AmdArch arch_info(const std::string& arch, std::unique_ptr<llvm::TargetMachine>& machine, const ErrorContext& all) {
  int major = hsaco::gfx_major(arch);
  if (major < 0)
    throw TargetError(all.kernel, all.target, "'" + arch + "' is not an AMD GPU processor name (gfx90a, gfx1100, ...)");
  if (major < 9)
    throw TargetError(all.kernel, all.target, "'" + arch + "' is older than gfx9, which quiver's HSACO target needs");
  AmdArch info;
  info.name = arch;
  info.wave_size = major >= 10 ? 32 : 64;
  machine = llvm_common::create_target_machine(kTriple, arch, info.features(), all);
  const llvm::MCSubtargetInfo* subtarget = machine->getMCSubtargetInfo();
  info.has_dot4 = subtarget->checkFeatures("+dot1-insts") || subtarget->checkFeatures("+dot8-insts");
  return info;
}

std::filesystem::path find_lld(const ErrorContext& where) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("QUIVER_LLVM_BIN")) dirs.push_back(env);
  dirs.push_back(QUIVER_LLVM_BIN_DIR);
  dirs.push_back("/usr/lib/llvm-19/bin");
  std::optional<std::filesystem::path> lld = llvm_common::find_executable("ld.lld", dirs);
  if (!lld) lld = llvm_common::find_executable("ld.lld-19", dirs);
  if (!lld)
    throw TargetError(where.kernel, where.target,
                      "ld.lld not found (looked in $QUIVER_LLVM_BIN, " QUIVER_LLVM_BIN_DIR ", PATH)");
  return *lld;
}

// A code object is an ELF shared object: the loader (hsa_executable_load_agent_code_object)
// relocates it as one.
std::vector<std::byte> link_code_object(const std::filesystem::path& lld, const std::string& object,
                                        const std::string& arch, const ErrorContext& where,
                                        const TargetOptions& options) {
  llvm_common::ScratchDir dir;
  auto in = dir.path() / "kernels.o";
  auto out = dir.path() / "kernels.hsaco";
  llvm_common::write_file(in, object);
  llvm_common::ProcessResult r =
      llvm_common::run_process({lld.string(), "-shared", "--no-undefined", "-o", out.string(), in.string()});
  if (options.verbose && !r.output.empty()) fprintf(stderr, "%s", r.output.c_str());
  if (r.exit_code != 0) throw TargetError(where.kernel, where.target, "ld.lld for " + arch + " failed: " + r.output);
  return llvm_common::read_file(out);
}

class HsacoTarget final : public Target {
 public:
  std::string_view name() const override { return kTargetName; }
  std::vector<std::string> default_archs() const override { return kDefaultArchs; }

  std::vector<TargetImage> compile(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                   const TargetOptions& options) override {
    std::string all_names;
    std::vector<std::string> symbols;
    for (const format::Kernel& k : kernels) {
      all_names += (all_names.empty() ? "" : ", ") + k.name;
      symbols.push_back(k.symbol);
    }
    ErrorContext all{all_names, kTargetName};
    std::vector<std::string> archs = options.archs.empty() ? kDefaultArchs : options.archs;
    std::set<std::string> seen;
    for (const std::string& arch : archs)
      if (!seen.insert(arch).second) throw TargetError(all_names, kTargetName, "arch '" + arch + "' is listed twice");

    for (const format::Kernel& k : kernels)
      hsaco::reject_double(llvm_common::find_kernel(module, k.symbol, {k.name, kTargetName}), {k.name, kTargetName});

    mlir::MLIRContext& context = *module.getContext();
    llvm_common::prepare_context(context);
    register_hsaco_passes();
    mlir::DialectRegistry registry;
    registry.insert<mlir::ROCDL::ROCDLDialect>();
    mlir::registerROCDLDialectTranslation(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    std::filesystem::path lld = find_lld(all);

    // Processors that share wave size and dot4 support get the same MLIR lowering: it is done
    // once per such group and translated once; optimisation and code generation are per
    // processor.
    std::vector<std::unique_ptr<llvm::TargetMachine>> machines(archs.size());
    std::vector<AmdArch> infos;
    for (size_t i = 0; i < archs.size(); ++i) infos.push_back(arch_info(archs[i], machines[i], all));
    std::vector<TargetImage> images(archs.size());
    std::vector<bool> done(archs.size(), false);
    for (size_t first = 0; first < archs.size(); ++first) {
      if (done[first]) continue;
      const AmdArch& group = infos[first];
      mlir::OwningOpRef<mlir::ModuleOp> llvm_module = lower_to_llvm_dialect(module, kernels, group, options, all);
      llvm::LLVMContext llvm_context;
      std::unique_ptr<llvm::Module> base = llvm_common::translate(*llvm_module, llvm_context, all);
      hsaco::finish_llvm_module(*base, all);
      for (size_t i = first; i < archs.size(); ++i) {
        if (done[i] || infos[i].wave_size != group.wave_size || infos[i].has_dot4 != group.has_dot4) continue;
        done[i] = true;
        std::unique_ptr<llvm::Module> m = llvm::CloneModule(*base);
        llvm_common::optimize(*m, *machines[i], /*no_library_calls=*/true);
        llvm_common::keep_temp(options, "hsaco." + archs[i] + ".ll", llvm_common::print(*m));
        std::string object = llvm_common::emit(*m, *machines[i], llvm::CodeGenFileType::ObjectFile, all);
        images[i] = TargetImage{format::Target::HSACO, archs[i], link_code_object(lld, object, archs[i], all, options),
                                symbols};
        llvm_common::keep_temp(options, "kernels." + archs[i] + ".hsaco",
                               std::string_view(reinterpret_cast<const char*>(images[i].data.data()),
                                                images[i].data.size()));
      }
    }
    return images;
  }

  // The groups compile() lowers once each (equal wave size and dot4 support), in the order of
  // their first processor; one group when an arch is unknown or listed twice, for compile() to
  // report.
  std::vector<std::vector<std::string>> arch_groups(const mlir::ModuleOp&, std::span<const format::Kernel>,
                                                    const std::vector<std::string>& archs) const override {
    std::vector<std::vector<std::string>> groups;
    std::vector<AmdArch> group_infos;
    try {
      ErrorContext none{"", kTargetName};
      for (const std::string& arch : archs) {
        std::unique_ptr<llvm::TargetMachine> machine;
        AmdArch info = arch_info(arch, machine, none);
        size_t g = 0;
        while (g < groups.size() && !(group_infos[g].wave_size == info.wave_size && group_infos[g].has_dot4 == info.has_dot4))
          ++g;
        if (g == groups.size()) {
          groups.emplace_back();
          group_infos.push_back(info);
        }
        if (std::find(groups[g].begin(), groups[g].end(), arch) != groups[g].end()) return {archs};
        groups[g].push_back(arch);
      }
    } catch (const TargetError&) {
      return {archs};
    }
    return groups;
  }

 private:
  // One group's LLVM-dialect module (`arch` names the group's first processor), from a private copy of `module` (left untouched).
  static mlir::OwningOpRef<mlir::ModuleOp> lower_to_llvm_dialect(mlir::ModuleOp module,
                                                                 std::span<const format::Kernel> kernels,
                                                                 const AmdArch& arch,
                                                                 const TargetOptions& options,
                                                                 const ErrorContext& all) {
    mlir::OwningOpRef<mlir::ModuleOp> copy(module.clone());
    quiver::ir::LegalizeOptions legal;
    legal.bf16_as_bits = true;   // the same integer RNE conversion as SPIR-V and CPU, not LLVM's expansion
    legal.expand_dot4_i8 = !arch.has_dot4;
    llvm_common::run_passes(*copy,
                            quiver::ir::legalize_pipeline(legal) + (arch.has_dot4 ? ",qv-hsaco-dot4-to-sdot4" : "") +
                                ",qv-device-fence-to-llvm-fence{syncscope=agent},qv-lower-math",
                            all, options);
    // The IR agrees with the manifest (block, parameters, workgroup bytes) before the kernels
    // leave their func.func.
    llvm_common::run_passes(*copy,
                            "qv-hsaco-outline-kernels{wave-size=" + std::to_string(arch.wave_size) + " kernels=" +
                                llvm_common::checked_kernel_list(*copy, kernels, kTargetName) + "}",
                            all, options);

    // Vector ops are lowered after convert-gpu-to-rocdl, once no workgroup memref (whose
    // address space the vector lowering cannot map) is left.
    const std::string pipeline =
        "qv-math-to-llvm-intrinsics,convert-scf-to-cf,"
        "convert-gpu-to-rocdl{chipset=" + arch.name + " index-bitwidth=64 use-bare-ptr-memref-call-conv=1},"
        "convert-vector-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts";
    mlir::OwningOpRef<mlir::ModuleOp> llvm_module = mlir::ModuleOp::create(copy->getLoc());
    print_pipeline(options, kTargetName, "gpu.module", pipeline);
    for (size_t i = 0; i < kernels.size(); ++i) {
      ErrorContext where{kernels[i].name, kTargetName};
      auto gpu_module = copy->lookupSymbol<mlir::gpu::GPUModuleOp>(hsaco::kernel_module_name(kernels[i].symbol));
      llvm_common::run_pipeline(gpu_module, pipeline, where);
      llvm_common::move_kernel_module(gpu_module, *llvm_module);
    }
    llvm_common::run_passes(*llvm_module, "qv-align-workgroup-globals,qv-align-vector-accesses", all, options);
    llvm_common::keep_temp(options, "hsaco." + arch.name + ".llvm.mlir", llvm_common::print(*llvm_module));
    return llvm_module;
  }
};

}  // namespace

std::unique_ptr<Target> create_hsaco_target() { return std::make_unique<HsacoTarget>(); }

}  // namespace quiver::compiler
