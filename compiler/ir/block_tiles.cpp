// Block-tile intrinsics: the qv operations by kind and the portable fallback (ir/block_tiles.h).
#include "ir/block_tiles.h"

#include <stdexcept>

#include "ir/dialect/QvDialect.h"
#include "ir/matrix.h"
#include "ir/warpgroup.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::ir {

namespace {

// Thread t of the block holds tile elements t, t + T, t + 2T, ... (row-major), so a warp's
// stores write consecutive addresses.
class FallbackExpander {
 public:
  FallbackExpander(mlir::Operation* call, mlir::Value thread, int64_t threads)
      : b_(call), l_(call->getLoc()), call_(call), thread_(thread), threads_(threads) {}

  void expand(BlockOp op, int64_t cols) {
    mlir::ValueRange args = call_->getOperands();
    if (op == BlockOp::Store) store(args, cols);
    else if (op == BlockOp::Load) call_->getResult(0).replaceAllUsesWith(load(args, cols));
    else call_->getResult(0).replaceAllUsesWith(product(args, cols, op == BlockOp::MmaBT));
    call_->erase();
  }

 private:
  mlir::Value index(int64_t v) { return b_.create<mlir::arith::ConstantIndexOp>(l_, v); }
  mlir::Value as_index(mlir::Value v) {
    return v.getType().isIndex() ? v : b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), v).getResult();
  }
  // Row and column of the thread's element i.
  std::pair<mlir::Value, mlir::Value> position(int64_t i, int64_t cols) {
    mlir::Value e = b_.create<mlir::arith::AddIOp>(l_, thread_, index(i * threads_));
    return {b_.create<mlir::arith::DivUIOp>(l_, e, index(cols)), b_.create<mlir::arith::RemUIOp>(l_, e, index(cols))};
  }
  // An operand element as the accumulator's type: 16-bit floats exactly to f32, int8 sign-extended.
  mlir::Value widen(mlir::Value v) {
    if (v.getType().isF32() || v.getType().isInteger(32)) return v;
    if (v.getType().isInteger(8)) return b_.create<mlir::arith::ExtSIOp>(l_, b_.getI32Type(), v);
    return b_.create<mlir::arith::ExtFOp>(l_, b_.getF32Type(), v);
  }

  // args: c, a, a_off, lda, b, b_off, ldb. Element i: sum over k of A[r][k] B[k][c], in k order.
  mlir::Value product(mlir::ValueRange args, int64_t cols, bool transposed) {
    mlir::Value c = args[0], a = args[1], b = args[4];
    mlir::Value a_off = as_index(args[2]), lda = as_index(args[3]), b_off = as_index(args[5]), ldb = as_index(args[6]);
    int64_t share = llvm::cast<mlir::VectorType>(c.getType()).getNumElements();
    int64_t depth = block_product_depth(call_);
    // int8 products: exact products summed in int32, wrapping (docs/matrix.md).
    const bool integer = llvm::cast<mlir::VectorType>(c.getType()).getElementType().isInteger(32);
    // Per element: where its row of A starts, where its column of B starts and B's step along k.
    llvm::SmallVector<mlir::Value> a_row, b_col;
    for (int64_t i = 0; i < share; ++i) {
      auto [r, col] = position(i, cols);
      a_row.push_back(b_.create<mlir::arith::AddIOp>(l_, a_off, b_.create<mlir::arith::MulIOp>(l_, r, lda)));
      b_col.push_back(b_.create<mlir::arith::AddIOp>(
          l_, b_off, transposed ? b_.create<mlir::arith::MulIOp>(l_, col, ldb).getResult() : col));
    }
    mlir::Value b_step = transposed ? index(1) : ldb;
    // A loop over k in branches, as the front end writes loops (legalisation structures it):
    // before -> header(k, acc) -> body -> header ... -> after(acc), the operation at after's start.
    mlir::Block* before = call_->getBlock();
    mlir::Block* after = before->splitBlock(call_);
    mlir::Region* region = before->getParent();
    auto* header = new mlir::Block();
    auto* body = new mlir::Block();
    region->getBlocks().insert(after->getIterator(), header);
    region->getBlocks().insert(after->getIterator(), body);
    mlir::Value k = header->addArgument(b_.getIndexType(), l_);
    mlir::Value acc = header->addArgument(c.getType(), l_);
    mlir::Value result = after->addArgument(c.getType(), l_);
    b_.setInsertionPointToEnd(before);
    b_.create<mlir::cf::BranchOp>(l_, header, mlir::ValueRange{index(0), c});
    b_.setInsertionPointToEnd(header);
    mlir::Value more = b_.create<mlir::arith::CmpIOp>(l_, mlir::arith::CmpIPredicate::ult, k, index(depth));
    b_.create<mlir::cf::CondBranchOp>(l_, more, body, mlir::ValueRange{}, after, mlir::ValueRange{acc});
    b_.setInsertionPointToEnd(body);
    mlir::Value b_k = b_.create<mlir::arith::MulIOp>(l_, k, b_step);
    for (int64_t i = 0; i < share; ++i) {
      mlir::Value x = widen(b_.create<mlir::memref::LoadOp>(l_, a, mlir::ValueRange{
                                b_.create<mlir::arith::AddIOp>(l_, a_row[i], k).getResult()}));
      mlir::Value y = widen(b_.create<mlir::memref::LoadOp>(l_, b, mlir::ValueRange{
                                b_.create<mlir::arith::AddIOp>(l_, b_col[i], b_k).getResult()}));
      mlir::Value old = b_.create<mlir::vector::ExtractOp>(l_, acc, i);
      mlir::Value sum = integer ? b_.create<mlir::arith::AddIOp>(l_, old, b_.create<mlir::arith::MulIOp>(l_, x, y)).getResult()
                                : b_.create<mlir::math::FmaOp>(l_, x, y, old).getResult();
      acc = b_.create<mlir::vector::InsertOp>(l_, sum, acc, i);
    }
    b_.create<mlir::cf::BranchOp>(l_, header, mlir::ValueRange{b_.create<mlir::arith::AddIOp>(l_, k, index(1)).getResult(), acc});
    b_.setInsertionPoint(call_);
    return result;
  }

  // args: p, off, stride, c.
  void store(mlir::ValueRange args, int64_t cols) {
    mlir::Type elem = llvm::cast<mlir::MemRefType>(args[0].getType()).getElementType();
    mlir::Value off = as_index(args[1]), stride = as_index(args[2]);
    int64_t share = llvm::cast<mlir::VectorType>(args[3].getType()).getNumElements();
    for (int64_t i = 0; i < share; ++i) {
      auto [r, col] = position(i, cols);
      mlir::Value v = b_.create<mlir::vector::ExtractOp>(l_, args[3], i);
      if (elem != v.getType()) v = b_.create<mlir::arith::TruncFOp>(l_, elem, v);   // round to nearest even
      mlir::Value at = b_.create<mlir::arith::AddIOp>(
          l_, off, b_.create<mlir::arith::AddIOp>(l_, b_.create<mlir::arith::MulIOp>(l_, r, stride), col));
      b_.create<mlir::memref::StoreOp>(l_, v, args[0], mlir::ValueRange{at});
    }
  }

  // args: p, off, stride; the share's type is the (retyped) result's.
  mlir::Value load(mlir::ValueRange args, int64_t cols) {
    mlir::Value off = as_index(args[1]), stride = as_index(args[2]);
    auto share = llvm::cast<mlir::VectorType>(call_->getResult(0).getType());
    mlir::Value acc = b_.create<mlir::arith::ConstantOp>(l_, b_.getZeroAttr(share));
    for (int64_t i = 0; i < share.getNumElements(); ++i) {
      auto [r, col] = position(i, cols);
      mlir::Value at = b_.create<mlir::arith::AddIOp>(
          l_, off, b_.create<mlir::arith::AddIOp>(l_, b_.create<mlir::arith::MulIOp>(l_, r, stride), col));
      mlir::Value v = b_.create<mlir::memref::LoadOp>(l_, args[0], mlir::ValueRange{at});
      acc = b_.create<mlir::vector::InsertOp>(l_, v, acc, i);
    }
    return acc;
  }

  mlir::OpBuilder b_;
  mlir::Location l_;
  mlir::Operation* call_;
  mlir::Value thread_;
  int64_t threads_;
};

}  // namespace

std::optional<BlockOp> block_op_of(mlir::Operation* op) {
  if (llvm::isa<qv::BlockMmaOp>(op)) return BlockOp::Mma;
  if (llvm::isa<qv::BlockMmaBTOp>(op)) return BlockOp::MmaBT;
  if (llvm::isa<qv::BlockStoreOp>(op)) return BlockOp::Store;
  if (llvm::isa<qv::BlockLoadOp>(op)) return BlockOp::Load;
  return std::nullopt;
}

int64_t block_product_depth(mlir::Operation* op) {
  if (auto mma = llvm::dyn_cast<qv::BlockMmaOp>(op)) return mma.getK();
  if (auto mma = llvm::dyn_cast<qv::BlockMmaBTOp>(op)) return mma.getK();
  return 0;
}

bool is_block_tile_type(mlir::Type t) {
  auto v = llvm::dyn_cast<mlir::VectorType>(t);
  return v && v.getRank() == 2 && (v.getElementType().isF32() || v.getElementType().isInteger(32));
}

void expand_block_ops(mlir::ModuleOp module, llvm::function_ref<bool(mlir::func::FuncOp)> only) {
  for (mlir::func::FuncOp fn : module.getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal()) continue;
    llvm::SmallVector<std::pair<mlir::Operation*, BlockOp>> calls;
    bool tiles = false;
    fn.walk([&](mlir::Operation* op) {
      if (auto b = block_op_of(op)) calls.push_back({op, *b});
      tiles = tiles || llvm::any_of(op->getResultTypes(), is_block_tile_type);
    });
    if (calls.empty() && !tiles) continue;
    if (only && !only(fn)) continue;
    auto block = fn->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
    if (!block || block.size() != 3)
      throw std::runtime_error("internal error: block tiles in a function without its block shape");
    const int64_t threads = int64_t(block[0]) * block[1] * block[2];
    auto name = fn->getAttrOfType<mlir::StringAttr>("qv.name");
    std::string kernel = name ? name.str() : fn.getSymName().str();
    fn.walk([&](mlir::Operation* op) {
      for (mlir::Type t : op->getResultTypes())
        if (is_block_tile_type(t) && llvm::cast<mlir::VectorType>(t).getNumElements() % threads != 0)
          throw std::runtime_error(
              "a qv::block_acc of " + std::to_string(llvm::cast<mlir::VectorType>(t).getDimSize(0)) + " x " +
              std::to_string(llvm::cast<mlir::VectorType>(t).getDimSize(1)) + " elements in kernel '" + kernel +
              "' is not a multiple of the block's " + std::to_string(threads) +
              " threads (the portable fallback gives each thread an equal share)");
    });
    // Column counts survive the retyping in the operations' original types.
    llvm::SmallVector<int64_t> cols;
    for (auto [call, op] : calls) {
      mlir::Type tile = op == BlockOp::Store ? call->getOperand(3).getType() : call->getResult(0).getType();
      cols.push_back(llvm::cast<mlir::VectorType>(tile).getDimSize(1));
    }
    retype_vector_values(fn, is_block_tile_type, [&](mlir::VectorType t) {
      return mlir::VectorType::get({t.getNumElements() / threads}, t.getElementType());
    });
    mlir::OpBuilder b(&fn.getBody().front(), fn.getBody().front().begin());
    mlir::Value thread = linear_thread_id(b, fn.getLoc());
    for (size_t i = 0; i < calls.size(); ++i) FallbackExpander(calls[i].first, thread, threads).expand(calls[i].second, cols[i]);
  }
}

}  // namespace quiver::ir
