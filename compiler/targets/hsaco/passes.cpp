// The hsaco target's passes.
#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/hsaco/amdgpu_kernel.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler {

namespace {

constexpr ir::PassText kDot4ToSdot4{"qv-hsaco-dot4-to-sdot4", "qv.dot4_i8 as llvm.amdgcn.sdot4 (processors with dot4)"};
using Dot4ToSdot4Pass =
    ir::FunctionPass<kDot4ToSdot4, hsaco::lower_dot4_to_sdot4, mlir::ModuleOp, mlir::LLVM::LLVMDialect>;

}  // namespace

void register_hsaco_passes() {
  ir::register_once<Dot4ToSdot4Pass>(llvm_common::register_passes);
}

}  // namespace quiver::compiler
