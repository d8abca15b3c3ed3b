#include "targets/ptx/rcp_approx.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace quiver::compiler::ptx {

void lower_rcp_to_rcp_approx(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::arith::DivFOp> ops;
  module.walk([&](mlir::arith::DivFOp op) {
    // Only the front end's qv::rcp: an f32 division of the constant 1, marked afn.
    if (!op.getType().isF32()) return;
    if (!mlir::arith::bitEnumContainsAll(op.getFastmath(), mlir::arith::FastMathFlags::afn)) return;
    mlir::FloatAttr one;
    if (!mlir::matchPattern(op.getLhs(), mlir::m_Constant(&one)) || !one.getValue().isExactlyValue(1.0)) return;
    ops.push_back(op);
  });
  for (mlir::arith::DivFOp op : ops) {
    mlir::OpBuilder b(op);
    mlir::Value r = b.create<mlir::LLVM::CallIntrinsicOp>(op.getLoc(), b.getF32Type(), "llvm.nvvm.rcp.approx.ftz.f",
                                                          mlir::ValueRange{op.getRhs()})
                        .getResult(0);
    op.getResult().replaceAllUsesWith(r);
    op.erase();
  }
}

}  // namespace quiver::compiler::ptx
