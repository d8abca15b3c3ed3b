// Matrix-unit intrinsics: the qv operations by kind, in-place retyping of tile values, and the
// portable fallback.
#include "ir/matrix.h"

#include <stdexcept>

#include "ir/dialect/QvDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::ir {

std::optional<MatrixOp> matrix_op_of(mlir::Operation* op) {
  if (auto load = llvm::dyn_cast<qv::MatrixLoadOp>(op)) {
    switch (load.getRole()) {
      case qv::MatrixRole::A: return MatrixOp::LoadA;
      case qv::MatrixRole::B: return MatrixOp::LoadB;
      case qv::MatrixRole::BT: return MatrixOp::LoadBT;
      case qv::MatrixRole::Acc: return MatrixOp::LoadAcc;
    }
  }
  if (llvm::isa<qv::MatrixStoreOp>(op)) return MatrixOp::Store;
  if (llvm::isa<qv::MatrixMmaOp>(op)) return MatrixOp::Mma;
  if (llvm::isa<qv::MatrixRowMaxOp>(op)) return MatrixOp::RowMax;
  if (llvm::isa<qv::MatrixRowSumOp>(op)) return MatrixOp::RowSum;
  if (llvm::isa<qv::MatrixToAOp>(op)) return MatrixOp::ToA;
  return std::nullopt;
}

mlir::Operation* create_matrix_op(mlir::OpBuilder& b, mlir::Location l, MatrixOp op, mlir::ValueRange operands,
                                  mlir::Type result) {
  auto load = [&](qv::MatrixRole role) {
    return b.create<qv::MatrixLoadOp>(l, result, role, operands[0], operands[1], operands[2], mlir::TypeAttr());
  };
  switch (op) {
    case MatrixOp::LoadA: return load(qv::MatrixRole::A);
    case MatrixOp::LoadB: return load(qv::MatrixRole::B);
    case MatrixOp::LoadBT: return load(qv::MatrixRole::BT);
    case MatrixOp::LoadAcc: return load(qv::MatrixRole::Acc);
    case MatrixOp::Store:
      return b.create<qv::MatrixStoreOp>(l, operands[0], operands[1], operands[2], operands[3], mlir::TypeAttr());
    case MatrixOp::Mma: return b.create<qv::MatrixMmaOp>(l, result, operands[0], operands[1], operands[2]);
    case MatrixOp::RowMax: return b.create<qv::MatrixRowMaxOp>(l, result, operands[0]);
    case MatrixOp::RowSum: return b.create<qv::MatrixRowSumOp>(l, result, operands[0]);
    case MatrixOp::ToA: return b.create<qv::MatrixToAOp>(l, result, operands[0]);
  }
  return nullptr;
}

bool is_matrix_type(mlir::Type t) {
  auto v = llvm::dyn_cast<mlir::VectorType>(t);
  if (!v || v.getRank() != 1) return false;
  return v.getNumElements() == kMatrixElements ||
         (v.getNumElements() == kMatrixElementsI8 && v.getElementType().isInteger(8));
}

bool is_tile_type(mlir::Type t) {
  if (is_matrix_type(t)) return true;
  auto v = llvm::dyn_cast<mlir::VectorType>(t);
  // (A rank-2 float vector is a block tile: ir/block_tiles.h.)
  if (!v || v.getRank() != 2 || v.getDimSize(1) != kMatrixTile || v.getElementType().isF32()) return false;
  return v.getDimSize(0) == matrix_depth(v.getElementType());
}

bool is_int8_matrix_type(mlir::Type t) {
  if (!is_tile_type(t)) return false;
  mlir::Type e = llvm::cast<mlir::VectorType>(t).getElementType();
  return e.isInteger(8) || e.isInteger(32);
}

int64_t matrix_depth(mlir::Type element) { return element.isInteger(8) ? kMatrixDepthI8 : kMatrixTile; }

void retype_matrix_values(mlir::Operation* root, llvm::function_ref<mlir::VectorType(mlir::VectorType)> convert) {
  retype_vector_values(root, is_matrix_type, convert);
}

void retype_vector_values(mlir::Operation* root, llvm::function_ref<bool(mlir::Type)> chosen,
                          llvm::function_ref<mlir::VectorType(mlir::VectorType)> convert) {
  auto retyped = [&](mlir::Type t) -> mlir::Type {
    if (chosen(t)) return convert(llvm::cast<mlir::VectorType>(t));
    if (auto m = llvm::dyn_cast<mlir::MemRefType>(t); m && chosen(m.getElementType()))
      return mlir::MemRefType::get(m.getShape(), convert(llvm::cast<mlir::VectorType>(m.getElementType())),
                                   m.getLayout(), m.getMemorySpace());
    return {};
  };
  root->walk([&](mlir::Block* block) {
    for (mlir::BlockArgument arg : block->getArguments())
      if (mlir::Type t = retyped(arg.getType())) arg.setType(t);
  });
  root->walk([&](mlir::Operation* op) {
    for (mlir::OpResult r : op->getResults()) {
      mlir::Type t = retyped(r.getType());
      if (!t) continue;
      if (auto cst = llvm::dyn_cast<mlir::arith::ConstantOp>(op)) {
        auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(cst.getValue());
        auto vt = llvm::cast<mlir::VectorType>(t);
        if (dense && dense.isSplat() && llvm::isa<mlir::FloatType>(vt.getElementType())) {
          llvm::APFloat v = dense.getSplatValue<llvm::APFloat>();
          bool lost = false;
          v.convert(llvm::cast<mlir::FloatType>(vt.getElementType()).getFloatSemantics(),
                    llvm::APFloat::rmNearestTiesToEven, &lost);
          cst.setValueAttr(mlir::DenseElementsAttr::get(vt, v));
        } else if (dense && dense.isSplat() && vt.getElementType().isInteger() &&
                   llvm::isa<mlir::IntegerType>(dense.getElementType())) {
          // int8 tiles widen (the fallback holds them as i32): sign-extended, as the values are.
          llvm::APInt v = dense.getSplatValue<llvm::APInt>().sextOrTrunc(vt.getElementTypeBitWidth());
          cst.setValueAttr(mlir::DenseElementsAttr::get(vt, v));
        } else {
          throw std::runtime_error("internal error: a tile constant that is not a splat of its element type");
        }
      }
      r.setType(t);
    }
  });
}

namespace {

// The fallback's pieces, built before `call`, an operation of the matrix intrinsics. `to_a`: the
// element type qv.matrix_to_a rounds to (its result is already retyped to f32).
class FallbackExpander {
 public:
  FallbackExpander(mlir::Operation* call, mlir::Type to_a) : b_(call), l_(call->getLoc()), call_(call), to_a_(to_a) {}

  void expand(MatrixOp op) {
    mlir::ValueRange args = call_->getOperands();
    switch (op) {
      case MatrixOp::LoadA:
      case MatrixOp::LoadAcc: replace(load(args, /*a_shape=*/true, /*transposed=*/false)); break;
      case MatrixOp::LoadB: replace(load(args, false, false)); break;
      case MatrixOp::LoadBT: replace(load(args, false, true)); break;
      case MatrixOp::Mma: replace(mma(args[0], args[1], args[2])); break;
      case MatrixOp::Store: store(args); break;
      case MatrixOp::RowMax: replace(row_reduce(args[0], true)); break;
      case MatrixOp::RowSum: replace(row_reduce(args[0], false)); break;
      case MatrixOp::ToA: replace(round_to(args[0])); break;
    }
    call_->erase();
  }

 private:
  mlir::Value index(int64_t v) { return b_.create<mlir::arith::ConstantIndexOp>(l_, v); }

  // Element (r, c) of the tile is at off + r * stride + c (transposed: off + c * stride + r).
  mlir::Value address(mlir::ValueRange args, int64_t r, int64_t c, bool transposed) {
    mlir::Value stride = b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), args[2]);
    if (transposed) std::swap(r, c);
    mlir::Value row = b_.create<mlir::arith::MulIOp>(l_, index(r), stride);
    return b_.create<mlir::arith::AddIOp>(l_, args[1], b_.create<mlir::arith::AddIOp>(l_, row, index(c)));
  }

  // A and accumulators are 16 rows, B 16 columns; the other side is what the (retyped) result
  // holds: 16, or 32 for int8 operands. Elements widen exactly: 16-bit floats to f32, i8 to i32.
  mlir::Value load(mlir::ValueRange args, bool a_shape, bool transposed) {
    auto result = llvm::cast<mlir::VectorType>(call_->getResult(0).getType());
    int64_t other = result.getNumElements() / kMatrixTile;
    int64_t rows = a_shape ? kMatrixTile : other, cols = a_shape ? other : kMatrixTile;
    llvm::SmallVector<mlir::Value> elems;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        mlir::Value v = b_.create<mlir::memref::LoadOp>(l_, args[0], address(args, r, c, transposed));
        if (v.getType() != result.getElementType()) {
          if (llvm::isa<mlir::FloatType>(v.getType())) v = b_.create<mlir::arith::ExtFOp>(l_, result.getElementType(), v);
          else v = b_.create<mlir::arith::ExtSIOp>(l_, result.getElementType(), v);
        }
        elems.push_back(v);
      }
    return b_.create<mlir::vector::FromElementsOp>(l_, result, elems);
  }

  // K rank-1 updates on whole tiles (K = 16, or 32 for int8): C += column k of A (spread along
  // rows) * row k of B (spread along columns). Small IR (LLVM's vectorisers choke on 4096 scalar
  // fmas); targets without 256-wide vectors scalarise it back to those fmas. int8 tiles are i32
  // here: products of int8 values are exact in i32, and the sums wrap as the hardware's do.
  mlir::Value mma(mlir::Value a, mlir::Value bm, mlir::Value c) {
    int64_t depth = llvm::cast<mlir::VectorType>(a.getType()).getNumElements() / kMatrixTile;
    bool integer = llvm::isa<mlir::IntegerType>(llvm::cast<mlir::VectorType>(c.getType()).getElementType());
    mlir::Value acc = c;
    for (int64_t k = 0; k < depth; ++k) {
      llvm::SmallVector<int64_t> column, row;
      for (int64_t i = 0; i < kMatrixTile; ++i)
        for (int64_t j = 0; j < kMatrixTile; ++j) {
          column.push_back(i * depth + k);
          row.push_back(k * kMatrixTile + j);
        }
      mlir::Value ak = b_.create<mlir::vector::ShuffleOp>(l_, a, a, column);
      mlir::Value bk = b_.create<mlir::vector::ShuffleOp>(l_, bm, bm, row);
      if (integer)
        acc = b_.create<mlir::arith::AddIOp>(l_, b_.create<mlir::arith::MulIOp>(l_, ak, bk), acc);
      else
        acc = b_.create<mlir::math::FmaOp>(l_, ak, bk, acc);
    }
    return acc;
  }

  // Butterfly within each row: after the steps 8, 4, 2, 1 every element (i, j) has combined all
  // of row i, in the same order for every j (so the broadcast is exact, not merely close).
  mlir::Value row_reduce(mlir::Value c, bool max) {
    mlir::Value r = c;
    for (int64_t step = kMatrixTile / 2; step >= 1; step /= 2) {
      llvm::SmallVector<int64_t> partner;
      for (int64_t e = 0; e < kMatrixElements; ++e) partner.push_back(e ^ step);
      mlir::Value other = b_.create<mlir::vector::ShuffleOp>(l_, r, r, partner);
      // Each pair adds the same two values whichever is first: a + b == b + a in IEEE arithmetic.
      r = max ? b_.create<mlir::arith::MaxNumFOp>(l_, r, other).getResult()
              : b_.create<mlir::arith::AddFOp>(l_, r, other).getResult();
    }
    return r;
  }

  // The tile stays f32 in the fallback, holding the values T has: f32 -> T -> f32 per element.
  mlir::Value round_to(mlir::Value c) {
    mlir::Type t = to_a_;
    llvm::SmallVector<mlir::Value> elems;
    for (int64_t e = 0; e < kMatrixElements; ++e) {
      mlir::Value v = b_.create<mlir::vector::ExtractOp>(l_, c, e);
      v = b_.create<mlir::arith::TruncFOp>(l_, t, v);
      elems.push_back(b_.create<mlir::arith::ExtFOp>(l_, b_.getF32Type(), v));
    }
    return b_.create<mlir::vector::FromElementsOp>(l_, c.getType(), elems);
  }

  // Lane `lane` writes the rows r with r % subgroup_size == lane: every element once. By rows,
  // not by elements: 16 guarded blocks rather than 256 keep SPIR-V consumers (lavapipe's
  // compiler, SPIRV-Cross) fast.
  void store(mlir::ValueRange args) {
    mlir::Value lane = b_.create<mlir::gpu::LaneIdOp>(l_, mlir::IntegerAttr());
    mlir::Value size = b_.create<mlir::gpu::SubgroupSizeOp>(l_, mlir::IntegerAttr());
    mlir::Type elem = llvm::cast<mlir::MemRefType>(args[0].getType()).getElementType();
    for (int64_t r = 0; r < kMatrixTile; ++r) {
      mlir::Value mine = b_.create<mlir::arith::CmpIOp>(
          l_, mlir::arith::CmpIPredicate::eq, b_.create<mlir::arith::RemUIOp>(l_, index(r), size), lane);
      auto branch = b_.create<mlir::scf::IfOp>(l_, mine, /*withElseRegion=*/false);
      mlir::OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToStart(branch.thenBlock());
      for (int64_t c = 0; c < kMatrixTile; ++c) {
        mlir::Value v = b_.create<mlir::vector::ExtractOp>(l_, args[3], r * kMatrixTile + c);
        if (elem != v.getType()) v = b_.create<mlir::arith::TruncFOp>(l_, elem, v);
        b_.create<mlir::memref::StoreOp>(l_, v, args[0], address(args, r, c, false));
      }
    }
  }

  void replace(mlir::Value v) { call_->getResult(0).replaceAllUsesWith(v); }

  mlir::OpBuilder b_;
  mlir::Location l_;
  mlir::Operation* call_;
  mlir::Type to_a_;
};

}  // namespace

void expand_matrix_ops(mlir::ModuleOp module, llvm::function_ref<bool(mlir::func::FuncOp)> only) {
  auto chosen = [&](mlir::func::FuncOp fn) { return !fn.isExternal() && (!only || only(fn)); };
  struct Intrinsic {
    mlir::Operation* op;
    MatrixOp kind;
    mlir::Type to_a;   // qv.matrix_to_a's T, which retyping replaces with f32
  };
  llvm::SmallVector<Intrinsic> calls;
  for (mlir::func::FuncOp fn : module.getOps<mlir::func::FuncOp>())
    if (chosen(fn))
      fn.walk([&](mlir::Operation* op) {
        if (auto kind = matrix_op_of(op)) {
          mlir::Type to_a = *kind == MatrixOp::ToA ? llvm::cast<mlir::VectorType>(op->getResult(0).getType()).getElementType()
                                                   : mlir::Type();
          calls.push_back({op, *kind, to_a});
        }
      });
  if (calls.empty()) return;
  // Every lane holds the whole tile as f32, int8 tiles as i32 (inputs widen exactly).
  for (mlir::func::FuncOp fn : module.getOps<mlir::func::FuncOp>())
    if (chosen(fn))
      retype_matrix_values(fn, [](mlir::VectorType t) {
        if (is_int8_matrix_type(t))
          return mlir::VectorType::get({t.getNumElements()}, mlir::IntegerType::get(t.getContext(), 32));
        return mlir::VectorType::get({kMatrixElements}, mlir::Float32Type::get(t.getContext()));
      });
  for (const Intrinsic& call : calls) FallbackExpander(call.op, call.to_a).expand(call.kind);
}

}  // namespace quiver::ir
