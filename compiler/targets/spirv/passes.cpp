// The spirv target's passes on the neutral IR, before each kernel becomes a spirv.module
// (the msl target runs them too, through the spirv target).
#include <mutex>

#include "ir/passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "targets/spirv/exp2_glsl.h"
#include "targets/spirv/matrix_coop.h"
#include "targets/spirv/prepare.h"
#include "targets/spirv/top_tested_loops.h"

namespace quiver::compiler {

namespace {

// Runs `rewrite` on every kernel (func.func with qv.kernel and a body) of `module`.
template <typename Rewrite>
void for_each_kernel(mlir::ModuleOp module, Rewrite rewrite) {
  for (mlir::func::FuncOp fn : llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>()))
    if (fn->hasAttr("qv.kernel") && !fn.isExternal()) rewrite(fn);
}

struct Exp2ToGlslStandInPass : ir::RewritePass<Exp2ToGlslStandInPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Exp2ToGlslStandInPass)
  static constexpr llvm::StringLiteral kArgument = "qv-spirv-exp2-to-glsl-stand-in";
  static constexpr llvm::StringLiteral kDescription =
      "f32 math.exp2 as spirv.GL.Exp, a stand-in retagged GLSL.std.450 Exp2 in the binary";
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    RewritePass::getDependentDialects(registry);
    registry.insert<mlir::spirv::SPIRVDialect>();
  }
  void rewrite(mlir::ModuleOp module) { spirv_target::exp2_to_glsl_stand_in(module); }
};

struct MarkRightOperandsPass : ir::RewritePass<MarkRightOperandsPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MarkRightOperandsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-spirv-mark-right-operands";
  static constexpr llvm::StringLiteral kDescription =
      "retypes the right operands of tile products in the named kernels to vector<16 x 16 x T>";
  MarkRightOperandsPass() = default;
  MarkRightOperandsPass(const MarkRightOperandsPass& other) : RewritePass(other) {}
  ListOption<std::string> kernels{*this, "kernels", llvm::cl::desc("kernels whose tiles become cooperative matrices")};
  void rewrite(mlir::ModuleOp module) {
    llvm::SmallVector<mlir::func::FuncOp> chosen;
    for (const std::string& name : kernels) {
      auto fn = module.lookupSymbol<mlir::func::FuncOp>(name);
      if (!fn) throw std::runtime_error("no kernel '" + name + "' in the module");
      chosen.push_back(fn);
    }
    spirv_target::mark_right_operands(module, chosen);
  }
};

struct StructureControlFlowPass : ir::RewritePass<StructureControlFlowPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StructureControlFlowPass)
  static constexpr llvm::StringLiteral kArgument = "qv-spirv-structure-control-flow";
  static constexpr llvm::StringLiteral kDescription =
      "scf.index_switch as scf.if chains, single-block scf.execute_region inlined (in every kernel)";
  void rewrite(mlir::ModuleOp module) {
    for_each_kernel(module, [](mlir::func::FuncOp fn) {
      format::Kernel kernel;   // names the kernel in an error
      kernel.symbol = fn.getSymName().str();
      spirv_target::structure_control_flow(fn, kernel);
    });
  }
};

struct TopTestedLoopsPass : ir::RewritePass<TopTestedLoopsPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TopTestedLoopsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-spirv-top-tested-loops";
  static constexpr llvm::StringLiteral kDescription =
      "lifted do-while scf.while loops of every kernel get their test at the top";
  void rewrite(mlir::ModuleOp module) { for_each_kernel(module, spirv_target::make_loops_top_tested); }
};

struct ExactSignedRemainderPass : ir::RewritePass<ExactSignedRemainderPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExactSignedRemainderPass)
  static constexpr llvm::StringLiteral kArgument = "qv-spirv-exact-signed-remainder";
  static constexpr llvm::StringLiteral kDescription =
      "arith.remsi(a, b) as a - (a / b) * b in every kernel (MLIR 19's Vulkan remsi is wrong for INT_MIN)";
  void rewrite(mlir::ModuleOp module) { for_each_kernel(module, spirv_target::exact_signed_remainder); }
};

}  // namespace

void register_spirv_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::register_passes();
    ir::register_pass<Exp2ToGlslStandInPass>();
    ir::register_pass<MarkRightOperandsPass>();
    ir::register_pass<StructureControlFlowPass>();
    ir::register_pass<TopTestedLoopsPass>();
    ir::register_pass<ExactSignedRemainderPass>();
  });
}

}  // namespace quiver::compiler
