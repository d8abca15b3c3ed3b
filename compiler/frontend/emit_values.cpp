// The kernel language's value classes: qv::half, qv::bf16 (16-bit float storage types with
// explicit round-to-nearest-even conversions) and qv::vec<T, N> (an MLIR vector value).
// Clang sees them as classes, so their uses arrive as constructor calls, conversion operators,
// (trivial) copy assignments and overloaded operators; this file maps each to plain values.
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "clang/AST/DeclCXX.h"
#include "ir/dialect/QvDialect.h"
#include "ir/intrinsics.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace quiver::frontend {

namespace arith = mlir::arith;
using format::ScalarType;

static bool is_16bit_float(std::optional<ScalarType> k) {
  return k && (*k == ScalarType::F16 || *k == ScalarType::BF16);
}

FunctionEmitter::RValue FunctionEmitter::emit_construct(const clang::CXXConstructExpr* e) {
  clang::QualType t = e->getType();
  mlir::Location l = loc(e->getBeginLoc());
  const clang::CXXConstructorDecl* ctor = e->getConstructor();
  if (!is_value_record(t))
    error(e->getBeginLoc(), "constructing objects of type '" + t.getAsString() + "' is not supported in kernel code");
  if (ctor->isCopyOrMoveConstructor() && e->getNumArgs() == 1) return {emit_scalar(e->getArg(0))};
  mlir::Type type = type_of(t, e->getBeginLoc());
  if (e->getNumArgs() == 0)   // `qv::half h;` / `qv::float4 v{};`: contents are zero
    return {builder_.create<arith::ConstantOp>(l, llvm::cast<mlir::TypedAttr>(builder_.getZeroAttr(type)))};
  if (!has_qv_annotation(ctor, "qv.builtin"))
    error(e->getBeginLoc(), "constructor of '" + t.getAsString() + "' is not supported in kernel code");
  // qv::matrix_acc<float>(c) of an int32 accumulator (int8 products): each element converted,
  // rounded to nearest even where it has more than 24 significant bits (docs/matrix.md).
  clang::QualType from_elem, to_elem;
  if (e->getNumArgs() == 1 && is_matrix(e->getArg(0)->getType(), &from_elem) && is_matrix(t, &to_elem)) {
    if (scalar_kind(from_elem) != ScalarType::I32 || scalar_kind(to_elem) != ScalarType::F32)
      error(e->getBeginLoc(), "a matrix tile converts only from qv::matrix_acc<int32_t> to qv::matrix_acc<float> (not '" +
                                  canonical_type_name(e->getArg(0)->getType()) + "' to '" + canonical_type_name(t) + "')");
    return {builder_.create<arith::SIToFPOp>(l, type, emit_scalar(e->getArg(0)))};
  }
  std::vector<mlir::Value> args;
  for (const clang::Expr* a : e->arguments()) args.push_back(emit_scalar(a));
  if (auto vt = llvm::dyn_cast<mlir::VectorType>(type)) {
    if (args.size() == 1) return {builder_.create<mlir::vector::BroadcastOp>(l, vt, args[0])};
    return {builder_.create<mlir::vector::FromElementsOp>(l, vt, args)};
  }
  // qv::half(float) / qv::bf16(float): IEEE round to nearest even (arith.truncf's default).
  return {builder_.create<arith::TruncFOp>(l, type, args[0])};
}

mlir::Value FunctionEmitter::vector_arith(clang::OverloadedOperatorKind op, clang::QualType vec_type, mlir::Value a,
                                          mlir::Value b, clang::SourceLocation where) {
  clang::QualType elem;
  value_element(vec_type, &elem);
  auto k = scalar_kind(elem);
  if (!k || is_16bit_float(k) || *k == ScalarType::Bool)
    error(where, "arithmetic on '" + canonical_type_name(vec_type) +
                     "' is not supported: half and bf16 are storage types (convert the elements to float)");
  mlir::Location l = loc(where);
  auto vt = llvm::cast<mlir::VectorType>(a.getType());
  if (b && b.getType() != vt) b = builder_.create<mlir::vector::BroadcastOp>(l, vt, b);
  bool fp = is_float(*k), sg = is_signed(*k);
  switch (op) {
    case clang::OO_Plus: case clang::OO_PlusEqual:
      return fp ? builder_.create<arith::AddFOp>(l, a, b).getResult() : builder_.create<arith::AddIOp>(l, a, b).getResult();
    case clang::OO_Minus: case clang::OO_MinusEqual:
      if (!b) return fp ? builder_.create<arith::NegFOp>(l, a).getResult()
                        : builder_.create<arith::SubIOp>(l, builder_.create<arith::ConstantOp>(
                              l, llvm::cast<mlir::TypedAttr>(builder_.getZeroAttr(vt))), a).getResult();
      return fp ? builder_.create<arith::SubFOp>(l, a, b).getResult() : builder_.create<arith::SubIOp>(l, a, b).getResult();
    case clang::OO_Star: case clang::OO_StarEqual:
      return fp ? builder_.create<arith::MulFOp>(l, a, b).getResult() : builder_.create<arith::MulIOp>(l, a, b).getResult();
    case clang::OO_Slash: case clang::OO_SlashEqual:
      if (fp) return builder_.create<arith::DivFOp>(l, a, b);
      return sg ? builder_.create<arith::DivSIOp>(l, a, b).getResult() : builder_.create<arith::DivUIOp>(l, a, b).getResult();
    default:
      error(where, "this qv::vec operator is not supported");
  }
}

// A constant element index of a qv::vec subscript.
static int lane_of(clang::ASTContext& ast, const clang::Expr* index, uint32_t n, bool& ok) {
  clang::Expr::EvalResult r;
  ok = index->EvaluateAsInt(r, ast) && r.Val.getInt().getZExtValue() < n;
  return ok ? static_cast<int>(r.Val.getInt().getZExtValue()) : 0;
}

std::optional<FunctionEmitter::LValue> FunctionEmitter::try_emit_value_lvalue(const clang::Expr* e) {
  const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(e);
  if (!op || op->getNumArgs() == 0 || !is_value_record(op->getArg(0)->getType())) return std::nullopt;
  if (op->getOperator() == clang::OO_Subscript) {
    uint32_t n = 0;
    is_vec(op->getArg(0)->getType(), nullptr, &n);
    bool ok = false;
    int lane = lane_of(ast_, op->getArg(1), n, ok);
    if (!ok)
      error(op->getArg(1)->getBeginLoc(), "a qv::vec element index must be a constant from 0 to " + std::to_string(n - 1));
    LValue base = emit_lvalue(op->getArg(0));
    if (base.lane >= 0) error(e->getBeginLoc(), "nested vectors are not supported");
    base.lane = lane;
    return base;
  }
  if (op->getOperator() == clang::OO_Equal || op->getOperator() == clang::OO_PlusEqual ||
      op->getOperator() == clang::OO_MinusEqual || op->getOperator() == clang::OO_StarEqual ||
      op->getOperator() == clang::OO_SlashEqual) {
    emit(op);
    return emit_lvalue(op->getArg(0));
  }
  return std::nullopt;
}

std::optional<FunctionEmitter::RValue> FunctionEmitter::try_emit_value_call(const clang::CallExpr* e,
                                                                           const clang::FunctionDecl* fn) {
  mlir::Location l = loc(e->getBeginLoc());
  // static_cast<float>(h): the conversion operator of qv::half / qv::bf16, exact.
  if (const auto* mc = llvm::dyn_cast<clang::CXXMemberCallExpr>(e)) {
    const clang::Expr* obj = mc->getImplicitObjectArgument();
    if (!obj || !is_value_record(obj->getType())) return std::nullopt;
    if (!llvm::isa<clang::CXXConversionDecl>(fn) || !has_qv_annotation(fn, "qv.builtin"))
      error(e->getBeginLoc(), "member function '" + fn->getNameAsString() + "' is not supported in kernel code");
    mlir::Value v = emit_scalar(obj);
    return RValue{builder_.create<arith::ExtFOp>(l, builder_.getF32Type(), v).getResult()};
  }
  const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(e);
  if (!op) return std::nullopt;
  bool first_is_value = op->getNumArgs() > 0 && is_value_record(op->getArg(0)->getType());
  bool second_is_vec = op->getNumArgs() > 1 && value_element(op->getArg(1)->getType(), nullptr);
  if (!first_is_value && !second_is_vec) return std::nullopt;
  clang::OverloadedOperatorKind kind = op->getOperator();
  if (kind == clang::OO_Subscript) return RValue{load(emit_lvalue(e), l)};
  if (kind == clang::OO_Equal) {   // trivial copy / move assignment of a value class
    mlir::Value v = emit_scalar(op->getArg(1));
    store(emit_lvalue(op->getArg(0)), v, l);
    return RValue{v};
  }
  if (!has_qv_annotation(fn, "qv.builtin"))
    error(e->getBeginLoc(), "operator '" + std::string(clang::getOperatorSpelling(kind)) + "' on '" +
                                op->getArg(0)->getType().getAsString() + "' is not supported in kernel code");
  if (!first_is_value) {   // T op vec (free operators: 2.0f * v, 1.0f + v)
    mlir::Value v = emit_scalar(op->getArg(1));
    mlir::Value s = emit_scalar(op->getArg(0));
    return RValue{vector_arith(kind, op->getArg(1)->getType(), v, s, op->getOperatorLoc())};
  }
  clang::QualType vt = op->getArg(0)->getType().getNonReferenceType();
  if (op->getNumArgs() == 1) return RValue{vector_arith(kind, vt, emit_scalar(op->getArg(0)), {}, op->getOperatorLoc())};
  bool compound = kind == clang::OO_PlusEqual || kind == clang::OO_MinusEqual || kind == clang::OO_StarEqual ||
                  kind == clang::OO_SlashEqual;
  if (compound) {
    LValue dst = emit_lvalue(op->getArg(0));
    mlir::Value r = vector_arith(kind, vt, load(dst, l), emit_scalar(op->getArg(1)), op->getOperatorLoc());
    store(dst, r, l);
    return RValue{r};
  }
  mlir::Value a = emit_scalar(op->getArg(0));
  mlir::Value b = emit_scalar(op->getArg(1));
  return RValue{vector_arith(kind, vt, a, b, op->getOperatorLoc())};
}

// qv::load<N>(p) / qv::store(p, v): one vector access at the element p points at.
FunctionEmitter::RValue FunctionEmitter::emit_vector_memory(const clang::CallExpr* e, const std::string& name) {
  mlir::Location l = loc(e->getBeginLoc());
  clang::QualType pointee = e->getArg(0)->getType()->getPointeeType();
  auto k = scalar_kind(pointee);
  if (!k || *k == ScalarType::Bool)
    error(e->getArg(0)->getBeginLoc(), "qv::" + name + " needs a pointer to integer or floating-point elements (not '" +
                                           pointee.getAsString() + "')");
  Pointer p = emit_pointer(e->getArg(0));
  if (name == "load") {
    auto vt = llvm::cast<mlir::VectorType>(type_of(e->getType(), e->getBeginLoc()));
    return {builder_.create<mlir::vector::LoadOp>(l, vt, p.mem, mlir::ValueRange{p.offset})};
  }
  if (pointee.isConstQualified()) error(e->getArg(0)->getBeginLoc(), "qv::store needs a pointer to non-const memory");
  mlir::Value v = emit_scalar(e->getArg(1));
  builder_.create<mlir::vector::StoreOp>(l, v, p.mem, mlir::ValueRange{p.offset});
  return {};
}

// qv::copy_async (docs/async_copy.md): a 16-byte vector load + store marked ir::kAsyncCopyAttr,
// which the PTX target turns into cp.async; the group marks are qv.copy_async_commit / _wait.
FunctionEmitter::RValue FunctionEmitter::emit_async_copy(const clang::CallExpr* e, const std::string& name) {
  mlir::Location l = loc(e->getBeginLoc());
  if (name == "copy_async_commit") {
    builder_.create<ir::qv::CopyAsyncCommitOp>(l);
    return {};
  }
  if (name == "copy_async_wait") {
    std::optional<llvm::APSInt> n = e->getNumArgs() == 1 ? e->getArg(0)->getIntegerConstantExpr(ast_) : std::nullopt;
    if (!n || n->isNegative() || n->getZExtValue() > 7)
      error(e->getBeginLoc(), "qv::copy_async_wait takes one constant count of groups, 0 to 7");
    builder_.create<ir::qv::CopyAsyncWaitOp>(l, static_cast<uint32_t>(n->getZExtValue()));
    return {};
  }
  if (name != "copy_async" || e->getNumArgs() != 2)
    error(e->getBeginLoc(), "qv::" + name + " is not a builtin (qv::copy_async(dst, src) copies 16 bytes)");
  clang::QualType pointee = e->getArg(0)->getType()->getPointeeType();
  auto k = scalar_kind(pointee);
  if (!k || *k == ScalarType::Bool)
    error(e->getArg(0)->getBeginLoc(), "qv::copy_async needs pointers to integer or floating-point elements (not '" +
                                           pointee.getAsString() + "')");
  if (pointee.isConstQualified()) error(e->getArg(0)->getBeginLoc(), "qv::copy_async needs a non-const destination");
  Pointer dst = emit_pointer(e->getArg(0));
  Pointer src = emit_pointer(e->getArg(1));
  mlir::Type elem = llvm::cast<mlir::MemRefType>(dst.mem.getType()).getElementType();
  unsigned bytes = elem.getIntOrFloatBitWidth() / 8;
  if (bytes == 0 || bytes > 16)
    error(e->getArg(0)->getBeginLoc(), "qv::copy_async cannot copy elements of '" + pointee.getAsString() + "'");
  auto vt = mlir::VectorType::get({static_cast<int64_t>(16 / bytes)}, elem);
  auto load = builder_.create<mlir::vector::LoadOp>(l, vt, src.mem, mlir::ValueRange{src.offset});
  auto store = builder_.create<mlir::vector::StoreOp>(l, load.getResult(), dst.mem, mlir::ValueRange{dst.offset});
  load->setAttr(ir::kAsyncCopyAttr, builder_.getUnitAttr());
  store->setAttr(ir::kAsyncCopyAttr, builder_.getUnitAttr());
  return {};
}

}  // namespace quiver::frontend
