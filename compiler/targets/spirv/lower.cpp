#include "targets/spirv/lower.h"

#include <map>
#include <set>

#include "targets/spirv/subgroup.h"
#include "targets/spirv/atomic.h"
#include "targets/spirv/integer_dot.h"
#include "targets/spirv/matrix_coop.h"
#include "targets/spirv/prepare.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/ControlFlowToSPIRV/ControlFlowToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/IndexToSPIRV/IndexToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/UBToSPIRV/UBToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/DialectConversion.h"

namespace quiver::compiler::spirv_target {
namespace {

// Collects the context's diagnostics (with their notes and locations) while alive, so a failed
// conversion can be reported as text inside a TargetError instead of being printed to stderr.
class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(mlir::MLIRContext* ctx)
      : handler_(ctx, [this](mlir::Diagnostic& diag) {
          append(diag);
          for (mlir::Diagnostic& note : diag.getNotes()) append(note);
          return mlir::success();
        }) {}
  std::string take(const std::string& fallback) {
    return text_.empty() ? fallback : std::move(text_);
  }

 private:
  void append(mlir::Diagnostic& diag) {
    if (!text_.empty()) text_ += "\n";
    std::string loc;
    llvm::raw_string_ostream os(loc);
    diag.getLocation().print(os);
    text_ += loc + ": " + diag.str();
  }
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

// gpu address spaces → storage classes; everything else (the default memory space of buffer
// parameters) follows MLIR's Vulkan mapping, which sends it to StorageBuffer.
std::optional<mlir::spirv::StorageClass> map_memory_space(mlir::Attribute space) {
  if (auto gpu_space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(space)) {
    switch (gpu_space.getValue()) {
      case mlir::gpu::AddressSpace::Workgroup: return mlir::spirv::StorageClass::Workgroup;
      case mlir::gpu::AddressSpace::Private: return mlir::spirv::StorageClass::Function;
      case mlir::gpu::AddressSpace::Global: return mlir::spirv::StorageClass::StorageBuffer;
    }
    return std::nullopt;
  }
  return mlir::spirv::mapMemorySpaceToVulkanStorageClass(space);
}

// Erases dead unrealized casts; any other non-SPIR-V op left is an op this target cannot lower.
bool only_spirv_remains(mlir::spirv::ModuleOp module, std::string& error) {
  bool erased = true;
  while (erased) {
    erased = false;
    llvm::SmallVector<mlir::Operation*> dead;
    module.walk([&](mlir::UnrealizedConversionCastOp cast) {
      if (cast->use_empty()) dead.push_back(cast);
    });
    for (mlir::Operation* op : dead) op->erase();
    erased = !dead.empty();
  }
  module.walk([&](mlir::Operation* op) {
    if (op == module.getOperation() || !error.empty()) return;
    if (op->getDialect() && op->getDialect()->getNamespace() == "spirv") return;
    std::string loc;
    llvm::raw_string_ostream os(loc);
    op->getLoc().print(os);
    error = loc + ": '" + op->getName().getStringRef().str() +
            "' cannot be lowered to SPIR-V (no conversion for it" +
            (op->getNumOperands() || op->getNumResults() ? " with these types" : "") + ")";
  });
  return error.empty();
}

}  // namespace

void mark_aliased_bindings(mlir::spirv::ModuleOp module) {
  std::map<std::pair<uint32_t, uint32_t>, llvm::SmallVector<mlir::spirv::GlobalVariableOp>> by_binding;
  module.walk([&](mlir::spirv::GlobalVariableOp var) {
    auto set = var.getDescriptorSet();
    auto binding = var.getBinding();
    if (set && binding) by_binding[{*set, *binding}].push_back(var);
  });
  for (auto& [key, vars] : by_binding)
    if (vars.size() > 1)
      for (mlir::spirv::GlobalVariableOp var : vars)
        var->setAttr(mlir::spirv::SPIRVDialect::getAttributeName(mlir::spirv::Decoration::Aliased),
                     mlir::UnitAttr::get(module.getContext()));
}

void mark_read_only_bindings(mlir::spirv::ModuleOp module, const std::set<uint32_t>& bindings) {
  // A kernel that also reads memory it writes keeps no decoration: NVIDIA's driver (580) then
  // returned a value stored by the same invocation as the memory's older one (Kernels.BitCast*:
  // a store to one output buffer, then a load of it).
  std::map<llvm::StringRef, uint32_t> binding_of;
  module.walk([&](mlir::spirv::GlobalVariableOp var) {
    if (auto binding = var.getBinding()) binding_of[var.getSymName()] = *binding;
  });
  bool reads_written = false;
  module.walk([&](mlir::spirv::LoadOp load) {
    mlir::Value ptr = load.getPtr();
    while (auto chain = ptr.getDefiningOp<mlir::spirv::AccessChainOp>()) ptr = chain.getBasePtr();
    auto address = ptr.getDefiningOp<mlir::spirv::AddressOfOp>();
    if (!address) return;
    auto it = binding_of.find(address.getVariable());
    if (it != binding_of.end() && !bindings.count(it->second)) reads_written = true;
  });
  if (reads_written) return;
  module.walk([&](mlir::spirv::GlobalVariableOp var) {
    auto set = var.getDescriptorSet();
    auto binding = var.getBinding();
    if (!set || *set != 0 || !binding || !bindings.count(*binding)) return;
    var->setAttr(mlir::spirv::SPIRVDialect::getAttributeName(mlir::spirv::Decoration::NonWritable),
                 mlir::UnitAttr::get(module.getContext()));
  });
}

mlir::spirv::TargetEnvAttr vulkan12_target_env(mlir::MLIRContext* ctx, bool cooperative_matrix) {
  using C = mlir::spirv::Capability;
  using E = mlir::spirv::Extension;
  llvm::SmallVector<C> caps = {
      C::Shader, C::Int8, C::Int16, C::Int64, C::Float16,
      C::StorageBuffer8BitAccess, C::StorageBuffer16BitAccess,
      C::UniformAndStorageBuffer8BitAccess, C::StorageUniform16,
      C::GroupNonUniform, C::GroupNonUniformArithmetic, C::GroupNonUniformShuffle,
      C::GroupNonUniformShuffleRelative,
      C::GroupNonUniformBallot, C::GroupNonUniformVote,
      C::AtomicFloat32AddEXT,   // qv::atomic_add on float (VK_EXT_shader_atomic_float)
  };
  llvm::SmallVector<E> exts = {E::SPV_KHR_storage_buffer_storage_class, E::SPV_KHR_8bit_storage,
                               E::SPV_KHR_16bit_storage, E::SPV_EXT_shader_atomic_float_add};
  if (cooperative_matrix) {
    caps.append({C::CooperativeMatrixKHR, C::VulkanMemoryModel, C::DotProduct, C::DotProductInput4x8BitPacked});
    exts.append({E::SPV_KHR_cooperative_matrix, E::SPV_KHR_vulkan_memory_model, E::SPV_KHR_integer_dot_product});
  }
  // MLIR's SPIR-V dialect makes the cooperative-matrix instructions SPIR-V 1.6 (Vulkan 1.3).
  auto version = cooperative_matrix ? mlir::spirv::Version::V_1_6 : mlir::spirv::Version::V_1_5;
  auto triple = mlir::spirv::VerCapExtAttr::get(version, caps, exts, ctx);
  return mlir::spirv::TargetEnvAttr::get(triple, mlir::spirv::getDefaultResourceLimits(ctx),
                                         mlir::spirv::ClientAPI::Vulkan);
}

namespace {

// The conversion of one kernel's gpu.module; on failure null and `error` set.
mlir::spirv::ModuleOp convert_kernel_module(mlir::gpu::GPUModuleOp gpu_module, std::string& error,
                                            bool cooperative_matrix) {
  mlir::MLIRContext* ctx = gpu_module.getContext();
  DiagnosticCollector diags(ctx);
  mlir::spirv::TargetEnvAttr env = vulkan12_target_env(ctx, cooperative_matrix);
  gpu_module->setAttr(mlir::spirv::getTargetEnvAttrName(), env);
  std::string spv_name = "__spv__" + gpu_module.getName().str();
  mlir::Operation* parent = gpu_module->getParentOp();

  mlir::spirv::MemorySpaceToStorageClassConverter storage_converter(map_memory_space);
  mlir::spirv::convertMemRefTypesAndAttrs(gpu_module, storage_converter);

  mlir::SPIRVConversionOptions options;
  options.use64bitIndex = false;   // indices are 32-bit: buffers are addressed by uint32 offsets
  mlir::SPIRVTypeConverter type_converter(env, options);
  mlir::ScfToSPIRVContext scf_context;
  mlir::RewritePatternSet patterns(ctx);
  mlir::populateGPUToSPIRVPatterns(type_converter, patterns);
  mlir::arith::populateArithToSPIRVPatterns(type_converter, patterns);
  mlir::populateMathToSPIRVPatterns(type_converter, patterns);
  mlir::populateMemRefToSPIRVPatterns(type_converter, patterns);
  mlir::populateFuncToSPIRVPatterns(type_converter, patterns);
  mlir::populateSCFToSPIRVPatterns(type_converter, scf_context, patterns);
  mlir::index::populateIndexToSPIRVPatterns(type_converter, patterns);
  mlir::ub::populateUBToSPIRVConversionPatterns(type_converter, patterns);
  mlir::cf::populateControlFlowToSPIRVPatterns(type_converter, patterns);
  mlir::populateVectorToSPIRVPatterns(type_converter, patterns);
  populate_subgroup_patterns(type_converter, patterns);
  populate_atomic_patterns(type_converter, patterns);
  if (cooperative_matrix) {
    populate_matrix_coop_patterns(type_converter, patterns);
    populate_integer_dot_patterns(type_converter, patterns);
  }
  std::unique_ptr<mlir::ConversionTarget> target = mlir::SPIRVConversionTarget::get(env);
  // Partial conversion, then a check that only SPIR-V remains: MLIR 19's scf.while lowering
  // leaves dead unrealized casts behind, which a full conversion would reject.
  if (mlir::failed(mlir::applyPartialConversion(gpu_module.getOperation(), *target,
                                                std::move(patterns)))) {
    error = diags.take("conversion to the SPIR-V dialect failed");
    return {};
  }

  mlir::spirv::ModuleOp spv_module;
  for (mlir::Region& region : parent->getRegions())
    region.walk([&](mlir::spirv::ModuleOp m) {
      if (m.getName() && *m.getName() == spv_name) spv_module = m;
    });
  if (!spv_module) {
    error = "conversion produced no spirv.module named " + spv_name;
    return {};
  }
  spv_module->setAttr(mlir::spirv::getTargetEnvAttrName(), env);
  if (!only_spirv_remains(spv_module, error)) return {};
  return spv_module;
}

}  // namespace

void convert_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols, bool cooperative_matrix) {
  for (const std::string& symbol : symbols) {
    auto gpu_module = module.lookupSymbol<mlir::gpu::GPUModuleOp>(kernel_module_name(symbol));
    if (!gpu_module) throw std::runtime_error("no gpu.module @" + kernel_module_name(symbol) + " in the module");
    std::string error;
    if (!convert_kernel_module(gpu_module, error, cooperative_matrix))
      throw std::runtime_error(symbol + ": " + error);
  }
}

namespace {

// The module's VCE triple, which spirv-update-vce deduces and the steps after it refine.
mlir::spirv::VerCapExtAttr deduced_vce(mlir::spirv::ModuleOp module, const char* pass) {
  std::optional<mlir::spirv::VerCapExtAttr> vce = module.getVceTriple();
  if (!vce) throw std::runtime_error(std::string(pass) + " needs the module's VCE triple: run spirv-update-vce before it");
  return *vce;
}

// The module's triple with at least `version`, and `capability` and `extension` where given.
void refine_vce(mlir::spirv::ModuleOp module, mlir::spirv::VerCapExtAttr vce, mlir::spirv::Version version,
                std::optional<mlir::spirv::Capability> capability,
                std::optional<mlir::spirv::Extension> extension = std::nullopt) {
  llvm::SmallVector<mlir::spirv::Capability> caps(vce.getCapabilities());
  llvm::SmallVector<mlir::spirv::Extension> exts(vce.getExtensions());
  if (capability && !llvm::is_contained(caps, *capability)) caps.push_back(*capability);
  if (extension && !llvm::is_contained(exts, *extension)) exts.push_back(*extension);
  module.setVceTripleAttr(
      mlir::spirv::VerCapExtAttr::get(std::max(vce.getVersion(), version), caps, exts, module.getContext()));
}

}  // namespace

void list_interfaces(mlir::spirv::ModuleOp module) {
  mlir::spirv::VerCapExtAttr vce = deduced_vce(module, "qv-spirv-list-interfaces");
  module.walk([&](mlir::spirv::EntryPointOp entry) {
    auto fn = module.lookupSymbol<mlir::spirv::FuncOp>(entry.getFnAttr().getValue());
    if (!fn) return;
    llvm::SetVector<mlir::Attribute> vars;
    for (mlir::Attribute a : entry.getInterface()) vars.insert(a);
    fn.walk([&](mlir::spirv::AddressOfOp addr) { vars.insert(addr.getVariableAttr()); });
    entry.setInterfaceAttr(mlir::ArrayAttr::get(module.getContext(), vars.getArrayRef()));
  });
  if (vce.getVersion() < mlir::spirv::Version::V_1_4) refine_vce(module, vce, mlir::spirv::Version::V_1_4, std::nullopt);
}

void use_vulkan_memory_model(mlir::spirv::ModuleOp module) {
  mlir::spirv::VerCapExtAttr vce = deduced_vce(module, "qv-spirv-vulkan-memory-model");
  if (!llvm::is_contained(vce.getCapabilities(), mlir::spirv::Capability::CooperativeMatrixKHR)) return;
  bool device_barrier = false;
  module.walk([&](mlir::spirv::MemoryBarrierOp op) {
    if (op.getMemoryScope() == mlir::spirv::Scope::Device) device_barrier = true;
  });
  if (device_barrier)
    throw std::runtime_error("qv::device_fence in a kernel on cooperative matrices is not supported: their module "
                             "takes the Vulkan memory model, whose device-scope barriers need a device feature "
                             "quiver's image choice does not check");
  module->setAttr("memory_model", mlir::spirv::MemoryModelAttr::get(module.getContext(), mlir::spirv::MemoryModel::Vulkan));
  refine_vce(module, vce, vce.getVersion(), mlir::spirv::Capability::VulkanMemoryModel,
             mlir::spirv::Extension::SPV_KHR_vulkan_memory_model);
}

void require_subgroup_builtin_capability(mlir::spirv::ModuleOp module) {
  mlir::spirv::VerCapExtAttr vce = deduced_vce(module, "qv-spirv-subgroup-builtin-capability");
  bool subgroup_builtin = false;
  module.walk([&](mlir::spirv::GlobalVariableOp var) {
    // The decoration lives in the "built_in" attribute (GlobalVariableOp::getBuiltin reads another).
    auto builtin = var->getAttrOfType<mlir::StringAttr>(
        mlir::spirv::SPIRVDialect::getAttributeName(mlir::spirv::Decoration::BuiltIn));
    if (builtin && (builtin.getValue() == "SubgroupLocalInvocationId" || builtin.getValue() == "SubgroupSize"))
      subgroup_builtin = true;
  });
  if (subgroup_builtin && !llvm::is_contained(vce.getCapabilities(), mlir::spirv::Capability::GroupNonUniform))
    refine_vce(module, vce, vce.getVersion(), mlir::spirv::Capability::GroupNonUniform);
}

bool serialize_module(mlir::spirv::ModuleOp module, std::vector<uint32_t>& words,
                      std::string& error) {
  DiagnosticCollector diags(module.getContext());
  llvm::SmallVector<uint32_t, 0> binary;
  mlir::spirv::SerializationOptions options;
  options.emitSymbolName = true;   // OpName helps spirv-val messages and debugging tools
  if (mlir::failed(mlir::spirv::serialize(module, binary, options))) {
    error = diags.take("SPIR-V serialization failed");
    return false;
  }
  words.assign(binary.begin(), binary.end());
  return true;
}

}  // namespace quiver::compiler::spirv_target
