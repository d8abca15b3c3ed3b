#include "ir/intrinsics.h"

#include "ir/dialect/QvDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::ir {

void replace_dot4_i8(mlir::ModuleOp module,
                     llvm::function_ref<mlir::Value(mlir::OpBuilder& b, qv::Dot4I8Op dot)> lower) {
  llvm::SmallVector<qv::Dot4I8Op> dots;
  module.walk([&](qv::Dot4I8Op dot) { dots.push_back(dot); });
  for (qv::Dot4I8Op dot : dots) {
    mlir::OpBuilder b(dot);
    dot.getResult().replaceAllUsesWith(lower(b, dot));
    dot.erase();
  }
}

void expand_dot4_i8(mlir::ModuleOp module) {
  replace_dot4_i8(module, [](mlir::OpBuilder& b, qv::Dot4I8Op dot) {
    mlir::Location l = dot.getLoc();
    mlir::Type i32 = b.getI32Type(), i8 = b.getI8Type();
    mlir::Value acc = dot.getAcc();
    for (int k = 0; k < 4; ++k) {
      auto lane = [&](mlir::Value w) {   // sign-extended byte k
        mlir::Value shift = b.create<mlir::arith::ConstantIntOp>(l, 8 * k, 32);
        mlir::Value shifted = b.create<mlir::arith::ShRUIOp>(l, w, shift);
        return b.create<mlir::arith::ExtSIOp>(l, i32, b.create<mlir::arith::TruncIOp>(l, i8, shifted)).getResult();
      };
      acc = b.create<mlir::arith::AddIOp>(l, acc, b.create<mlir::arith::MulIOp>(l, lane(dot.getA()), lane(dot.getB())));
    }
    return acc;
  });
}

void erase_async_copy_marks(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::Operation*> marks;
  module.walk([&](mlir::Operation* op) {
    if (llvm::isa<qv::CopyAsyncCommitOp, qv::CopyAsyncWaitOp>(op)) marks.push_back(op);
  });
  for (mlir::Operation* op : marks) op->erase();
}

void erase_launch_waits(mlir::ModuleOp module) {
  llvm::SmallVector<qv::WaitPriorLaunchesOp> waits;
  module.walk([&](qv::WaitPriorLaunchesOp op) { waits.push_back(op); });
  for (qv::WaitPriorLaunchesOp op : waits) op->erase();
}

}  // namespace quiver::ir
