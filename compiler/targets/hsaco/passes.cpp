// The hsaco target's passes (Passes.td).
#include "ir/passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "targets/hsaco/amdgpu_kernel.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler::hsaco {

#define GEN_PASS_DECL
#define GEN_PASS_DEF_DOT4TOSDOT4
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "targets/hsaco/Passes.h.inc"

namespace {

using Dot4ToSdot4Pass = ir::RewritePass<impl::Dot4ToSdot4Base, lower_dot4_to_sdot4>;
struct OutlineKernelsPass : ir::Rewriting<impl::OutlineKernelsBase<OutlineKernelsPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::ModuleOp m) { outline_kernels(m, ir::values(kernels), wave_size); });
  }
};

}  // namespace


}  // namespace quiver::compiler::hsaco

namespace quiver::compiler {

void register_hsaco_passes() {
  using namespace hsaco;
  ir::register_once<llvm_common::register_passes, Dot4ToSdot4Pass, OutlineKernelsPass>();
}

}  // namespace quiver::compiler
