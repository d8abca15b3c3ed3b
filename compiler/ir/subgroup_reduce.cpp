#include "ir/subgroup_reduce.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace quiver::ir {

namespace {

// The kernel's block: qv.block, or a gpu.func's known_block_size once outlined (HSACO).
mlir::DenseI32ArrayAttr block_of(mlir::Operation* op) {
  auto fn = op->getParentOfType<mlir::FunctionOpInterface>();
  if (!fn) return nullptr;
  auto block = fn->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
  if (!block) block = fn->getAttrOfType<mlir::DenseI32ArrayAttr>("known_block_size");
  return block && block.size() == 3 ? block : nullptr;
}
// Whether every subgroup of `op`'s block has all `width` lanes: the block is a whole number of
// them. Unknown blocks are not.
bool whole_subgroups(mlir::Operation* op, unsigned width) {
  auto block = block_of(op);
  if (!block) return false;
  int64_t threads = int64_t(block[0]) * block[1] * block[2];
  return threads > 0 && threads % width == 0;
}

// What a missing lane contributes: the identity of the sums and products; for the idempotent
// operations (min, max, and, or) the lane's own value.
mlir::Value missing_lane(mlir::OpBuilder& b, mlir::Location l, mlir::gpu::AllReduceOperation op, mlir::Value own) {
  using Op = mlir::gpu::AllReduceOperation;
  if (op != Op::ADD && op != Op::MUL && op != Op::XOR) return own;
  mlir::Type t = own.getType();
  int64_t one = op == Op::MUL ? 1 : 0;
  if (mlir::isa<mlir::FloatType>(t)) return b.create<mlir::arith::ConstantOp>(l, b.getFloatAttr(t, double(one)));
  return b.create<mlir::arith::ConstantOp>(l, b.getIntegerAttr(t, one));
}

void lower(mlir::gpu::SubgroupReduceOp reduce, unsigned width) {
  mlir::OpBuilder b(reduce);
  mlir::Location l = reduce.getLoc();
  mlir::Type index = b.getIndexType();
  // The block's size from qv.block where the kernel has one (constants), else gpu.block_dim.
  auto block = block_of(reduce);
  auto dim = [&](mlir::gpu::Dimension d) -> mlir::Value {
    if (block) return b.create<mlir::arith::ConstantIndexOp>(l, block[static_cast<unsigned>(d)]);
    return b.create<mlir::gpu::BlockDimOp>(l, index, d).getResult();
  };
  auto tid = [&](mlir::gpu::Dimension d) { return b.create<mlir::gpu::ThreadIdOp>(l, index, d).getResult(); };
  auto add = [&](mlir::Value x, mlir::Value y) { return b.create<mlir::arith::AddIOp>(l, x, y).getResult(); };
  auto mul = [&](mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MulIOp>(l, x, y).getResult(); };
  using D = mlir::gpu::Dimension;
  // The thread's linear id and the block's size (subgroups are consecutive linear ids), then the
  // lanes its subgroup has: width, or what is left of the block in the last one.
  mlir::Value bx = dim(D::x), by = dim(D::y);
  mlir::Value linear = add(tid(D::x), mul(bx, add(tid(D::y), mul(by, tid(D::z)))));
  mlir::Value threads = mul(mul(bx, by), dim(D::z));
  mlir::Value w = b.create<mlir::arith::ConstantIndexOp>(l, width);
  mlir::Value lane = b.create<mlir::arith::RemUIOp>(l, linear, w);
  mlir::Value first = b.create<mlir::arith::SubIOp>(l, linear, lane);
  mlir::Value lanes = b.create<mlir::arith::MinUIOp>(l, w, b.create<mlir::arith::SubIOp>(l, threads, first));
  mlir::Value width32 = b.create<mlir::arith::ConstantIntOp>(l, width, 32);
  const mlir::gpu::AllReduceOperation op = reduce.getOp();
  const mlir::vector::CombiningKind kind = mlir::gpu::convertReductionKind(op);
  mlir::Value v = reduce.getValue();
  for (unsigned s = 1; s < width; s <<= 1) {
    auto shuffle = b.create<mlir::gpu::ShuffleOp>(l, v, b.create<mlir::arith::ConstantIntOp>(l, s, 32), width32,
                                                  mlir::gpu::ShuffleMode::XOR);
    mlir::Value source = b.create<mlir::arith::XOrIOp>(l, lane, b.create<mlir::arith::ConstantIndexOp>(l, s));
    mlir::Value present =
        b.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::ult, source, lanes).getResult();
    mlir::Value other =
        b.create<mlir::arith::SelectOp>(l, present, shuffle.getShuffleResult(), missing_lane(b, l, op, v));
    v = mlir::vector::makeArithReduction(b, l, kind, v, other);
  }
  reduce.getResult().replaceAllUsesWith(v);
  reduce.erase();
}

}  // namespace

void lower_partial_subgroup_reductions(mlir::Operation* root, unsigned width) {
  llvm::SmallVector<mlir::gpu::SubgroupReduceOp> partial;
  root->walk([&](mlir::gpu::SubgroupReduceOp reduce) {
    mlir::Type t = reduce.getValue().getType();
    bool word = t.isIntOrFloat() && t.getIntOrFloatBitWidth() == 32;
    if (word && !whole_subgroups(reduce, width)) partial.push_back(reduce);
  });
  for (mlir::gpu::SubgroupReduceOp reduce : partial) lower(reduce, width);
}

}  // namespace quiver::ir
