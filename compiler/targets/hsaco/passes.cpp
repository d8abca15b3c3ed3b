// The hsaco target's passes.
#include "ir/passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "targets/hsaco/amdgpu_kernel.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler {

namespace {

constexpr ir::PassText kDot4ToSdot4{"qv-hsaco-dot4-to-sdot4", "qv.dot4_i8 as llvm.amdgcn.sdot4 (processors with dot4)"};
using Dot4ToSdot4Pass =
    ir::FunctionPass<kDot4ToSdot4, hsaco::lower_dot4_to_sdot4, mlir::ModuleOp, mlir::LLVM::LLVMDialect>;

constexpr ir::PassText kOutlineKernels{
    "qv-hsaco-outline-kernels",
    "each named kernel as a gpu.func kernel in a gpu.module @qv_hsaco_<symbol> of its own: global bare-pointer "
    "buffers, workgroup memory as views of one byte array, block and grid sizes and the wave size as values"};
struct OutlineKernelsPass : ir::RewritePass<OutlineKernelsPass, kOutlineKernels> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineKernelsPass)
  OutlineKernelsPass() = default;
  OutlineKernelsPass(const OutlineKernelsPass& other) : RewritePass(other) {}
  ListOption<std::string> kernels{*this, "kernels", llvm::cl::desc("the kernels' symbols, in the image's order")};
  Option<unsigned> wave_size{*this, "wave-size", llvm::cl::desc("lanes of a wave: 64 (GCN, CDNA) or 32 (RDNA)"),
                             llvm::cl::init(64)};
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    RewritePass::getDependentDialects(registry);
    registry.insert<mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect, mlir::ROCDL::ROCDLDialect>();
  }
  void apply(mlir::ModuleOp module) {
    llvm::SmallVector<std::string> symbols(kernels.begin(), kernels.end());
    hsaco::outline_kernels(module, symbols, wave_size);
  }
};

}  // namespace

void register_hsaco_passes() {
  ir::register_once<Dot4ToSdot4Pass, OutlineKernelsPass>(llvm_common::register_passes);
}

}  // namespace quiver::compiler
