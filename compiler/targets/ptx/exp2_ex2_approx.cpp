#include "targets/ptx/exp2_ex2_approx.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::compiler::ptx {

void lower_exp2_to_ex2_approx(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::math::Exp2Op> ops;
  module.walk([&](mlir::math::Exp2Op op) {
    if (mlir::getElementTypeOrSelf(op.getType()).isF32()) ops.push_back(op);
  });
  for (mlir::math::Exp2Op op : ops) {
    mlir::OpBuilder b(op);
    mlir::Location l = op.getLoc();
    mlir::Type f32 = b.getF32Type();
    // qv::exp2_ftz (math.exp2 marked afn) may flush subnormals: ex2.approx.ftz is one SASS
    // instruction; the subnormal-keeping form adds a compare and two predicated multiplies.
    bool ftz = mlir::arith::bitEnumContainsAll(op.getFastmath(), mlir::arith::FastMathFlags::afn);
    const char* intrinsic = ftz ? "llvm.nvvm.ex2.approx.ftz.f" : "llvm.nvvm.ex2.approx.f";
    auto ex2 = [&](mlir::Value x) -> mlir::Value {
      return b.create<mlir::LLVM::CallIntrinsicOp>(l, f32, intrinsic, mlir::ValueRange{x}).getResult(0);
    };
    mlir::Value result;
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(op.getType())) {
      llvm::SmallVector<mlir::Value> elems;
      for (int64_t i = 0; i < vt.getNumElements(); ++i)
        elems.push_back(ex2(b.create<mlir::vector::ExtractOp>(l, op.getOperand(), i)));
      result = b.create<mlir::vector::FromElementsOp>(l, vt, elems);
    } else {
      result = ex2(op.getOperand());
    }
    op.getResult().replaceAllUsesWith(result);
    op.erase();
  }
}

}  // namespace quiver::compiler::ptx
