// The matrix-unit builtins (docs/matrix.md): each becomes a call to a matrix intrinsic of the
// neutral IR (compiler/ir/matrix.h) that the target lowers to its matrix unit or to the fallback.
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "ir/matrix.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

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

std::optional<FunctionEmitter::RValue> FunctionEmitter::try_emit_matrix_builtin(const clang::CallExpr* e,
                                                                               const std::string& name) {
  std::optional<ir::MatrixOp> op = matrix_builtin(name);
  if (!op) return std::nullopt;
  mlir::Location l = loc(e->getBeginLoc());
  std::vector<mlir::Value> operands;
  std::vector<mlir::Type> results;
  if (*op == ir::MatrixOp::Mma) {
    if (e->getNumArgs() != 3) error(e->getBeginLoc(), "qv::mma takes (matrix_a, matrix_b, matrix_acc)");
    for (const clang::Expr* arg : e->arguments()) {
      type_of(arg->getType(), arg->getBeginLoc());   // names an unsupported element type
      operands.push_back(emit_scalar(arg));
    }
    results.push_back(operands[2].getType());
  } else if (*op == ir::MatrixOp::RowMax || *op == ir::MatrixOp::RowSum || *op == ir::MatrixOp::ToA) {
    if (e->getNumArgs() != 1 || !is_matrix(e->getArg(0)->getType()))
      error(e->getBeginLoc(), "qv::" + name + " takes one qv::matrix_acc<float>");
    operands.push_back(emit_scalar(e->getArg(0)));
    results.push_back(type_of(e->getType(), e->getBeginLoc()));   // to_matrix_a<T>: names a T that is not 16-bit
  } else {
    size_t want = *op == ir::MatrixOp::Store ? 3 : 2;
    if (e->getNumArgs() != want)
      error(e->getBeginLoc(), "qv::" + name + (want == 3 ? " takes (pointer, stride, matrix_acc)" : " takes (pointer, stride)"));
    clang::QualType pointee = e->getArg(0)->getType()->getPointeeType();
    auto k = scalar_kind(pointee);
    bool is16 = k && (*k == ScalarType::F16 || *k == ScalarType::BF16);
    bool ok = *op == ir::MatrixOp::LoadAcc ? k == ScalarType::F32
              : *op == ir::MatrixOp::Store  ? (is16 || k == ScalarType::F32)
                                            : is16;
    if (!ok)
      error(e->getArg(0)->getBeginLoc(),
            "qv::" + name + " needs a pointer to " +
                (*op == ir::MatrixOp::LoadAcc ? std::string("float")
                 : *op == ir::MatrixOp::Store ? std::string("float, qv::half or qv::bf16")
                                              : std::string("qv::half or qv::bf16")) +
                " elements (not '" + pointee.getAsString() + "')");
    if (*op == ir::MatrixOp::Store && pointee.isConstQualified())
      error(e->getArg(0)->getBeginLoc(), "qv::store_matrix needs a pointer to non-const memory");
    Pointer p = emit_pointer(e->getArg(0));
    operands = {p.mem, p.offset, emit_scalar(e->getArg(1))};
    if (*op == ir::MatrixOp::Store) operands.push_back(emit_scalar(e->getArg(2)));
    else results.push_back(type_of(e->getType(), e->getBeginLoc()));
  }
  std::string callee = ir::matrix_intrinsic_name(*op, mlir::ValueRange(operands).getTypes(), results);
  auto fn_type = builder_.getFunctionType(mlir::ValueRange(operands).getTypes(), results);
  if (auto decl = module_.lookupSymbol<mlir::func::FuncOp>(callee); !decl) {
    mlir::OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToStart(module_.getBody());
    builder_.create<mlir::func::FuncOp>(l, callee, fn_type).setPrivate();
  } else if (decl.getFunctionType() != fn_type) {
    error(e->getBeginLoc(), "internal error: two signatures for " + callee);
  }
  auto call = builder_.create<mlir::func::CallOp>(l, callee, results, operands);
  return RValue{results.empty() ? mlir::Value() : call.getResult(0)};
}

}  // namespace quiver::frontend
