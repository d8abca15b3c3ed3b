// The ptx target's passes: its native forms of the neutral IR's intrinsics (before the portable
// math lowering) and of subgroup operations (on each kernel's gpu.module).
#include <mutex>

#include "ir/intrinsics.h"
#include "ir/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "targets/llvm_common/passes.h"
#include "targets/ptx/async_copy_cp_async.h"
#include "targets/ptx/exp2_ex2_approx.h"
#include "targets/ptx/matrix_mma_sync.h"
#include "targets/ptx/rcp_approx.h"
#include "targets/ptx/warpgroup_wgmma.h"

namespace quiver::compiler {

namespace {

// qv::dot4_i8 is one dp4a instruction (sm_61 and later; quiver's PTX targets sm_80+). LLVM 19
// has no NVVM intrinsic for it, so it is inline PTX.
void lower_dot4_to_dp4a(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::func::CallOp> calls;
  module.walk([&](mlir::func::CallOp call) {
    if (call.getCallee() == quiver::ir::kDot4I8) calls.push_back(call);
  });
  for (mlir::func::CallOp call : calls) {
    mlir::OpBuilder b(call);
    auto dialect = mlir::LLVM::AsmDialectAttr::get(b.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
    auto asm_op = b.create<mlir::LLVM::InlineAsmOp>(
        call.getLoc(), b.getI32Type(), call.getOperands(), "dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r",
        /*has_side_effects=*/false, /*is_align_stack=*/false, dialect, /*operand_attrs=*/mlir::ArrayAttr());
    call.getResult(0).replaceAllUsesWith(asm_op.getResult(0));
    call.erase();
  }
  if (auto decl = module.lookupSymbol<mlir::func::FuncOp>(quiver::ir::kDot4I8)) decl.erase();
}

// NVIDIA warps have 32 lanes: subgroup reductions become shfl.sync butterflies, and the
// subgroup size is that constant (convert-gpu-to-nvvm lowers gpu.shuffle and gpu.lane_id).
void lower_subgroups(mlir::Operation* root) {
  constexpr unsigned kWarp = 32;
  root->walk([&](mlir::gpu::SubgroupSizeOp op) {
    mlir::OpBuilder b(op);
    op.replaceAllUsesWith(b.create<mlir::arith::ConstantIndexOp>(op.getLoc(), kWarp).getResult());
    op.erase();
  });
  mlir::RewritePatternSet patterns(root->getContext());
  mlir::populateGpuLowerSubgroupReduceToShufflePattenrs(patterns, kWarp);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(root, std::move(patterns))))
    throw std::runtime_error("subgroup reductions could not be lowered to warp shuffles");
}

// The passes that create LLVM / NVVM ops.
template <typename Derived, typename Op = mlir::ModuleOp>
struct NvvmPass : ir::RewritePass<Derived, Op> {
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    ir::RewritePass<Derived, Op>::getDependentDialects(registry);
    registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  }
};

struct Dot4ToDp4aPass : NvvmPass<Dot4ToDp4aPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Dot4ToDp4aPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-dot4-to-dp4a";
  static constexpr llvm::StringLiteral kDescription = "qv.dot4_i8 as one dp4a.s32.s32 (inline PTX)";
  void rewrite(mlir::ModuleOp module) { lower_dot4_to_dp4a(module); }
};

struct MatrixToMmaSyncPass : NvvmPass<MatrixToMmaSyncPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MatrixToMmaSyncPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-matrix-to-mma-sync";
  static constexpr llvm::StringLiteral kDescription =
      "qv.matrix_* intrinsics as per-lane fragments, ldmatrix and mma.sync (sm_80+)";
  void rewrite(mlir::ModuleOp module) { ptx::lower_matrix_to_mma_sync(module); }
};

struct WarpgroupToWgmmaPass : NvvmPass<WarpgroupToWgmmaPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WarpgroupToWgmmaPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-warpgroup-to-wgmma";
  static constexpr llvm::StringLiteral kDescription =
      "qv.warpgroup_mma / _bt / wait as Hopper's wgmma (sm_90a), barriers fenced for the async proxy";
  void rewrite(mlir::ModuleOp module) { ptx::lower_warpgroup_to_wgmma(module); }
};

struct AsyncCopyToCpAsyncPass : NvvmPass<AsyncCopyToCpAsyncPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AsyncCopyToCpAsyncPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-async-copy-to-cp-async";
  static constexpr llvm::StringLiteral kDescription =
      "qv::copy_async copies and group marks as cp.async / commit_group / wait_group (sm_80+)";
  void rewrite(mlir::ModuleOp module) { ptx::lower_async_copies_to_cp_async(module); }
};

struct Exp2ToEx2ApproxPass : NvvmPass<Exp2ToEx2ApproxPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Exp2ToEx2ApproxPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-exp2-to-ex2-approx";
  static constexpr llvm::StringLiteral kDescription = "f32 math.exp2 as ex2.approx.f32 (llvm.nvvm.ex2.approx.f)";
  void rewrite(mlir::ModuleOp module) { ptx::lower_exp2_to_ex2_approx(module); }
};

struct RcpToRcpApproxPass : NvvmPass<RcpToRcpApproxPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RcpToRcpApproxPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-rcp-to-rcp-approx";
  static constexpr llvm::StringLiteral kDescription =
      "qv::rcp (an afn f32 1 / x) as rcp.approx.ftz.f32 (llvm.nvvm.rcp.approx.ftz.f)";
  void rewrite(mlir::ModuleOp module) { ptx::lower_rcp_to_rcp_approx(module); }
};

struct SubgroupsToShufflesPass : ir::RewritePass<SubgroupsToShufflesPass, void> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SubgroupsToShufflesPass)
  static constexpr llvm::StringLiteral kArgument = "qv-ptx-subgroups-to-shuffles";
  static constexpr llvm::StringLiteral kDescription =
      "gpu.subgroup_size is 32; gpu.subgroup_reduce becomes gpu.shuffle butterflies";
  void rewrite(mlir::Operation* root) { lower_subgroups(root); }
};

}  // namespace

void register_ptx_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm_common::register_passes();
    ir::register_pass<Dot4ToDp4aPass>();
    ir::register_pass<MatrixToMmaSyncPass>();
    ir::register_pass<WarpgroupToWgmmaPass>();
    ir::register_pass<AsyncCopyToCpAsyncPass>();
    ir::register_pass<Exp2ToEx2ApproxPass>();
    ir::register_pass<RcpToRcpApproxPass>();
    ir::register_pass<SubgroupsToShufflesPass>();
  });
}

}  // namespace quiver::compiler
