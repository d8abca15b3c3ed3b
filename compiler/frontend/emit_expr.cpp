// Expressions: arithmetic with C++'s signedness rules, casts, lvalues, pointers into buffers,
// short-circuit logic and calls (builtins, or QV_DEVICE / constexpr helpers inlined here).
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"

namespace quiver::frontend {

using format::ScalarType;
namespace arith = mlir::arith;

static bool is_scalar_like(clang::QualType t) {
  return t->isIntegerType() || t->isRealFloatingType() || t->isBooleanType() || t->isEnumeralType();
}

std::optional<mlir::Value> FunctionEmitter::try_constant(const clang::Expr* e) {
  clang::QualType t = e->getType();
  if (e->isValueDependent() || !is_scalar_like(t) || !scalar_kind(t)) return std::nullopt;
  if (llvm::isa<clang::IntegerLiteral, clang::FloatingLiteral, clang::CXXBoolLiteralExpr>(e)) {
    // literals: fast path below still applies
  }
  clang::Expr::EvalResult r;
  if (!e->EvaluateAsRValue(r, ast_) || r.HasSideEffects) return std::nullopt;
  mlir::Location l = loc(e->getBeginLoc());
  mlir::Type mt = type_of(t, e->getBeginLoc());
  if (r.Val.isInt()) {
    llvm::APSInt v = r.Val.getInt();
    return builder_.create<arith::ConstantOp>(
        l, builder_.getIntegerAttr(mt, v.extOrTrunc(mt.getIntOrFloatBitWidth())));
  }
  if (r.Val.isFloat()) {
    llvm::APFloat f = r.Val.getFloat();
    bool lost = false;
    f.convert(llvm::cast<mlir::FloatType>(mt).getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return builder_.create<arith::ConstantOp>(l, builder_.getFloatAttr(mt, f));
  }
  return std::nullopt;
}

mlir::Value FunctionEmitter::emit_scalar(const clang::Expr* e) {
  RValue r = emit(e);
  if (r.is_pointer) error(e->getBeginLoc(), "a pointer cannot be used as a value here");
  if (!r.value) error(e->getBeginLoc(), "expression has no value");
  return r.value;
}

mlir::Value FunctionEmitter::emit_condition(const clang::Expr* e) {
  mlir::Value v = emit_scalar(e);
  if (v.getType().isInteger(1)) return v;
  clang::QualType t = e->getType();
  mlir::Location l = loc(e->getBeginLoc());
  if (llvm::isa<mlir::FloatType>(v.getType()))
    return builder_.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNE, v,
                                          builder_.create<arith::ConstantOp>(l, builder_.getFloatAttr(v.getType(), 0.0)));
  (void)t;
  return builder_.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, v, int_const(v.getType(), 0, l));
}

mlir::Value FunctionEmitter::convert(mlir::Value v, clang::QualType from, clang::QualType to,
                                     clang::SourceLocation where) {
  ScalarType fk = kind_of(from, where), tk = kind_of(to, where);
  mlir::Type tt = value_type(*builder_.getContext(), tk);
  if (v.getType() == tt) return v;
  mlir::Location l = loc(where);
  bool ff = is_float(fk), tf = is_float(tk);
  if (tk == ScalarType::Bool) {
    if (ff) return builder_.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNE, v,
                                                 builder_.create<arith::ConstantOp>(l, builder_.getFloatAttr(v.getType(), 0.0)));
    return builder_.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, v, int_const(v.getType(), 0, l));
  }
  if (ff && tf) {
    unsigned fw = v.getType().getIntOrFloatBitWidth(), tw = tt.getIntOrFloatBitWidth();
    if (fw < tw) return builder_.create<arith::ExtFOp>(l, tt, v);
    if (fw > tw) return builder_.create<arith::TruncFOp>(l, tt, v);
    // f16 <-> bf16: through f32
    mlir::Value wide = builder_.create<arith::ExtFOp>(l, builder_.getF32Type(), v);
    return builder_.create<arith::TruncFOp>(l, tt, wide);
  }
  if (!ff && tf) {
    if (fk == ScalarType::Bool || !is_signed(fk)) return builder_.create<arith::UIToFPOp>(l, tt, v);
    return builder_.create<arith::SIToFPOp>(l, tt, v);
  }
  if (ff && !tf) {
    if (is_signed(tk)) return builder_.create<arith::FPToSIOp>(l, tt, v);
    return builder_.create<arith::FPToUIOp>(l, tt, v);
  }
  unsigned fw = v.getType().getIntOrFloatBitWidth(), tw = tt.getIntOrFloatBitWidth();
  if (fw > tw) return builder_.create<arith::TruncIOp>(l, tt, v);
  if (fk == ScalarType::Bool || !is_signed(fk)) return builder_.create<arith::ExtUIOp>(l, tt, v);
  return builder_.create<arith::ExtSIOp>(l, tt, v);
}

FunctionEmitter::RValue FunctionEmitter::emit(const clang::Expr* e) {
  if (auto c = try_constant(e)) return {*c};
  mlir::Location l = loc(e->getBeginLoc());
  switch (e->getStmtClass()) {
    case clang::Stmt::ParenExprClass:
      return emit(llvm::cast<clang::ParenExpr>(e)->getSubExpr());
    case clang::Stmt::ConstantExprClass:
      return emit(llvm::cast<clang::ConstantExpr>(e)->getSubExpr());
    case clang::Stmt::ExprWithCleanupsClass:
      return emit(llvm::cast<clang::ExprWithCleanups>(e)->getSubExpr());
    case clang::Stmt::MaterializeTemporaryExprClass:
      return emit(llvm::cast<clang::MaterializeTemporaryExpr>(e)->getSubExpr());
    case clang::Stmt::SubstNonTypeTemplateParmExprClass:
      return emit(llvm::cast<clang::SubstNonTypeTemplateParmExpr>(e)->getReplacement());
    case clang::Stmt::CXXDefaultArgExprClass:
      return emit(llvm::cast<clang::CXXDefaultArgExpr>(e)->getExpr());
    case clang::Stmt::ImplicitCastExprClass:
    case clang::Stmt::CStyleCastExprClass:
    case clang::Stmt::CXXStaticCastExprClass:
    case clang::Stmt::CXXFunctionalCastExprClass:
      return emit_cast(llvm::cast<clang::CastExpr>(e));
    case clang::Stmt::CXXReinterpretCastExprClass:
    case clang::Stmt::CXXConstCastExprClass:
    case clang::Stmt::BuiltinBitCastExprClass:
      error(e->getBeginLoc(), "reinterpret_cast, const_cast and bit casts are not supported in kernel code");
    case clang::Stmt::BinaryOperatorClass:
    case clang::Stmt::CompoundAssignOperatorClass:
      return emit_binary(llvm::cast<clang::BinaryOperator>(e));
    case clang::Stmt::UnaryOperatorClass:
      return emit_unary(llvm::cast<clang::UnaryOperator>(e));
    case clang::Stmt::ConditionalOperatorClass:
      return emit_conditional(llvm::cast<clang::AbstractConditionalOperator>(e));
    case clang::Stmt::CallExprClass:
    case clang::Stmt::CXXOperatorCallExprClass:
    case clang::Stmt::CXXMemberCallExprClass:
      return emit_call(llvm::cast<clang::CallExpr>(e));
    case clang::Stmt::DeclRefExprClass:
    case clang::Stmt::ArraySubscriptExprClass: {
      if (e->getType()->isPointerType()) {   // a pointer variable read as a value
        RValue r;
        r.is_pointer = true;
        r.ptr = emit_pointer(e);
        return r;
      }
      return {load(emit_lvalue(e), l)};
    }
    case clang::Stmt::CXXNewExprClass:
    case clang::Stmt::CXXDeleteExprClass:
      error(e->getBeginLoc(), "new and delete are not supported in kernel code (no dynamic allocation on the device)");
    case clang::Stmt::CXXThrowExprClass:
      error(e->getBeginLoc(), "exceptions are not supported in kernel code");
    case clang::Stmt::LambdaExprClass:
      error(e->getBeginLoc(), "lambdas are not supported in kernel code");
    case clang::Stmt::CXXConstructExprClass:
    case clang::Stmt::CXXTemporaryObjectExprClass:
      return emit_construct(llvm::cast<clang::CXXConstructExpr>(e));
    case clang::Stmt::CXXNullPtrLiteralExprClass:
    case clang::Stmt::GNUNullExprClass:
      error(e->getBeginLoc(), "null pointers are not supported in kernel code");
    case clang::Stmt::StringLiteralClass:
      error(e->getBeginLoc(), "string literals are not supported in kernel code");
    default:
      error(e->getBeginLoc(), llvm::Twine("expression '") + e->getStmtClassName() +
                                  "' is not supported in kernel code");
  }
}

FunctionEmitter::RValue FunctionEmitter::emit_cast(const clang::CastExpr* e) {
  const clang::Expr* sub = e->getSubExpr();
  switch (e->getCastKind()) {
    case clang::CK_LValueToRValue:
      // `c ? a : b` with lvalue arms is itself an lvalue in C++; read as a value, it is simply
      // the value of the arm taken.
      if (const auto* co = llvm::dyn_cast<clang::ConditionalOperator>(sub->IgnoreParens()); co && !e->getType()->isPointerType())
        return emit_conditional(co, /*as_value=*/true);
      if (e->getType()->isPointerType()) {
        RValue r;
        r.is_pointer = true;
        r.ptr = emit_pointer(sub);
        return r;
      }
      {
        mlir::Location l = loc(e->getBeginLoc());
        mlir::Value v = load(emit_lvalue(sub), l);
        if (e->getType()->isBooleanType() && !v.getType().isInteger(1))   // bool buffers hold bytes
          v = builder_.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, v, int_const(v.getType(), 0, l));
        return {v};
      }
    case clang::CK_NoOp:
    case clang::CK_ToVoid:
    case clang::CK_ConstructorConversion:   // qv::half(x): the constructor call below does the work
    case clang::CK_UserDefinedConversion:   // static_cast<float>(h): the conversion operator does
      return emit(sub);
    case clang::CK_ArrayToPointerDecay:
    case clang::CK_FunctionToPointerDecay:
      error(e->getBeginLoc(), "arrays and function pointers are not supported in kernel code");
    case clang::CK_IntegralCast:
    case clang::CK_IntegralToBoolean:
    case clang::CK_IntegralToFloating:
    case clang::CK_FloatingToIntegral:
    case clang::CK_FloatingToBoolean:
    case clang::CK_FloatingCast:
    case clang::CK_BooleanToSignedIntegral:
      return {convert(emit_scalar(sub), sub->getType(), e->getType(), e->getBeginLoc())};
    case clang::CK_NullToPointer:
      error(e->getBeginLoc(), "null pointers are not supported in kernel code");
    case clang::CK_PointerToBoolean:
      error(e->getBeginLoc(), "pointers cannot be tested against null in kernel code");
    case clang::CK_DerivedToBase:
    case clang::CK_UncheckedDerivedToBase:
    case clang::CK_BaseToDerived:
      error(e->getBeginLoc(), "class hierarchies are not supported in kernel code");
    default:
      error(e->getBeginLoc(), llvm::Twine("conversion '") + e->getCastKindName() +
                                  "' is not supported in kernel code");
  }
}

FunctionEmitter::LValue FunctionEmitter::emit_lvalue(const clang::Expr* e) {
  e = e->IgnoreParens();
  mlir::Location l = loc(e->getBeginLoc());
  if (const auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
    const auto* vd = llvm::dyn_cast<clang::VarDecl>(dre->getDecl());
    if (!vd) error(e->getBeginLoc(), "'" + dre->getDecl()->getName() + "' cannot be used here");
    auto it = vars_.find(vd);
    if (it == vars_.end()) {
      if (vd->hasGlobalStorage() && !vd->getType().isConstQualified())
        error(e->getBeginLoc(), "mutable global variable '" + vd->getName() +
                                    "' cannot be used in kernel code (only constexpr globals)");
      error(e->getBeginLoc(), "'" + vd->getName() + "' is not a constant and cannot be used in kernel code");
    }
    const Binding& b = it->second;
    switch (b.kind) {
      case Binding::Slot: return {b.slot, {}};
      case Binding::Reference: return b.ref;
      case Binding::PointerVar: return {b.slot, {}};   // the offset slot; callers handle pointers
      case Binding::Shared: return {b.base, {}};
    }
  }
  if (const auto* ase = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
    Pointer p = emit_pointer(ase->getBase());
    mlir::Value i = to_index(emit_scalar(ase->getIdx()), ase->getIdx()->getType(), l);
    return {p.mem, builder_.create<arith::AddIOp>(l, p.offset, i)};
  }
  if (const auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e); uo && uo->getOpcode() == clang::UO_Deref) {
    Pointer p = emit_pointer(uo->getSubExpr());
    return {p.mem, p.offset};
  }
  if (auto lv = try_emit_value_lvalue(e)) return *lv;
  if (const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(e);
      op && op->getOperator() == clang::OO_Subscript && is_shared_array(op->getArg(0)->getType())) {
    LValue base = emit_lvalue(op->getArg(0));
    return {base.mem, to_index(emit_scalar(op->getArg(1)), op->getArg(1)->getType(), l)};
  }
  if (const auto* bo = llvm::dyn_cast<clang::BinaryOperator>(e); bo && (bo->isAssignmentOp())) {
    emit_assign(bo);
    return emit_lvalue(bo->getLHS());
  }
  if (const auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e); uo && uo->isPrefix() && uo->isIncrementDecrementOp()) {
    emit_unary(uo);
    return emit_lvalue(uo->getSubExpr());
  }
  if (const auto* c = llvm::dyn_cast<clang::CastExpr>(e); c && c->getCastKind() == clang::CK_NoOp)
    return emit_lvalue(c->getSubExpr());
  if (const auto* m = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(e)) {
    LValue lv{new_slot(type_of(m->getType(), e->getBeginLoc())), {}};
    store(lv, emit_scalar(m->getSubExpr()), l);
    return lv;
  }
  if (const auto* s = llvm::dyn_cast<clang::SubstNonTypeTemplateParmExpr>(e)) return emit_lvalue(s->getReplacement());
  error(e->getBeginLoc(), llvm::Twine("expression '") + e->getStmtClassName() + "' is not assignable here");
}

FunctionEmitter::Pointer FunctionEmitter::emit_pointer(const clang::Expr* e) {
  e = e->IgnoreParens();
  mlir::Location l = loc(e->getBeginLoc());
  if (const auto* c = llvm::dyn_cast<clang::CastExpr>(e)) {
    if (llvm::isa<clang::CXXConstCastExpr, clang::CXXReinterpretCastExpr>(c) || c->getCastKind() == clang::CK_BitCast)
      error(e->getBeginLoc(), "reinterpret_cast, const_cast and pointer casts are not supported in kernel code");
    if (c->getCastKind() == clang::CK_NullToPointer)
      error(e->getBeginLoc(), "null pointers are not supported in kernel code");
    if (c->getCastKind() == clang::CK_ArrayToPointerDecay)
      error(e->getBeginLoc(), "arrays and string literals are not supported in kernel code");
    if (c->getCastKind() == clang::CK_LValueToRValue || c->getCastKind() == clang::CK_NoOp)
      return emit_pointer(c->getSubExpr());
    error(e->getBeginLoc(), llvm::Twine("pointer conversion '") + c->getCastKindName() + "' is not supported");
  }
  if (const auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
    const auto* vd = llvm::dyn_cast<clang::VarDecl>(dre->getDecl());
    auto it = vd ? vars_.find(vd) : vars_.end();
    if (it == vars_.end() || it->second.kind != Binding::PointerVar)
      error(e->getBeginLoc(), "'" + dre->getDecl()->getName() + "' is not a buffer pointer");
    return {it->second.base, builder_.create<mlir::memref::LoadOp>(l, it->second.slot)};
  }
  if (const auto* bo = llvm::dyn_cast<clang::BinaryOperator>(e)) {
    if (bo->getOpcode() == clang::BO_Add || bo->getOpcode() == clang::BO_Sub) {
      bool ptr_left = bo->getLHS()->getType()->isPointerType();
      const clang::Expr* pe = ptr_left ? bo->getLHS() : bo->getRHS();
      const clang::Expr* ie = ptr_left ? bo->getRHS() : bo->getLHS();
      Pointer p = emit_pointer(pe);
      mlir::Value i = to_index(emit_scalar(ie), ie->getType(), l);
      if (bo->getOpcode() == clang::BO_Sub) return {p.mem, builder_.create<arith::SubIOp>(l, p.offset, i)};
      return {p.mem, builder_.create<arith::AddIOp>(l, p.offset, i)};
    }
    if (bo->isAssignmentOp() || bo->getOpcode() == clang::BO_Comma) {
      emit(bo);
      return emit_pointer(bo->getOpcode() == clang::BO_Comma ? bo->getRHS() : bo->getLHS());
    }
  }
  if (const auto* uo = llvm::dyn_cast<clang::UnaryOperator>(e)) {
    if (uo->getOpcode() == clang::UO_AddrOf) {
      const clang::Expr* sub = uo->getSubExpr()->IgnoreParens();
      if (llvm::isa<clang::DeclRefExpr>(sub) && !sub->getType()->isReferenceType()) {
        const auto* vd = llvm::dyn_cast<clang::VarDecl>(llvm::cast<clang::DeclRefExpr>(sub)->getDecl());
        auto it = vd ? vars_.find(vd) : vars_.end();
        if (it == vars_.end() || it->second.kind != Binding::Reference)
          error(e->getBeginLoc(), "pointers to local variables are not supported; pointers must point into a buffer or qv::shared array");
      }
      LValue lv = emit_lvalue(sub);
      if (!lv.index) error(e->getBeginLoc(), "pointers must point into a buffer or qv::shared array");
      return {lv.mem, lv.index};
    }
    if (uo->isIncrementDecrementOp()) {
      RValue r = emit_unary(uo);
      return r.ptr;
    }
  }
  if (const auto* co = llvm::dyn_cast<clang::ConditionalOperator>(e)) {
    RValue r = emit_conditional(co);
    return r.ptr;
  }
  if (llvm::isa<clang::CXXNewExpr>(e))
    error(e->getBeginLoc(), "new and delete are not supported in kernel code (no dynamic allocation on the device)");
  if (llvm::isa<clang::CallExpr>(e))
    error(e->getBeginLoc(), "functions returning pointers are not supported in kernel code");
  error(e->getBeginLoc(), llvm::Twine("pointer expression '") + e->getStmtClassName() + "' is not supported");
}

}  // namespace quiver::frontend
