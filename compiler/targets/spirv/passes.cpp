// The spirv target's passes: on the neutral IR, the conversion of each kernel's gpu.module, and
// on each kernel's spirv.module until it is whole (the msl target runs them too, through the
// spirv target).
#include <set>

#include "ir/passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "targets/spirv/exp2_glsl.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "targets/spirv/matrix_coop.h"
#include "targets/spirv/matrix_coop_lanes.h"
#include "targets/spirv/lower.h"
#include "targets/spirv/prepare.h"
#include "targets/spirv/specialize.h"
#include "targets/spirv/top_tested_loops.h"

namespace quiver::compiler {

namespace {

// Runs `rewrite` on every kernel (func.func with qv.kernel and a body) of `module`.
template <typename Rewrite>
void for_each_kernel(mlir::ModuleOp module, Rewrite rewrite) {
  for (mlir::func::FuncOp fn : llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>()))
    if (fn->hasAttr("qv.kernel") && !fn.isExternal()) rewrite(fn);
}

void structure_kernels_control_flow(mlir::ModuleOp module) {
  for_each_kernel(module, [](mlir::func::FuncOp fn) {
    format::Kernel kernel;   // names the kernel in an error
    kernel.symbol = fn.getSymName().str();
    spirv_target::structure_control_flow(fn, kernel);
  });
}
void make_kernels_loops_top_tested(mlir::ModuleOp module) {
  for_each_kernel(module, spirv_target::make_loops_top_tested);
}
void exact_kernels_signed_remainder(mlir::ModuleOp module) {
  for_each_kernel(module, spirv_target::exact_signed_remainder);
}

constexpr ir::PassText kExp2ToGlslStandIn{"qv-spirv-exp2-to-glsl-stand-in",
                                          "f32 math.exp2 as spirv.GL.Exp, a stand-in retagged GLSL.std.450 Exp2 in the binary"};
constexpr ir::PassText kStructureControlFlow{
    "qv-spirv-structure-control-flow",
    "scf.index_switch as scf.if chains, single-block scf.execute_region inlined (in every kernel)"};
constexpr ir::PassText kTopTestedLoops{"qv-spirv-top-tested-loops",
                                       "lifted do-while scf.while loops of every kernel get their test at the top"};
constexpr ir::PassText kExactSignedRemainder{
    "qv-spirv-exact-signed-remainder",
    "arith.remsi(a, b) as a - (a / b) * b in every kernel (MLIR 19's Vulkan remsi is wrong for INT_MIN)"};
using Exp2ToGlslStandInPass = ir::FunctionPass<kExp2ToGlslStandIn, spirv_target::exp2_to_glsl_stand_in, mlir::ModuleOp,
                                               mlir::spirv::SPIRVDialect>;
using StructureControlFlowPass = ir::FunctionPass<kStructureControlFlow, structure_kernels_control_flow>;
using TopTestedLoopsPass = ir::FunctionPass<kTopTestedLoops, make_kernels_loops_top_tested>;
using ExactSignedRemainderPass = ir::FunctionPass<kExactSignedRemainder, exact_kernels_signed_remainder>;

constexpr ir::PassText kMarkRightOperands{
    "qv-spirv-mark-right-operands",
    "retypes the right operands of tile products in the named kernels to vector<16 x 16 x T>"};
struct MarkRightOperandsPass : ir::RewritePass<MarkRightOperandsPass, kMarkRightOperands> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MarkRightOperandsPass)
  MarkRightOperandsPass() = default;
  MarkRightOperandsPass(const MarkRightOperandsPass& other) : RewritePass(other) {}
  ListOption<std::string> kernels{*this, "kernels", llvm::cl::desc("kernels whose tiles become cooperative matrices")};
  void apply(mlir::ModuleOp module) {
    llvm::SmallVector<mlir::func::FuncOp> chosen;
    for (const std::string& name : kernels) {
      auto fn = module.lookupSymbol<mlir::func::FuncOp>(name);
      if (!fn) throw std::runtime_error("no kernel '" + name + "' in the module");
      chosen.push_back(fn);
    }
    spirv_target::mark_right_operands(chosen);
  }
};

constexpr ir::PassText kWrapKernels{
    "qv-spirv-wrap-kernels",
    "each named kernel as a gpu.func kernel in a gpu.module @qv_spirv_<symbol> of its own, with the entry "
    "point's LocalSize and each parameter's descriptor binding, workgroup allocas as allocs"};
using WrapKernelsPass = ir::KernelListPass<kWrapKernels, spirv_target::wrap_kernels, mlir::gpu::GPUDialect, mlir::spirv::SPIRVDialect>;

constexpr ir::PassText kAccumulatorMathToLanes{
    "qv-spirv-accumulator-math-to-lanes",
    "in the named kernels, accumulator math cooperative matrices lack (row statistics, to_matrix_a, exp2, max) on "
    "per-lane shares through a subgroup scratch; their subgroup size folds to 32"};
using AccumulatorMathToLanesPass = ir::KernelListPass<kAccumulatorMathToLanes, spirv_target::move_kernels_accumulator_math_to_lanes>;

constexpr ir::PassText kConvertKernels{
    "qv-spirv-convert-kernels",
    "each named kernel's gpu.module @qv_spirv_<symbol> converted to a spirv.module beside it (MLIR's conversions "
    "to the spirv dialect and quiver's subgroup, atomic, cooperative-matrix and integer-dot patterns)"};
struct ConvertKernelsPass : ir::RewritePass<ConvertKernelsPass, kConvertKernels> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertKernelsPass)
  ConvertKernelsPass() = default;
  ConvertKernelsPass(const ConvertKernelsPass& other) : RewritePass(other) {}
  ListOption<std::string> kernels{*this, "kernels", llvm::cl::desc("the kernels' symbols")};
  Option<bool> cooperative_matrix{*this, "cooperative-matrix",
                                  llvm::cl::desc("SPIR-V 1.6 with matrix tiles as cooperative matrices and "
                                                 "qv.dot4_i8 as OpSDot (the vulkan1.3_coopmat image)"),
                                  llvm::cl::init(false)};
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    RewritePass::getDependentDialects(registry);
    registry.insert<mlir::spirv::SPIRVDialect>();
  }
  void apply(mlir::ModuleOp module) {
    spirv_target::convert_kernels(module, llvm::SmallVector<std::string>(kernels.begin(), kernels.end()),
                                  cooperative_matrix);
  }
};

// The steps on one kernel's spirv.module after MLIR's conversion and spirv-lower-abi-attrs.
constexpr ir::PassText kAliasSharedBindings{
    "qv-spirv-alias-shared-bindings", "variables sharing a descriptor binding (a buffer and its word views) decorated Aliased"};
constexpr ir::PassText kSubgroupBuiltinCapability{
    "qv-spirv-subgroup-builtin-capability",
    "GroupNonUniform required where the module reads the subgroup lane or size builtins (after spirv-update-vce)"};
constexpr ir::PassText kListInterfaces{
    "qv-spirv-list-interfaces",
    "each entry point's interface lists every global variable its function uses; SPIR-V 1.4 at least"};
constexpr ir::PassText kVulkanMemoryModel{
    "qv-spirv-vulkan-memory-model", "a module using cooperative matrices takes the Vulkan memory model"};
using AliasSharedBindingsPass =
    ir::FunctionPass<kAliasSharedBindings, spirv_target::mark_aliased_bindings, mlir::spirv::ModuleOp>;
using SubgroupBuiltinCapabilityPass =
    ir::FunctionPass<kSubgroupBuiltinCapability, spirv_target::require_subgroup_builtin_capability, mlir::spirv::ModuleOp>;
using ListInterfacesPass = ir::FunctionPass<kListInterfaces, spirv_target::list_interfaces, mlir::spirv::ModuleOp>;
using VulkanMemoryModelPass =
    ir::FunctionPass<kVulkanMemoryModel, spirv_target::use_vulkan_memory_model, mlir::spirv::ModuleOp>;

// The steps on one kernel's spirv.module that take what the manifest says of its parameters
// (their access, QV_SPECIALIZE) as options.
constexpr ir::PassText kReadOnlyBindings{
    "qv-spirv-read-only-bindings",
    "the descriptor-set-0 variables at the named bindings decorated NonWritable (none where the kernel loads from "
    "a binding it may write)"};
struct ReadOnlyBindingsPass : ir::RewritePass<ReadOnlyBindingsPass, kReadOnlyBindings, mlir::spirv::ModuleOp> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReadOnlyBindingsPass)
  ReadOnlyBindingsPass() = default;
  ReadOnlyBindingsPass(const ReadOnlyBindingsPass& other) : RewritePass(other) {}
  ListOption<unsigned> bindings{*this, "bindings", llvm::cl::desc("the bindings of the parameters the kernel only reads")};
  void apply(mlir::spirv::ModuleOp module) {
    spirv_target::mark_read_only_bindings(module, std::set<uint32_t>(bindings.begin(), bindings.end()));
  }
};
constexpr ir::PassText kSpecializeParameters{
    "qv-spirv-specialize-parameters",
    "the loads of the named scalar parameters of a kernel as specialization constants with SpecId = the parameter's index"};
struct SpecializeParametersPass
    : ir::RewritePass<SpecializeParametersPass, kSpecializeParameters, mlir::spirv::ModuleOp> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SpecializeParametersPass)
  SpecializeParametersPass() = default;
  SpecializeParametersPass(const SpecializeParametersPass& other) : RewritePass(other) {}
  Option<std::string> kernel{*this, "kernel", llvm::cl::desc("the kernel's symbol (its bindings are <symbol>_arg_<i>)")};
  ListOption<unsigned> parameters{*this, "parameters", llvm::cl::desc("the QV_SPECIALIZE parameters' indices")};
  void apply(mlir::spirv::ModuleOp module) {
    if (kernel.empty()) throw std::runtime_error("qv-spirv-specialize-parameters needs kernel=<symbol>");
    spirv_target::specialize_parameters(module, kernel, std::vector<unsigned>(parameters.begin(), parameters.end()));
  }
};

// The pipelines also name upstream's passes on a spirv.module.
void register_ir_and_upstream_spirv_passes() {
  ir::register_passes();
  mlir::spirv::registerSPIRVLowerABIAttributesPass();
  mlir::spirv::registerSPIRVUpdateVCEPass();
}

}  // namespace

void register_spirv_passes() {
  ir::register_once<Exp2ToGlslStandInPass, MarkRightOperandsPass, AccumulatorMathToLanesPass, StructureControlFlowPass,
                    TopTestedLoopsPass, ExactSignedRemainderPass, WrapKernelsPass, ConvertKernelsPass,
                    AliasSharedBindingsPass, SubgroupBuiltinCapabilityPass, ListInterfacesPass, VulkanMemoryModelPass,
                    ReadOnlyBindingsPass, SpecializeParametersPass>(register_ir_and_upstream_spirv_passes);
}

}  // namespace quiver::compiler
