// The ptx target's passes: its native forms of the neutral IR's intrinsics (before the portable
// math lowering) and of subgroup operations (on each kernel's gpu.module).
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
#include "targets/ptx/launch_waits.h"
#include "targets/ptx/matrix_mma_sync.h"
#include "targets/ptx/outline_kernels.h"
#include "targets/ptx/rcp_approx.h"
#include "targets/ptx/warpgroup_wgmma.h"

namespace quiver::compiler {

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
template <const ir::PassText& text, auto rewrite, typename Op = mlir::ModuleOp>
using NvvmPass = ir::FunctionPass<text, rewrite, Op, mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>;

constexpr ir::PassText kDot4ToDp4a{"qv-ptx-dot4-to-dp4a", "qv.dot4_i8 as one dp4a.s32.s32 (inline PTX)"};
constexpr ir::PassText kMatrixToMmaSync{"qv-ptx-matrix-to-mma-sync",
                                        "qv.matrix_* intrinsics as per-lane fragments, ldmatrix and mma.sync (sm_80+)"};
constexpr ir::PassText kWarpgroupToWgmma{
    "qv-ptx-warpgroup-to-wgmma",
    "qv.warpgroup_mma / _bt / wait as Hopper's wgmma (sm_90a), barriers fenced for the async proxy"};
constexpr ir::PassText kAsyncCopyToCpAsync{
    "qv-ptx-async-copy-to-cp-async", "qv::copy_async copies and group marks as cp.async / commit_group / wait_group (sm_80+)"};
constexpr ir::PassText kExp2ToEx2Approx{"qv-ptx-exp2-to-ex2-approx",
                                        "f32 math.exp2 as ex2.approx.f32 (llvm.nvvm.ex2.approx.f)"};
constexpr ir::PassText kRcpToRcpApprox{"qv-ptx-rcp-to-rcp-approx",
                                       "qv::rcp (an afn f32 1 / x) as rcp.approx.ftz.f32 (llvm.nvvm.rcp.approx.ftz.f)"};
constexpr ir::PassText kLaunchWaits{
    "qv-ptx-launch-waits", "qv.wait_prior_launches as griddepcontrol.wait (inline PTX; kept on sm_90+ only)"};
constexpr ir::PassText kSubgroupsToShuffles{"qv-ptx-subgroups-to-shuffles",
                                            "gpu.subgroup_size is 32; gpu.subgroup_reduce becomes gpu.shuffle butterflies"};
using Dot4ToDp4aPass = NvvmPass<kDot4ToDp4a, lower_dot4_to_dp4a>;
using MatrixToMmaSyncPass = NvvmPass<kMatrixToMmaSync, ptx::lower_matrix_to_mma_sync>;
using WarpgroupToWgmmaPass = NvvmPass<kWarpgroupToWgmma, ptx::lower_warpgroup_to_wgmma>;
using AsyncCopyToCpAsyncPass = NvvmPass<kAsyncCopyToCpAsync, ptx::lower_async_copies_to_cp_async>;
using Exp2ToEx2ApproxPass = NvvmPass<kExp2ToEx2Approx, ptx::lower_exp2_to_ex2_approx>;
using RcpToRcpApproxPass = NvvmPass<kRcpToRcpApprox, ptx::lower_rcp_to_rcp_approx>;
using LaunchWaitsPass = NvvmPass<kLaunchWaits, ptx::lower_launch_waits>;
using SubgroupsToShufflesPass = ir::FunctionPass<kSubgroupsToShuffles, lower_subgroups, void>;

constexpr ir::PassText kOutlineKernels{
    "qv-ptx-outline-kernels",
    "each named kernel as a gpu.func kernel in a gpu.module @qv_ptx_<symbol> of its own: bare-pointer buffers, "
    "workgroup memory as .shared attributions or views of the dynamic shared memory"};
using OutlineKernelsPass = ir::KernelListPass<kOutlineKernels, ptx::outline_kernels, mlir::gpu::GPUDialect, mlir::NVVM::NVVMDialect>;

constexpr ir::PassText kShareDynamicSharedMemory{
    "qv-ptx-share-dynamic-shared-memory",
    "the lowered kernels' __dynamic_shmem__ globals as one external zero-length array __qv_dynamic_shared "
    "at the module's start (extern __shared__)"};
using ShareDynamicSharedMemoryPass = NvvmPass<kShareDynamicSharedMemory, ptx::share_dynamic_shared_memory>;

constexpr ir::PassText kPlaceLaunchWaits{
    "qv-ptx-place-launch-waits",
    "on the kernels' LLVM-dialect module, per arch: with overlap, every kernel waits (at its entry where it has no "
    "griddepcontrol.wait, else also before each return) and lets dependents launch after each wait; without, no "
    "waits"};
struct PlaceLaunchWaitsPass : ir::RewritePass<PlaceLaunchWaitsPass, kPlaceLaunchWaits> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PlaceLaunchWaitsPass)
  PlaceLaunchWaitsPass() = default;
  PlaceLaunchWaitsPass(const PlaceLaunchWaitsPass& other) : RewritePass(other) {}
  Option<bool> overlap{*this, "overlap",
                       llvm::cl::desc("the arch has griddepcontrol (sm_90 and later): launches may overlap"),
                       llvm::cl::init(false)};
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    RewritePass::getDependentDialects(registry);
    registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  }
  void apply(mlir::ModuleOp module) { ptx::place_launch_waits(module, overlap); }
};

}  // namespace

void register_ptx_passes() {
  ir::register_once<Dot4ToDp4aPass, MatrixToMmaSyncPass, WarpgroupToWgmmaPass, AsyncCopyToCpAsyncPass,
                      Exp2ToEx2ApproxPass, RcpToRcpApproxPass, LaunchWaitsPass, SubgroupsToShufflesPass,
                      OutlineKernelsPass, ShareDynamicSharedMemoryPass, PlaceLaunchWaitsPass>(llvm_common::register_passes);
}

}  // namespace quiver::compiler
