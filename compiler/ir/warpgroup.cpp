// Warpgroup operations: the accumulator layout's coordinates, the store every target shares and
// the portable fallback of the product (ir/warpgroup.h).
#include "ir/warpgroup.h"

#include "ir/dialect/QvDialect.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace quiver::ir {

std::optional<WarpgroupOp> warpgroup_op_of(mlir::Operation* op) {
  return llvm::TypeSwitch<mlir::Operation*, std::optional<WarpgroupOp>>(op)
      .Case([](qv::WarpgroupMmaOp) { return WarpgroupOp::Mma; })
      .Case([](qv::WarpgroupMmaBTOp) { return WarpgroupOp::MmaBT; })
      .Case([](qv::WarpgroupCommitOp) { return WarpgroupOp::Commit; })
      .Case([](qv::WarpgroupWaitOp) { return WarpgroupOp::Wait; })
      .Case([](qv::WarpgroupBarrierOp) { return WarpgroupOp::Barrier; })
      .Case([](qv::WarpgroupStoreOp) { return WarpgroupOp::Store; })
      .Case([](qv::WarpgroupStoreSwizzledOp) { return WarpgroupOp::StoreSwizzled; })
      .Case([](qv::WarpgroupStoreBoundedOp) { return WarpgroupOp::StoreBounded; })
      .Default([](mlir::Operation*) { return std::nullopt; });
}

mlir::Value linear_thread_id(mlir::OpBuilder& b, mlir::Location l) {
  using mlir::gpu::Dimension;
  mlir::Value tx = b.create<mlir::gpu::ThreadIdOp>(l, Dimension::x), ty = b.create<mlir::gpu::ThreadIdOp>(l, Dimension::y),
              tz = b.create<mlir::gpu::ThreadIdOp>(l, Dimension::z);
  mlir::Value bx = b.create<mlir::gpu::BlockDimOp>(l, Dimension::x), by = b.create<mlir::gpu::BlockDimOp>(l, Dimension::y);
  mlir::Value yz = b.create<mlir::arith::AddIOp>(l, ty, b.create<mlir::arith::MulIOp>(l, by, tz));
  return b.create<mlir::arith::AddIOp>(l, tx, b.create<mlir::arith::MulIOp>(l, bx, yz));
}

WarpgroupLane warpgroup_lane(mlir::OpBuilder& b, mlir::Location l) {
  auto index = [&](int64_t v) -> mlir::Value { return b.create<mlir::arith::ConstantIndexOp>(l, v); };
  mlir::Value in_group = b.create<mlir::arith::AndIOp>(l, linear_thread_id(b, l), index(kWarpgroupThreads - 1));
  mlir::Value warp = b.create<mlir::arith::ShRUIOp>(l, in_group, index(5));
  mlir::Value lane = b.create<mlir::arith::AndIOp>(l, in_group, index(31));
  mlir::Value g = b.create<mlir::arith::ShRUIOp>(l, lane, index(2));
  mlir::Value q = b.create<mlir::arith::AndIOp>(l, lane, index(3));
  return {b.create<mlir::arith::AddIOp>(l, b.create<mlir::arith::MulIOp>(l, warp, index(16)), g),
          b.create<mlir::arith::MulIOp>(l, q, index(2))};
}

namespace {

class WarpgroupExpander {
 public:
  explicit WarpgroupExpander(mlir::Operation* op) : b_(op), l_(op->getLoc()), op_(op) {}

  void expand(WarpgroupOp op) {
    mlir::ValueRange args = op_->getOperands();
    switch (op) {
      case WarpgroupOp::Mma: replace(mma(args[0], args[1], args[2], args[3], args[4], args[5], false)); break;
      case WarpgroupOp::MmaBT: replace(mma(args[0], args[1], args[2], args[3], {}, args[4], true)); break;
      case WarpgroupOp::Commit:
      case WarpgroupOp::Wait: break;   // the fallback's products are done when they return
      case WarpgroupOp::Barrier: b_.create<mlir::gpu::BarrierOp>(l_); break;
      case WarpgroupOp::Store: store(args, false); break;
      case WarpgroupOp::StoreSwizzled: store(args, true); break;
      case WarpgroupOp::StoreBounded: store_bounded(args); break;
    }
    op_->erase();
  }

 private:
  mlir::Value index(int64_t v) { return b_.create<mlir::arith::ConstantIndexOp>(l_, v); }
  mlir::Value add(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::AddIOp>(l_, a, c); }
  mlir::Value mul(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::MulIOp>(l_, a, c); }
  mlir::Value band(mlir::Value a, int64_t m) { return b_.create<mlir::arith::AndIOp>(l_, a, index(m)); }
  mlir::Value shr(mlir::Value a, int64_t s) { return b_.create<mlir::arith::ShRUIOp>(l_, a, index(s)); }
  mlir::Value shl(mlir::Value a, int64_t s) { return b_.create<mlir::arith::ShLIOp>(l_, a, index(s)); }
  mlir::Value bxor(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::XOrIOp>(l_, a, c); }
  // An operand element as the accumulator's type: float (exact from 16 bits) or int32 (int8
  // sign-extended).
  mlir::Value load_operand(mlir::Value mem, mlir::Value at, mlir::Type acc) {
    mlir::Value v = b_.create<mlir::memref::LoadOp>(l_, mem, at);
    if (v.getType() == acc) return v;
    if (acc.isInteger(32)) return b_.create<mlir::arith::ExtSIOp>(l_, acc, v);
    return b_.create<mlir::arith::ExtFOp>(l_, acc, v);
  }
  // Element (row, col) of K-major panels whose row 0 starts at `base` (1024-byte aligned rows
  // group), for elements of 2^log_bytes bytes: rows of 128 bytes (E = 128 >> log_bytes elements),
  // chunks of 16 (C = 16 >> log_bytes): base + E row + C ((col / C) ^ (row % 8)) + col % C, with
  // `chunk` = col / C < 8.
  mlir::Value swizzled(mlir::Value base, mlir::Value row, mlir::Value chunk, mlir::Value low, int64_t log_bytes) {
    return add(add(base, shl(row, 7 - log_bytes)), add(shl(band(bxor(chunk, row), 7), 4 - log_bytes), low));
  }

  // Each thread's 64 x N share in k order: per k, its two rows' A elements and its N/4 columns' B.
  // 16-bit operands: 16 k, fused multiply-adds into floats; int8: 32 k, exact products summed
  // into int32 with wrapping adds (the sum is then independent of the order, as on the hardware).
  mlir::Value mma(mlir::Value a, mlir::Value a_off, mlir::Value bm, mlir::Value b_off, mlir::Value panel_stride,
                  mlir::Value c, bool bt) {
    auto vt = llvm::cast<mlir::VectorType>(c.getType());
    int64_t n = 2 * vt.getNumElements();
    mlir::Type acc_type = vt.getElementType();
    bool int8 = acc_type.isInteger(32);
    int64_t log_bytes = int8 ? 0 : 1, row_elems = 128 >> log_bytes, chunk_log = 4 - log_bytes;
    WarpgroupLane lane = warpgroup_lane(b_, l_);
    mlir::Value a_base = band(a_off, -row_elems), a_k0 = band(a_off, row_elems - 1);
    mlir::Value b_base = band(b_off, -row_elems), b_k0 = band(b_off, row_elems - 1);
    mlir::Value stride = panel_stride ? b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), panel_stride).getResult()
                                      : mlir::Value();
    // The loop carries the share through a slot (a rank-0 memref, as the front end's variables),
    // not scf.for results: vector block arguments are for scalarize_vectors on unstructured IR.
    mlir::Value slot;
    {
      mlir::OpBuilder::InsertionGuard guard(b_);
      auto fn = op_->getParentOfType<mlir::func::FuncOp>();
      b_.setInsertionPointToStart(&fn.getBody().front());
      slot = b_.create<mlir::memref::AllocaOp>(l_, mlir::MemRefType::get({}, vt));
    }
    b_.create<mlir::memref::StoreOp>(l_, c, slot);
    auto loop = b_.create<mlir::scf::ForOp>(l_, index(0), index(int8 ? 32 : 16), index(1));
    mlir::OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(loop.getBody());
    mlir::Value k = loop.getInductionVar();
    mlir::Value acc = b_.create<mlir::memref::LoadOp>(l_, slot);
    // Column a_k0 + k of A's rows (b_k0 + k of B^T's): its chunk and its place in the chunk.
    mlir::Value a_col = add(a_k0, k), b_col = add(b_k0, k);
    mlir::Value a_low = band(a_col, (int64_t{1} << chunk_log) - 1), b_low = band(b_col, (int64_t{1} << chunk_log) - 1);
    mlir::Value a_chunk = shr(a_col, chunk_log);
    mlir::Value a_h[2];
    for (int h = 0; h < 2; ++h)
      a_h[h] = load_operand(a, swizzled(a_base, add(lane.row, index(8 * h)), a_chunk, a_low, log_bytes), acc_type);
    mlir::Value b_chunk = shr(b_col, chunk_log);
    for (int64_t i = 0; i < n / 8; ++i)
      for (int64_t s = 0; s < 2; ++s) {
        mlir::Value col_low = add(lane.col, index(s));   // column % 8
        mlir::Value at;
        if (bt) {
          at = swizzled(b_base, add(col_low, index(8 * i)), b_chunk, b_low, log_bytes);
        } else {   // row k of panel i / 8, chunk i % 8 (16-bit only: the front end refuses int8)
          mlir::Value panel = add(b_off, mul(index(i / 8), stride));
          at = add(add(panel, shl(k, 6)), add(shl(band(bxor(index(i % 8), k), 7), 3), col_low));
        }
        mlir::Value bv = load_operand(bm, at, acc_type);
        for (int h = 0; h < 2; ++h) {
          int64_t e = 4 * i + 2 * h + s;
          mlir::Value old = b_.create<mlir::vector::ExtractOp>(l_, acc, e);
          mlir::Value upd;
          if (int8) upd = b_.create<mlir::arith::AddIOp>(l_, old, b_.create<mlir::arith::MulIOp>(l_, a_h[h], bv));
          else upd = b_.create<mlir::math::FmaOp>(l_, a_h[h], bv, old);
          acc = b_.create<mlir::vector::InsertOp>(l_, upd, acc, e);
        }
      }
    b_.create<mlir::memref::StoreOp>(l_, acc, slot);
    b_.setInsertionPointAfter(loop);
    return b_.create<mlir::memref::LoadOp>(l_, slot);
  }

  // Pairs of adjacent columns: element 4i + 2h + {0, 1} at row `row` + 8h, column 8i + `col`;
  // swizzled, column c of a row is chunk (c % 64) / 8 of panel c / 64, which XOR moves as a whole.
  void store(mlir::ValueRange args, bool swizzle) {
    mlir::Type elem = llvm::cast<mlir::MemRefType>(args[0].getType()).getElementType();
    auto vt = llvm::cast<mlir::VectorType>(args[3].getType());
    WarpgroupLane lane = warpgroup_lane(b_, l_);
    mlir::Value stride = b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), args[2]);
    for (int64_t i = 0; i < vt.getNumElements() / 4; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t e = 4 * i + 2 * h;
        mlir::Value pair = b_.create<mlir::vector::FromElementsOp>(
            l_, mlir::VectorType::get({2}, vt.getElementType()),
            mlir::ValueRange{b_.create<mlir::vector::ExtractOp>(l_, args[3], e).getResult(),
                             b_.create<mlir::vector::ExtractOp>(l_, args[3], e + 1).getResult()});
        if (elem != vt.getElementType())   // float to half / bf16 (int32 shares go to int32 memory)
          pair = b_.create<mlir::arith::TruncFOp>(l_, mlir::VectorType::get({2}, elem), pair);
        mlir::Value row = add(lane.row, index(8 * h)), at;
        if (swizzle)   // panel i / 8, chunk (i % 8) ^ (row % 8): bits 3-5 of 64 row + 8 (row % 8) + col
          at = add(add(args[1], mul(index(i / 8), stride)),
                   bxor(add(shl(row, 6), add(shl(band(row, 7), 3), lane.col)), index(8 * (i % 8))));
        else
          at = add(args[1], add(mul(row, stride), add(lane.col, index(8 * i))));
        b_.create<mlir::vector::StoreOp>(l_, pair, args[0], mlir::ValueRange{at});
      }
  }

  // One element at a time, each under `row < rows && col < cols` (p, off, stride, c, rows, cols).
  void store_bounded(mlir::ValueRange args) {
    mlir::Type elem = llvm::cast<mlir::MemRefType>(args[0].getType()).getElementType();
    auto vt = llvm::cast<mlir::VectorType>(args[3].getType());
    WarpgroupLane lane = warpgroup_lane(b_, l_);
    auto as_index = [&](mlir::Value v) -> mlir::Value {
      return b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), v);
    };
    mlir::Value stride = as_index(args[2]), rows = as_index(args[4]), cols = as_index(args[5]);
    auto below = [&](mlir::Value v, mlir::Value limit) -> mlir::Value {
      return b_.create<mlir::arith::CmpIOp>(l_, mlir::arith::CmpIPredicate::ult, v, limit);
    };
    for (int64_t h = 0; h < 2; ++h) {
      mlir::Value row = add(lane.row, index(8 * h));
      mlir::Value row_in = below(row, rows), row_at = add(args[1], mul(row, stride));
      for (int64_t i = 0; i < vt.getNumElements() / 4; ++i)
        for (int64_t s = 0; s < 2; ++s) {
          mlir::Value col = add(lane.col, index(8 * i + s));
          mlir::Value in = b_.create<mlir::arith::AndIOp>(l_, row_in, below(col, cols));
          auto guard_if = b_.create<mlir::scf::IfOp>(l_, in, /*withElseRegion=*/false);
          mlir::OpBuilder::InsertionGuard guard(b_);
          b_.setInsertionPointToStart(&guard_if.getThenRegion().front());
          mlir::Value v = b_.create<mlir::vector::ExtractOp>(l_, args[3], 4 * i + 2 * h + s);
          if (elem != v.getType()) v = b_.create<mlir::arith::TruncFOp>(l_, elem, v);
          b_.create<mlir::memref::StoreOp>(l_, v, args[0], mlir::ValueRange{add(row_at, col)});
        }
    }
  }

  void replace(mlir::Value v) { op_->getResult(0).replaceAllUsesWith(v); }

  mlir::OpBuilder b_;
  mlir::Location l_;
  mlir::Operation* op_;
};

}  // namespace

bool is_shared_warpgroup_store(WarpgroupOp op) { return op == WarpgroupOp::Store || op == WarpgroupOp::StoreBounded; }

void expand_warpgroup_ops(mlir::ModuleOp module, bool keep_mma) {
  auto expanded = [&](WarpgroupOp op) { return is_shared_warpgroup_store(op) || !keep_mma; };
  llvm::SmallVector<std::pair<mlir::Operation*, WarpgroupOp>> ops;
  module.walk([&](mlir::Operation* op) {
    if (auto kind = warpgroup_op_of(op); kind && expanded(*kind)) ops.push_back({op, *kind});
  });
  for (auto [op, kind] : ops) WarpgroupExpander(op).expand(kind);
}

bool uses_warpgroup_mma(mlir::Operation* root) {
  bool found = false;
  root->walk([&](mlir::Operation* op) {
    if (llvm::isa<qv::WarpgroupMmaOp, qv::WarpgroupMmaBTOp>(op)) found = true;
  });
  return found;
}

}  // namespace quiver::ir
