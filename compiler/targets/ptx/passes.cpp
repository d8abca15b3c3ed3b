// The ptx target's passes (Passes.td): its native forms of the neutral IR's intrinsics (before
// the portable math lowering), of subgroup operations (on each kernel's gpu.module), the kernels'
// move out of func.func and the steps on their LLVM-dialect module.
#include "ir/intrinsics.h"
#include "ir/passes.h"
#include "ir/subgroup_reduce.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "targets/llvm_common/passes.h"
#include "targets/ptx/async_copy_cp_async.h"
#include "targets/ptx/exp2_ex2_approx.h"
#include "targets/ptx/launch_waits.h"
#include "targets/ptx/matrix_mma_sync.h"
#include "targets/ptx/outline_kernels.h"
#include "targets/ptx/rcp_approx.h"
#include "targets/ptx/warpgroup_wgmma.h"

namespace quiver::compiler::ptx {

namespace {

// qv::dot4_i8 is one dp4a instruction (sm_61 and later; quiver's PTX targets sm_80+). LLVM 19
// has no NVVM intrinsic for it, so it is inline PTX.
void lower_dot4_to_dp4a(mlir::ModuleOp module) {
  quiver::ir::replace_dot4_i8(module, [](mlir::OpBuilder& b, quiver::ir::qv::Dot4I8Op dot) {
    auto dialect = mlir::LLVM::AsmDialectAttr::get(b.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
    return b
        .create<mlir::LLVM::InlineAsmOp>(dot.getLoc(), b.getI32Type(), dot->getOperands(),
                                         "dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r",
                                         /*has_side_effects=*/false, /*is_align_stack=*/false, dialect,
                                         /*operand_attrs=*/mlir::ArrayAttr())
        .getResult(0);
  });
}

// qv::device_fence at the GPU's scope, which holds every block of a launch. Inline PTX with a
// memory clobber, so no load or store moves across it.
void lower_device_fence(mlir::ModuleOp module) {
  llvm::SmallVector<quiver::ir::qv::DeviceFenceOp> fences;
  module.walk([&](quiver::ir::qv::DeviceFenceOp op) { fences.push_back(op); });
  for (quiver::ir::qv::DeviceFenceOp op : fences) {
    mlir::OpBuilder b(op);
    auto dialect = mlir::LLVM::AsmDialectAttr::get(b.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
    b.create<mlir::LLVM::InlineAsmOp>(op.getLoc(), mlir::TypeRange{}, mlir::ValueRange{}, "fence.acq_rel.gpu;",
                                      "~{memory}", /*has_side_effects=*/true, /*is_align_stack=*/false, dialect,
                                      /*operand_attrs=*/mlir::ArrayAttr());
    op->erase();
  }
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
  quiver::ir::lower_partial_subgroup_reductions(root, kWarp);   // blocks whose last warp is partly filled
  mlir::RewritePatternSet patterns(root->getContext());
  mlir::populateGpuLowerSubgroupReduceToShufflePattenrs(patterns, kWarp);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(root, std::move(patterns))))
    throw std::runtime_error("subgroup reductions could not be lowered to warp shuffles");
}

}  // namespace

#define GEN_PASS_DECL
#define GEN_PASS_DEF_DOT4TODP4A
#define GEN_PASS_DEF_MATRIXTOMMASYNC
#define GEN_PASS_DEF_WARPGROUPTOWGMMA
#define GEN_PASS_DEF_ASYNCCOPYTOCPASYNC
#define GEN_PASS_DEF_EXP2TOEX2APPROX
#define GEN_PASS_DEF_RCPTORCPAPPROX
#define GEN_PASS_DEF_LAUNCHWAITS
#define GEN_PASS_DEF_DEVICEFENCETOPTX
#define GEN_PASS_DEF_SUBGROUPSTOSHUFFLES
#define GEN_PASS_DEF_OUTLINEKERNELS
#define GEN_PASS_DEF_SHAREDYNAMICSHAREDMEMORY
#define GEN_PASS_DEF_PLACELAUNCHWAITS
#include "targets/ptx/Passes.h.inc"

namespace {

using Dot4ToDp4aPass = ir::RewritePass<impl::Dot4ToDp4aBase, lower_dot4_to_dp4a>;
using MatrixToMmaSyncPass = ir::RewritePass<impl::MatrixToMmaSyncBase, lower_matrix_to_mma_sync>;
using WarpgroupToWgmmaPass = ir::RewritePass<impl::WarpgroupToWgmmaBase, lower_warpgroup_to_wgmma>;
using AsyncCopyToCpAsyncPass = ir::RewritePass<impl::AsyncCopyToCpAsyncBase, lower_async_copies_to_cp_async>;
using Exp2ToEx2ApproxPass = ir::RewritePass<impl::Exp2ToEx2ApproxBase, lower_exp2_to_ex2_approx>;
using RcpToRcpApproxPass = ir::RewritePass<impl::RcpToRcpApproxBase, lower_rcp_to_rcp_approx>;
using LaunchWaitsPass = ir::RewritePass<impl::LaunchWaitsBase, lower_launch_waits>;
using DeviceFenceToPtxPass = ir::RewritePass<impl::DeviceFenceToPtxBase, lower_device_fence>;
using SubgroupsToShufflesPass = ir::RewritePass<impl::SubgroupsToShufflesBase, lower_subgroups>;
using OutlineKernelsPass = ir::KernelListRewritePass<impl::OutlineKernelsBase, outline_kernels>;
using ShareDynamicSharedMemoryPass = ir::RewritePass<impl::ShareDynamicSharedMemoryBase, share_dynamic_shared_memory>;
struct PlaceLaunchWaitsPass : ir::Rewriting<impl::PlaceLaunchWaitsBase<PlaceLaunchWaitsPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::ModuleOp m) { place_launch_waits(m, overlap); });
  }
};

}  // namespace


}  // namespace quiver::compiler::ptx

namespace quiver::compiler {

void register_ptx_passes() {
  using namespace ptx;
  ir::register_once<llvm_common::register_passes, Dot4ToDp4aPass, MatrixToMmaSyncPass, WarpgroupToWgmmaPass,
                    AsyncCopyToCpAsyncPass, Exp2ToEx2ApproxPass, RcpToRcpApproxPass, LaunchWaitsPass,
                    DeviceFenceToPtxPass, SubgroupsToShufflesPass, OutlineKernelsPass, ShareDynamicSharedMemoryPass,
                    PlaceLaunchWaitsPass>();
}

}  // namespace quiver::compiler
