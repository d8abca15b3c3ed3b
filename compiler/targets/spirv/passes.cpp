// The spirv target's passes (Passes.td).
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

namespace quiver::compiler::spirv_target {

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
    structure_control_flow(fn, kernel);
  });
}
void make_kernels_loops_top_tested(mlir::ModuleOp module) {
  for_each_kernel(module, make_loops_top_tested);
}
void exact_kernels_signed_remainder(mlir::ModuleOp module) {
  for_each_kernel(module, exact_signed_remainder);
}

}  // namespace

#define GEN_PASS_DECL
#define GEN_PASS_DEF_EXP2TOGLSLSTANDIN
#define GEN_PASS_DEF_STRUCTURECONTROLFLOW
#define GEN_PASS_DEF_TOPTESTEDLOOPS
#define GEN_PASS_DEF_EXACTSIGNEDREMAINDER
#define GEN_PASS_DEF_MARKRIGHTOPERANDS
#define GEN_PASS_DEF_ACCUMULATORMATHTOLANES
#define GEN_PASS_DEF_WRAPKERNELS
#define GEN_PASS_DEF_CONVERTKERNELS
#define GEN_PASS_DEF_ALIASSHAREDBINDINGS
#define GEN_PASS_DEF_READONLYBINDINGS
#define GEN_PASS_DEF_SPECIALIZEPARAMETERS
#define GEN_PASS_DEF_SUBGROUPBUILTINCAPABILITY
#define GEN_PASS_DEF_LISTINTERFACES
#define GEN_PASS_DEF_VULKANMEMORYMODEL
#include "targets/spirv/Passes.h.inc"

namespace {

using Exp2ToGlslStandInPass = ir::RewritePass<impl::Exp2ToGlslStandInBase, exp2_to_glsl_stand_in>;
using StructureControlFlowPass = ir::RewritePass<impl::StructureControlFlowBase, structure_kernels_control_flow>;
using TopTestedLoopsPass = ir::RewritePass<impl::TopTestedLoopsBase, make_kernels_loops_top_tested>;
using ExactSignedRemainderPass = ir::RewritePass<impl::ExactSignedRemainderBase, exact_kernels_signed_remainder>;
using MarkRightOperandsPass = ir::KernelListRewritePass<impl::MarkRightOperandsBase, mark_right_operands>;
using AccumulatorMathToLanesPass = ir::KernelListRewritePass<impl::AccumulatorMathToLanesBase, move_kernels_accumulator_math_to_lanes>;
using WrapKernelsPass = ir::KernelListRewritePass<impl::WrapKernelsBase, wrap_kernels>;
struct ConvertKernelsPass : ir::Rewriting<impl::ConvertKernelsBase<ConvertKernelsPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::ModuleOp m) { convert_kernels(m, ir::values(kernels), cooperative_matrix); });
  }
};
using AliasSharedBindingsPass = ir::RewritePass<impl::AliasSharedBindingsBase, mark_aliased_bindings>;
struct ReadOnlyBindingsPass : ir::Rewriting<impl::ReadOnlyBindingsBase<ReadOnlyBindingsPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::spirv::ModuleOp m) {
      mark_read_only_bindings(m, std::set<uint32_t>(bindings.begin(), bindings.end()));
    });
  }
};
struct SpecializeParametersPass : ir::Rewriting<impl::SpecializeParametersBase<SpecializeParametersPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::spirv::ModuleOp m) {
      if (kernel.empty()) throw std::runtime_error("qv-spirv-specialize-parameters needs kernel=<symbol>");
      specialize_parameters(m, kernel, std::vector<unsigned>(parameters.begin(), parameters.end()));
    });
  }
};
using SubgroupBuiltinCapabilityPass = ir::RewritePass<impl::SubgroupBuiltinCapabilityBase, require_subgroup_builtin_capability>;
using ListInterfacesPass = ir::RewritePass<impl::ListInterfacesBase, list_interfaces>;
using VulkanMemoryModelPass = ir::RewritePass<impl::VulkanMemoryModelBase, use_vulkan_memory_model>;

// The pipelines also name upstream's passes on a spirv.module.
void register_ir_and_upstream_spirv_passes() {
  ir::register_passes();
  mlir::spirv::registerSPIRVLowerABIAttributesPass();
  mlir::spirv::registerSPIRVUpdateVCEPass();
}

}  // namespace


}  // namespace quiver::compiler::spirv_target

namespace quiver::compiler {

void register_spirv_passes() {
  using namespace spirv_target;
  ir::register_once<register_ir_and_upstream_spirv_passes, Exp2ToGlslStandInPass, StructureControlFlowPass,
                    TopTestedLoopsPass, ExactSignedRemainderPass, MarkRightOperandsPass, AccumulatorMathToLanesPass,
                    WrapKernelsPass, ConvertKernelsPass, AliasSharedBindingsPass, ReadOnlyBindingsPass,
                    SpecializeParametersPass, SubgroupBuiltinCapabilityPass, ListInterfacesPass,
                    VulkanMemoryModelPass>();
}

}  // namespace quiver::compiler
