// The hsaco target's passes.
#include <mutex>

#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/hsaco/amdgpu_kernel.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler {

namespace {

struct Dot4ToSdot4Pass : ir::RewritePass<Dot4ToSdot4Pass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Dot4ToSdot4Pass)
  static constexpr llvm::StringLiteral kArgument = "qv-hsaco-dot4-to-sdot4";
  static constexpr llvm::StringLiteral kDescription = "qv.dot4_i8 as llvm.amdgcn.sdot4 (processors with dot4)";
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    RewritePass::getDependentDialects(registry);
    registry.insert<mlir::LLVM::LLVMDialect>();
  }
  void rewrite(mlir::ModuleOp module) { hsaco::lower_dot4_to_sdot4(module); }
};

}  // namespace

void register_hsaco_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm_common::register_passes();
    ir::register_pass<Dot4ToSdot4Pass>();
  });
}

}  // namespace quiver::compiler
