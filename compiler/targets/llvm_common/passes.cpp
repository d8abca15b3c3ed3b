// The passes of the LLVM-based targets (ptx, hsaco, cpu) on their LLVM-dialect IR.
#include "targets/llvm_common/passes.h"

#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::llvm_common {

#define GEN_PASS_DECL
#define GEN_PASS_DEF_MATHTOLLVMINTRINSICS
#define GEN_PASS_DEF_ALIGNVECTORACCESSES
#define GEN_PASS_DEF_ALIGNWORKGROUPGLOBALS
#include "targets/llvm_common/Passes.h.inc"

namespace {

using MathToLlvmIntrinsicsPass = ir::RewritePass<impl::MathToLlvmIntrinsicsBase, math_to_intrinsics>;
using AlignVectorAccessesPass = ir::RewritePass<impl::AlignVectorAccessesBase, align_vector_accesses>;
using AlignWorkgroupGlobalsPass = ir::RewritePass<impl::AlignWorkgroupGlobalsBase, align_workgroup_globals>;

}  // namespace

void register_passes() {
  ir::register_once<ir::register_passes, MathToLlvmIntrinsicsPass, AlignVectorAccessesPass, AlignWorkgroupGlobalsPass>();
}

void run_passes(mlir::ModuleOp module, const std::string& pipeline, const ErrorContext& where,
                const TargetOptions& options) {
  print_pipeline(options, where.target, "builtin.module", pipeline);
  std::string error;
  if (!ir::run_pipeline(module, pipeline, error)) throw TargetError(where.kernel, where.target, error);
}

}  // namespace quiver::compiler::llvm_common
