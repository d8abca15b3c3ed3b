// The matrix-unit builtins (docs/matrix.md): each becomes an operation of the qv dialect
// (compiler/ir/dialect; tiles: compiler/ir/matrix.h, block_tiles.h) that the target lowers to
// its matrix unit or to the fallback.
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "ir/block_tiles.h"
#include "ir/dialect/QvDialect.h"
#include "ir/matrix.h"
#include "ir/warpgroup.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace quiver::frontend {

using format::ScalarType;

namespace {

std::optional<ir::MatrixOp> matrix_builtin(const std::string& name) {
  if (name == "load_matrix_a") return ir::MatrixOp::LoadA;
  if (name == "load_matrix_b") return ir::MatrixOp::LoadB;
  if (name == "load_matrix_b_transposed") return ir::MatrixOp::LoadBT;
  if (name == "load_matrix_acc") return ir::MatrixOp::LoadAcc;
  if (name == "store_matrix") return ir::MatrixOp::Store;
  if (name == "mma") return ir::MatrixOp::Mma;
  if (name == "row_max") return ir::MatrixOp::RowMax;
  if (name == "row_sum") return ir::MatrixOp::RowSum;
  if (name == "to_matrix_a") return ir::MatrixOp::ToA;
  return std::nullopt;
}

}  // namespace

// qv::warpgroup_mma / _bt, qv::warpgroup_wait, qv::store_warpgroup (docs/matrix.md "Warpgroups");
// 16-bit operands with float accumulators, int8 operands (B N x K only) with int32 ones.
std::optional<FunctionEmitter::RValue> FunctionEmitter::try_emit_warpgroup_builtin(const clang::CallExpr* e,
                                                                                  const std::string& name) {
  mlir::Location l = loc(e->getBeginLoc());
  auto element = [&](const clang::Expr* p) { return scalar_kind(p->getType()->getPointeeType()); };
  auto is16 = [](std::optional<ScalarType> k) { return k && (*k == ScalarType::F16 || *k == ScalarType::BF16); };
  if (name == "warpgroup_wait") {
    std::optional<llvm::APSInt> n = e->getNumArgs() == 1 ? e->getArg(0)->getIntegerConstantExpr(ast_) : std::nullopt;
    if (!n || n->isNegative() || n->getZExtValue() > 7)
      error(e->getBeginLoc(), "qv::warpgroup_wait takes one constant count of batches, 0 to 7");
    builder_.create<ir::qv::WarpgroupWaitOp>(l, static_cast<int32_t>(n->getZExtValue()));
    return RValue{};
  }
  if (name == "warpgroup_commit") {
    if (e->getNumArgs() != 0) error(e->getBeginLoc(), "qv::warpgroup_commit takes no arguments");
    builder_.create<ir::qv::WarpgroupCommitOp>(l);
    return RValue{};
  }
  if (name == "warpgroup_barrier") {
    if (e->getNumArgs() != 0) error(e->getBeginLoc(), "qv::warpgroup_barrier takes no arguments");
    builder_.create<ir::qv::WarpgroupBarrierOp>(l);
    uses_barrier_ = true;   // a block barrier on the fallback (the CPU runs the kernel as fibers)
    return RValue{};
  }
  if (name == "store_warpgroup") {
    // (p, stride, c) or, for the part of a tile inside an edge, (p, stride, c, rows, cols).
    bool bounded = e->getNumArgs() == 5;
    clang::QualType acc_elem;
    if ((e->getNumArgs() != 3 && !bounded) || !is_warpgroup_acc(e->getArg(2)->getType(), &acc_elem))
      error(e->getBeginLoc(), "qv::store_warpgroup takes (pointer, stride, warpgroup_acc[, rows, cols])");
    bool int_acc = scalar_kind(acc_elem) == ScalarType::I32;
    auto k = element(e->getArg(0));
    bool const_dst = e->getArg(0)->getType()->getPointeeType().isConstQualified();
    if (int_acc && (k != ScalarType::I32 || const_dst || bounded))
      error(e->getArg(0)->getBeginLoc(), "qv::store_warpgroup of a qv::warpgroup_acc<int32_t, N> takes (pointer to "
                                         "non-const int32_t, stride, c) (convert it with qv::warpgroup_to_float for "
                                         "other element types or edges)");
    if (!int_acc && (!(is16(k) || k == ScalarType::F32) || const_dst))
      error(e->getArg(0)->getBeginLoc(), "qv::store_warpgroup needs a pointer to non-const float, qv::half or qv::bf16 "
                                         "elements (not '" + e->getArg(0)->getType().getAsString() + "')");
    Pointer p = emit_pointer(e->getArg(0));
    mlir::Value stride = emit_scalar(e->getArg(1)), c = emit_scalar(e->getArg(2));
    if (bounded) {
      mlir::Value rows = emit_scalar(e->getArg(3)), cols = emit_scalar(e->getArg(4));
      builder_.create<ir::qv::WarpgroupStoreBoundedOp>(l, p.mem, p.offset, stride, c, rows, cols);
    } else {
      builder_.create<ir::qv::WarpgroupStoreOp>(l, p.mem, p.offset, stride, c);
    }
    return RValue{};
  }
  // int32 accumulators to float, and per-column values: element-wise IR on the thread's share.
  if (name == "warpgroup_to_float") {
    clang::QualType acc_elem;
    if (e->getNumArgs() != 1 || !is_warpgroup_acc(e->getArg(0)->getType(), &acc_elem) ||
        scalar_kind(acc_elem) != ScalarType::I32)
      error(e->getBeginLoc(), "qv::warpgroup_to_float takes one qv::warpgroup_acc<int32_t, N>");
    mlir::Value c = emit_scalar(e->getArg(0));
    auto vt = mlir::VectorType::get(llvm::cast<mlir::VectorType>(c.getType()).getShape(), builder_.getF32Type());
    return RValue{builder_.create<mlir::arith::SIToFPOp>(l, vt, c).getResult()};
  }
  if (name == "warpgroup_cols") {
    auto vt = llvm::dyn_cast_or_null<mlir::VectorType>(type_of(e->getType(), e->getBeginLoc()));
    if (e->getNumArgs() != 1 || element(e->getArg(0)) != ScalarType::F32 || !vt)
      error(e->getBeginLoc(), "qv::warpgroup_cols<N> takes one pointer to float");
    Pointer p = emit_pointer(e->getArg(0));
    ir::WarpgroupLane lane = ir::warpgroup_lane(builder_, l);
    mlir::Value base = builder_.create<mlir::arith::AddIOp>(l, p.offset, lane.col);
    auto pair_type = mlir::VectorType::get({2}, builder_.getF32Type());
    std::vector<mlir::Value> elems(vt.getNumElements());
    for (int64_t i = 0; i < vt.getNumElements() / 4; ++i) {   // columns 8i + 2q + {0, 1}, both rows
      mlir::Value eight_i = builder_.create<mlir::arith::ConstantIndexOp>(l, 8 * i);
      mlir::Value at = builder_.create<mlir::arith::AddIOp>(l, base, eight_i);
      mlir::Value pair = builder_.create<mlir::vector::LoadOp>(l, pair_type, p.mem, mlir::ValueRange{at});
      for (int64_t s = 0; s < 2; ++s) {
        mlir::Value v = builder_.create<mlir::vector::ExtractOp>(l, pair, s);
        elems[4 * i + s] = elems[4 * i + 2 + s] = v;
      }
    }
    return RValue{builder_.create<mlir::vector::FromElementsOp>(l, vt, elems).getResult()};
  }
  if (name == "store_warpgroup_swizzled") {
    if (e->getNumArgs() != 3 || !is_warpgroup_acc(e->getArg(2)->getType()))
      error(e->getBeginLoc(), "qv::store_warpgroup_swizzled takes (pointer, panel_stride, warpgroup_acc)");
    if (!is16(element(e->getArg(0))) || e->getArg(0)->getType()->getPointeeType().isConstQualified())
      error(e->getArg(0)->getBeginLoc(), "qv::store_warpgroup_swizzled needs a pointer to non-const qv::half or "
                                         "qv::bf16 elements (not '" + e->getArg(0)->getType().getAsString() + "')");
    Pointer p = emit_pointer(e->getArg(0));
    mlir::Value panel_stride = emit_scalar(e->getArg(1)), c = emit_scalar(e->getArg(2));
    builder_.create<ir::qv::WarpgroupStoreSwizzledOp>(l, p.mem, p.offset, panel_stride, c);
    return RValue{};
  }
  // The thread's share is the same on every target (ir/warpgroup.h), so these are plain
  // element-wise operations on it.
  if (name == "warpgroup_row_max" || name == "warpgroup_row_sum") {
    if (e->getNumArgs() != 1 || !is_warpgroup_acc(e->getArg(0)->getType()))
      error(e->getBeginLoc(), "qv::" + name + " takes one qv::warpgroup_acc");
    mlir::Value c = emit_scalar(e->getArg(0));
    int64_t count = llvm::cast<mlir::VectorType>(c.getType()).getNumElements();
    bool max = name == "warpgroup_row_max";
    // A pairwise tree: log2(N / 2) dependent steps instead of N / 2 - 1 (an online softmax waits
    // on the maximum before any exp2, with one warp per scheduler in FlashAttention-3's schedule).
    mlir::Value rows[2];
    for (int64_t h = 0; h < 2; ++h) {
      llvm::SmallVector<mlir::Value> level;
      for (int64_t i = 0; i < count / 4; ++i)
        for (int64_t s = 0; s < 2; ++s) level.push_back(builder_.create<mlir::vector::ExtractOp>(l, c, 4 * i + 2 * h + s));
      while (level.size() > 1) {
        llvm::SmallVector<mlir::Value> next;
        for (size_t i = 0; i + 1 < level.size(); i += 2)
          next.push_back(max ? builder_.create<mlir::arith::MaxNumFOp>(l, level[i], level[i + 1]).getResult()
                             : builder_.create<mlir::arith::AddFOp>(l, level[i], level[i + 1]).getResult());
        if (level.size() % 2) next.push_back(level.back());
        level = std::move(next);
      }
      rows[h] = level[0];
    }
    auto vt = mlir::VectorType::get({2}, builder_.getF32Type());
    return RValue{builder_.create<mlir::vector::FromElementsOp>(l, vt, mlir::ValueRange{rows[0], rows[1]}).getResult()};
  }
  if (name == "warpgroup_thread_rows") {
    ir::WarpgroupLane lane = ir::warpgroup_lane(builder_, l);
    mlir::Value rows[2];
    for (int64_t h = 0; h < 2; ++h)
      rows[h] = builder_.create<mlir::arith::IndexCastUIOp>(
          l, builder_.getI32Type(),
          builder_.create<mlir::arith::AddIOp>(l, lane.row, builder_.create<mlir::arith::ConstantIndexOp>(l, 8 * h)));
    auto vt = mlir::VectorType::get({2}, builder_.getI32Type());
    return RValue{builder_.create<mlir::vector::FromElementsOp>(l, vt, mlir::ValueRange{rows[0], rows[1]}).getResult()};
  }
  if (name == "warpgroup_mask_columns") {
    if (e->getNumArgs() != 3 || !is_warpgroup_acc(e->getArg(0)->getType()))
      error(e->getBeginLoc(), "qv::warpgroup_mask_columns takes (warpgroup_acc, vec<int32_t, 2> last, float fill)");
    mlir::Value c = emit_scalar(e->getArg(0)), last = emit_scalar(e->getArg(1)), fill = emit_scalar(e->getArg(2));
    auto vt = llvm::cast<mlir::VectorType>(c.getType());
    // Column 8i + 2q + s is kept iff 8i + s <= last[h] - 2q: per row one subtraction, then
    // each element compares a constant with it.
    ir::WarpgroupLane lane = ir::warpgroup_lane(builder_, l);
    mlir::Value two_q = builder_.create<mlir::arith::IndexCastUIOp>(l, builder_.getI32Type(), lane.col);
    mlir::Value limit[2];
    for (int64_t h = 0; h < 2; ++h)
      limit[h] = builder_.create<mlir::arith::SubIOp>(l, builder_.create<mlir::vector::ExtractOp>(l, last, h), two_q);
    std::vector<mlir::Value> elems(vt.getNumElements());
    for (int64_t i = 0; i < vt.getNumElements() / 4; ++i)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < 2; ++s) {
          int64_t at = 4 * i + 2 * h + s;
          mlir::Value col = builder_.create<mlir::arith::ConstantIntOp>(l, 8 * i + s, 32);
          mlir::Value keep = builder_.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::sle, col, limit[h]);
          elems[at] = builder_.create<mlir::arith::SelectOp>(l, keep, builder_.create<mlir::vector::ExtractOp>(l, c, at), fill);
        }
    return RValue{builder_.create<mlir::vector::FromElementsOp>(l, vt, elems).getResult()};
  }
  if (name == "warpgroup_rows" || name == "warpgroup_row_index" || name == "warpgroup_col_index") {
    auto vt = llvm::dyn_cast_or_null<mlir::VectorType>(type_of(e->getType(), e->getBeginLoc()));
    if (!vt || !is_warpgroup_acc(e->getType())) error(e->getBeginLoc(), "qv::" + name + " returns a qv::warpgroup_acc");
    int64_t count = vt.getNumElements();
    mlir::Value rows[2], cols[2];
    ir::WarpgroupLane lane{};
    if (name == "warpgroup_rows") {
      if (e->getNumArgs() != 1) error(e->getBeginLoc(), "qv::warpgroup_rows takes one qv::vec<float, 2>");
      mlir::Value v = emit_scalar(e->getArg(0));
      for (int64_t h = 0; h < 2; ++h) rows[h] = builder_.create<mlir::vector::ExtractOp>(l, v, h);
    } else {
      lane = ir::warpgroup_lane(builder_, l);
    }
    auto as_float = [&](mlir::Value index, int64_t plus) -> mlir::Value {
      mlir::Value i = builder_.create<mlir::arith::AddIOp>(l, index, builder_.create<mlir::arith::ConstantIndexOp>(l, plus));
      mlir::Value i32 = builder_.create<mlir::arith::IndexCastUIOp>(l, builder_.getI32Type(), i);
      return builder_.create<mlir::arith::UIToFPOp>(l, builder_.getF32Type(), i32);
    };
    std::vector<mlir::Value> elems(count);
    for (int64_t i = 0; i < count / 4; ++i)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < 2; ++s) {
          mlir::Value v = name == "warpgroup_rows"      ? rows[h]
                          : name == "warpgroup_row_index" ? as_float(lane.row, 8 * h)
                                                          : as_float(lane.col, 8 * i + s);
          elems[4 * i + 2 * h + s] = v;
        }
    return RValue{builder_.create<mlir::vector::FromElementsOp>(l, vt, elems).getResult()};
  }
  bool bt = name == "warpgroup_mma_bt";
  if (!bt && name != "warpgroup_mma") return std::nullopt;
  size_t want = bt ? 3 : 4;
  clang::QualType acc_elem;
  if (e->getNumArgs() != want || !is_warpgroup_acc(e->getArg(want - 1)->getType(), &acc_elem))
    error(e->getBeginLoc(), bt ? "qv::warpgroup_mma_bt takes (a, bt, warpgroup_acc)"
                               : "qv::warpgroup_mma takes (a, b, panel_stride, warpgroup_acc)");
  // Hopper's 8-bit products (wgmma ... .s32.s8.s8) read both operands K-major only.
  bool int8 = element(e->getArg(0)) == ScalarType::I8 || element(e->getArg(1)) == ScalarType::I8;
  if (int8 && !bt)
    error(e->getBeginLoc(), "qv::warpgroup_mma on int8_t: 8-bit warpgroup products read B only K-major; store B as "
                            "its N x K transpose and call qv::warpgroup_mma_bt");
  if (int8 != (scalar_kind(acc_elem) == ScalarType::I32))
    error(e->getArg(want - 1)->getBeginLoc(), "qv::" + name + ": int8_t operands take a qv::warpgroup_acc<int32_t, N>, "
                                              "qv::half and qv::bf16 ones a qv::warpgroup_acc<float, N>");
  std::vector<mlir::Value> operands;
  for (int i = 0; i < 2; ++i) {
    const clang::Expr* arg = e->getArg(i);
    if (!is16(element(arg)) && element(arg) != ScalarType::I8)
      error(arg->getBeginLoc(), "qv::" + name + " needs pointers to qv::half, qv::bf16 or int8_t elements (not '" +
                                    arg->getType().getAsString() + "')");
    Pointer p = emit_pointer(arg);
    if (!llvm::cast<mlir::MemRefType>(p.mem.getType()).getMemorySpace())
      error(arg->getBeginLoc(), "qv::" + name + " reads its operands from qv::shared arrays (this pointer is not into one)");
    operands.push_back(p.mem);
    operands.push_back(p.offset);
  }
  if (element(e->getArg(0)) != element(e->getArg(1)))
    error(e->getBeginLoc(), "qv::" + name + ": a and b must have the same element type");
  if (bt) {
    mlir::Value c = emit_scalar(e->getArg(2));
    return RValue{builder_.create<ir::qv::WarpgroupMmaBTOp>(l, c.getType(), operands[0], operands[1], operands[2], operands[3], c)
                      .getResult()};
  }
  mlir::Value panel_stride = emit_scalar(e->getArg(2)), c = emit_scalar(e->getArg(3));
  return RValue{builder_.create<ir::qv::WarpgroupMmaOp>(l, c.getType(), operands[0], operands[1], operands[2], operands[3],
                                                        panel_stride, c)
                    .getResult()};
}

// qv::block_mma<K> / block_mma_bt<K>, qv::store_block, qv::load_block (docs/matrix.md "Block tiles").
std::optional<FunctionEmitter::RValue> FunctionEmitter::try_emit_block_builtin(const clang::CallExpr* e,
                                                                              const std::string& name) {
  bool store = name == "store_block", bt = name == "block_mma_bt", load = name == "load_block";
  if (!store && !bt && !load && name != "block_mma") return std::nullopt;
  mlir::Location l = loc(e->getBeginLoc());
  auto element = [&](const clang::Expr* p) { return scalar_kind(p->getType()->getPointeeType()); };
  std::vector<mlir::Value> operands;
  if (load) {
    // The overloads take float (into block_acc<float>) or int32_t (into block_acc<int32_t>).
    if (e->getNumArgs() != 2 || !is_block_acc(e->getType()))
      error(e->getBeginLoc(), "qv::load_block<M, N> takes (pointer to float or int32_t, stride)");
    mlir::Type tile = type_of(e->getType(), e->getBeginLoc());
    Pointer p = emit_pointer(e->getArg(0));
    mlir::Value stride = emit_scalar(e->getArg(1));
    return RValue{builder_.create<ir::qv::BlockLoadOp>(l, tile, p.mem, p.offset, stride).getResult()};
  }
  if (store) {
    clang::QualType acc_elem;
    if (e->getNumArgs() != 3 || !is_block_acc(e->getArg(2)->getType(), &acc_elem))
      error(e->getBeginLoc(), "qv::store_block takes (pointer, stride, block_acc)");
    auto k = element(e->getArg(0));
    // Float accumulators store to float, half or bf16; int32 ones (int8 products) to int32_t.
    if (scalar_kind(acc_elem) == ScalarType::I32) {
      if (k != ScalarType::I32)
        error(e->getArg(0)->getBeginLoc(), "qv::store_block of a qv::block_acc<int32_t, M, N> needs a pointer to int32_t "
                                           "elements (not '" + e->getArg(0)->getType().getAsString() + "')");
    } else if (k != ScalarType::F32 && k != ScalarType::F16 && k != ScalarType::BF16) {
      error(e->getArg(0)->getBeginLoc(), "qv::store_block needs a pointer to float, qv::half or qv::bf16 elements (not '" +
                                             e->getArg(0)->getType().getAsString() + "')");
    }
    if (e->getArg(0)->getType()->getPointeeType().isConstQualified())
      error(e->getArg(0)->getBeginLoc(), "qv::store_block needs a pointer to non-const memory");
    Pointer p = emit_pointer(e->getArg(0));
    mlir::Value stride = emit_scalar(e->getArg(1)), acc = emit_scalar(e->getArg(2));
    builder_.create<ir::qv::BlockStoreOp>(l, p.mem, p.offset, stride, acc);
    return RValue{};
  }
  const clang::FunctionDecl* fn = e->getDirectCallee();
  const clang::TemplateArgumentList* targs = fn ? fn->getTemplateSpecializationArgs() : nullptr;
  if (e->getNumArgs() != 5 || !targs || targs->size() < 1 || targs->get(0).getKind() != clang::TemplateArgument::Integral ||
      !is_block_acc(e->getArg(4)->getType()))
    error(e->getBeginLoc(), "qv::" + name + "<K> takes (a, lda, b, ldb, block_acc)");
  const int64_t depth = targs->get(0).getAsIntegral().getZExtValue();
  if (depth < 16 || depth > 1024 || depth % 16 != 0)
    error(e->getBeginLoc(), "qv::" + name + "<K>: K must be a multiple of 16 from 16 to 1024 (not " +
                                std::to_string(depth) + ")");
  type_of(e->getArg(4)->getType(), e->getArg(4)->getBeginLoc());   // names an unsupported accumulator
  clang::QualType acc_elem;
  is_block_acc(e->getArg(4)->getType(), &acc_elem);
  const bool int8 = scalar_kind(acc_elem) == ScalarType::I32;
  if (int8 && depth % 32 != 0)
    error(e->getBeginLoc(), "qv::" + name + "<K> of int8_t operands: K must be a multiple of 32 (not " +
                                std::to_string(depth) + ")");
  for (int i : {0, 2}) {
    const clang::Expr* arg = e->getArg(i);
    auto k = element(arg);
    if (int8 ? k != ScalarType::I8 : (k != ScalarType::F16 && k != ScalarType::BF16))
      error(arg->getBeginLoc(), "qv::" + name + (int8 ? " into a qv::block_acc<int32_t, M, N> needs pointers to int8_t"
                                                      : " into a qv::block_acc<float, M, N> needs pointers to qv::half or qv::bf16") +
                                    " elements (not '" + arg->getType().getAsString() + "')");
    Pointer p = emit_pointer(arg);
    operands.push_back(p.mem);
    operands.push_back(p.offset);
    operands.push_back(emit_scalar(e->getArg(i + 1)));
  }
  if (element(e->getArg(0)) != element(e->getArg(2)))
    error(e->getBeginLoc(), "qv::" + name + ": a and b must have the same element type");
  mlir::Value acc = emit_scalar(e->getArg(4));
  if (bt)
    return RValue{builder_.create<ir::qv::BlockMmaBTOp>(l, acc.getType(), depth, acc, operands[0], operands[1], operands[2],
                                                        operands[3], operands[4], operands[5])
                      .getResult()};
  return RValue{builder_.create<ir::qv::BlockMmaOp>(l, acc.getType(), depth, acc, operands[0], operands[1], operands[2],
                                                    operands[3], operands[4], operands[5])
                    .getResult()};
}

std::optional<FunctionEmitter::RValue> FunctionEmitter::try_emit_matrix_builtin(const clang::CallExpr* e,
                                                                               const std::string& name) {
  if (auto r = try_emit_warpgroup_builtin(e, name)) return r;
  if (auto r = try_emit_block_builtin(e, name)) return r;
  std::optional<ir::MatrixOp> op = matrix_builtin(name);
  if (!op) return std::nullopt;
  mlir::Location l = loc(e->getBeginLoc());
  auto tile_element = [&](const clang::Expr* arg) {
    clang::QualType elem;
    return is_matrix(arg->getType(), &elem) ? scalar_kind(elem) : std::nullopt;
  };
  std::vector<mlir::Value> operands;
  std::vector<mlir::Type> results;
  if (*op == ir::MatrixOp::Mma) {
    if (e->getNumArgs() != 3) error(e->getBeginLoc(), "qv::mma takes (matrix_a, matrix_b, matrix_acc)");
    for (const clang::Expr* arg : e->arguments()) {
      type_of(arg->getType(), arg->getBeginLoc());   // names an unsupported element type
      operands.push_back(emit_scalar(arg));
    }
    // The pairs the matrix units multiply: 16-bit inputs into float, int8 into int32.
    auto a = tile_element(e->getArg(0)), b = tile_element(e->getArg(1)), c = tile_element(e->getArg(2));
    if (a != b)
      error(e->getArg(1)->getBeginLoc(), "qv::mma needs matrix_a and matrix_b of one element type (not '" +
                                             canonical_type_name(e->getArg(0)->getType()) + "' and '" +
                                             canonical_type_name(e->getArg(1)->getType()) + "')");
    bool int8 = a == ScalarType::I8;
    if (c != (int8 ? ScalarType::I32 : ScalarType::F32))
      error(e->getArg(2)->getBeginLoc(), std::string("qv::mma of ") + (int8 ? "int8_t" : "qv::half or qv::bf16") +
                                             " tiles accumulates in qv::matrix_acc<" + (int8 ? "int32_t" : "float") +
                                             "> (not '" + canonical_type_name(e->getArg(2)->getType()) + "')");
    results.push_back(operands[2].getType());
  } else if (*op == ir::MatrixOp::RowMax || *op == ir::MatrixOp::RowSum || *op == ir::MatrixOp::ToA) {
    if (e->getNumArgs() != 1 || tile_element(e->getArg(0)) != ScalarType::F32)
      error(e->getBeginLoc(), "qv::" + name + " takes one qv::matrix_acc<float>");
    operands.push_back(emit_scalar(e->getArg(0)));
    results.push_back(type_of(e->getType(), e->getBeginLoc()));   // to_matrix_a<T>: names a T that is not 16-bit
    if (*op == ir::MatrixOp::ToA && tile_element(e) == ScalarType::I8)
      error(e->getBeginLoc(), "qv::to_matrix_a makes qv::half or qv::bf16 tiles (not int8_t)");
  } else {
    size_t want = *op == ir::MatrixOp::Store ? 3 : 2;
    if (e->getNumArgs() != want)
      error(e->getBeginLoc(), "qv::" + name + (want == 3 ? " takes (pointer, stride, matrix_acc)" : " takes (pointer, stride)"));
    clang::QualType pointee = e->getArg(0)->getType()->getPointeeType();
    auto k = scalar_kind(pointee);
    bool is16 = k && (*k == ScalarType::F16 || *k == ScalarType::BF16);
    // A store's memory follows its accumulator: float ones to float, half or bf16, int32 ones
    // (int8 products) to int32_t only.
    bool int_acc = *op == ir::MatrixOp::Store && tile_element(e->getArg(2)) == ScalarType::I32;
    bool ok = *op == ir::MatrixOp::LoadAcc ? (k == ScalarType::F32 || k == ScalarType::I32)
              : *op == ir::MatrixOp::Store  ? (int_acc ? k == ScalarType::I32 : (is16 || k == ScalarType::F32))
                                            : (is16 || k == ScalarType::I8);
    if (!ok)
      error(e->getArg(0)->getBeginLoc(),
            "qv::" + name + " needs a pointer to " +
                (*op == ir::MatrixOp::LoadAcc ? std::string("float or int32_t")
                 : int_acc                    ? std::string("int32_t")
                 : *op == ir::MatrixOp::Store ? std::string("float, qv::half or qv::bf16")
                                              : std::string("qv::half, qv::bf16 or int8_t")) +
                " elements (not '" + pointee.getAsString() + "')" +
                (int_acc ? ": an int32 accumulator stores as int32_t; qv::matrix_acc<float>(c) converts it" : ""));
    if (*op == ir::MatrixOp::Store && pointee.isConstQualified())
      error(e->getArg(0)->getBeginLoc(), "qv::store_matrix needs a pointer to non-const memory");
    Pointer p = emit_pointer(e->getArg(0));
    operands = {p.mem, p.offset, emit_scalar(e->getArg(1))};
    if (*op == ir::MatrixOp::Store) operands.push_back(emit_scalar(e->getArg(2)));
    else results.push_back(type_of(e->getType(), e->getBeginLoc()));
  }
  mlir::Operation* tile_op = ir::create_matrix_op(builder_, l, *op, operands, results.empty() ? mlir::Type() : results[0]);
  return RValue{results.empty() ? mlir::Value() : tile_op->getResult(0)};
}

}  // namespace quiver::frontend
