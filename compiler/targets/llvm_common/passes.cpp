// The passes of the LLVM-based targets (ptx, hsaco, cpu) on their LLVM-dialect IR.
#include "targets/llvm_common/passes.h"

#include <mutex>

#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::llvm_common {

namespace {

struct MathToLlvmIntrinsicsPass : ir::RewritePass<MathToLlvmIntrinsicsPass, void> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathToLlvmIntrinsicsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-math-to-llvm-intrinsics";
  static constexpr llvm::StringLiteral kDescription =
      "the exact math ops qv-lower-math leaves become calls of LLVM's generic intrinsics (llvm.sqrt.f32, ...)";
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    RewritePass::getDependentDialects(registry);
    registry.insert<mlir::LLVM::LLVMDialect>();
  }
  void rewrite(mlir::Operation* root) { math_to_intrinsics(root); }
};

struct AlignVectorAccessesPass : ir::RewritePass<AlignVectorAccessesPass, void> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AlignVectorAccessesPass)
  static constexpr llvm::StringLiteral kArgument = "qv-align-vector-accesses";
  static constexpr llvm::StringLiteral kDescription =
      "llvm.load / llvm.store of a vector get the alignment of the vector's size (qv::load / qv::store's promise)";
  void rewrite(mlir::Operation* root) { align_vector_accesses(root); }
};

struct AlignWorkgroupGlobalsPass : ir::RewritePass<AlignWorkgroupGlobalsPass, void> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AlignWorkgroupGlobalsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-align-workgroup-globals";
  static constexpr llvm::StringLiteral kDescription =
      "workgroup (address space 3) llvm.mlir.global arrays get the alignment ir::workgroup_layout assumes";
  void rewrite(mlir::Operation* root) { align_workgroup_globals(root); }
};

}  // namespace

void register_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::register_passes();
    ir::register_pass<MathToLlvmIntrinsicsPass>();
    ir::register_pass<AlignVectorAccessesPass>();
    ir::register_pass<AlignWorkgroupGlobalsPass>();
  });
}

void run_passes(mlir::ModuleOp module, const std::string& pipeline, const ErrorContext& where,
                const TargetOptions& options) {
  print_pipeline(options, where.target, "builtin.module", pipeline);
  std::string error;
  if (!ir::run_pipeline(module, pipeline, error)) throw TargetError(where.kernel, where.target, error);
}

}  // namespace quiver::compiler::llvm_common
