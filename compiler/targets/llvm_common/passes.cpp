// The passes of the LLVM-based targets (ptx, hsaco, cpu) on their LLVM-dialect IR.
#include "targets/llvm_common/passes.h"

#include "ir/dialect/QvDialect.h"
#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::llvm_common {

#define GEN_PASS_DECL
#define GEN_PASS_DEF_MATHTOLLVMINTRINSICS
#define GEN_PASS_DEF_ALIGNVECTORACCESSES
#define GEN_PASS_DEF_ALIGNWORKGROUPGLOBALS
#define GEN_PASS_DEF_DEVICEFENCETOLLVMFENCE
#include "targets/llvm_common/Passes.h.inc"

namespace {

using MathToLlvmIntrinsicsPass = ir::RewritePass<impl::MathToLlvmIntrinsicsBase, math_to_intrinsics>;
using AlignVectorAccessesPass = ir::RewritePass<impl::AlignVectorAccessesBase, align_vector_accesses>;
using AlignWorkgroupGlobalsPass = ir::RewritePass<impl::AlignWorkgroupGlobalsBase, align_workgroup_globals>;

// qv::device_fence orders the thread's device-memory accesses for the whole launch: an
// acquire-release fence in the scope that holds every thread of a launch (the agent on an AMD
// GPU; the system on the CPU, whose blocks run on several OS threads).
void device_fence_to_llvm_fence(mlir::Operation* module, llvm::StringRef syncscope) {
  llvm::SmallVector<quiver::ir::qv::DeviceFenceOp> fences;
  module->walk([&](quiver::ir::qv::DeviceFenceOp op) { fences.push_back(op); });
  for (quiver::ir::qv::DeviceFenceOp op : fences) {
    mlir::OpBuilder b(op);
    b.create<mlir::LLVM::FenceOp>(op.getLoc(), mlir::LLVM::AtomicOrdering::acq_rel, syncscope);
    op->erase();
  }
}

struct DeviceFenceToLlvmFencePass : ir::Rewriting<impl::DeviceFenceToLlvmFenceBase<DeviceFenceToLlvmFencePass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::Operation* m) { device_fence_to_llvm_fence(m, syncscope); });
  }
};

}  // namespace

void register_passes() {
  ir::register_once<ir::register_passes, MathToLlvmIntrinsicsPass, AlignVectorAccessesPass, AlignWorkgroupGlobalsPass,
                    DeviceFenceToLlvmFencePass>();
}

void run_passes(mlir::ModuleOp module, const std::string& pipeline, const ErrorContext& where,
                const TargetOptions& options) {
  print_pipeline(options, where.target, "builtin.module", pipeline);
  std::string error;
  if (!ir::run_pipeline(module, pipeline, error)) throw TargetError(where.kernel, where.target, error);
}

}  // namespace quiver::compiler::llvm_common
