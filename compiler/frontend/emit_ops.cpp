// Operators and calls.
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

// One arithmetic or comparison operator on two values of kind `k` (C++ semantics).
static mlir::Value arith_op(mlir::OpBuilder& b, clang::BinaryOperatorKind op, ScalarType k, mlir::Value x,
                            mlir::Value y, mlir::Location l) {
  bool fp = is_float(k), sg = is_signed(k);
  using P = arith::CmpIPredicate;
  using F = arith::CmpFPredicate;
  switch (op) {
    case clang::BO_Add: return fp ? b.create<arith::AddFOp>(l, x, y).getResult() : b.create<arith::AddIOp>(l, x, y).getResult();
    case clang::BO_Sub: return fp ? b.create<arith::SubFOp>(l, x, y).getResult() : b.create<arith::SubIOp>(l, x, y).getResult();
    case clang::BO_Mul: return fp ? b.create<arith::MulFOp>(l, x, y).getResult() : b.create<arith::MulIOp>(l, x, y).getResult();
    case clang::BO_Div:
      if (fp) return b.create<arith::DivFOp>(l, x, y);
      return sg ? b.create<arith::DivSIOp>(l, x, y).getResult() : b.create<arith::DivUIOp>(l, x, y).getResult();
    case clang::BO_Rem:
      if (fp) return b.create<arith::RemFOp>(l, x, y);
      return sg ? b.create<arith::RemSIOp>(l, x, y).getResult() : b.create<arith::RemUIOp>(l, x, y).getResult();
    case clang::BO_And: return b.create<arith::AndIOp>(l, x, y);
    case clang::BO_Or: return b.create<arith::OrIOp>(l, x, y);
    case clang::BO_Xor: return b.create<arith::XOrIOp>(l, x, y);
    case clang::BO_Shl: return b.create<arith::ShLIOp>(l, x, y);
    case clang::BO_Shr: return sg ? b.create<arith::ShRSIOp>(l, x, y).getResult() : b.create<arith::ShRUIOp>(l, x, y).getResult();
    case clang::BO_LT: return fp ? b.create<arith::CmpFOp>(l, F::OLT, x, y).getResult() : b.create<arith::CmpIOp>(l, sg ? P::slt : P::ult, x, y).getResult();
    case clang::BO_LE: return fp ? b.create<arith::CmpFOp>(l, F::OLE, x, y).getResult() : b.create<arith::CmpIOp>(l, sg ? P::sle : P::ule, x, y).getResult();
    case clang::BO_GT: return fp ? b.create<arith::CmpFOp>(l, F::OGT, x, y).getResult() : b.create<arith::CmpIOp>(l, sg ? P::sgt : P::ugt, x, y).getResult();
    case clang::BO_GE: return fp ? b.create<arith::CmpFOp>(l, F::OGE, x, y).getResult() : b.create<arith::CmpIOp>(l, sg ? P::sge : P::uge, x, y).getResult();
    case clang::BO_EQ: return fp ? b.create<arith::CmpFOp>(l, F::OEQ, x, y).getResult() : b.create<arith::CmpIOp>(l, P::eq, x, y).getResult();
    case clang::BO_NE: return fp ? b.create<arith::CmpFOp>(l, F::UNE, x, y).getResult() : b.create<arith::CmpIOp>(l, P::ne, x, y).getResult();
    default: return {};
  }
}

static clang::BinaryOperatorKind base_op(clang::BinaryOperatorKind op) {
  return clang::BinaryOperator::isCompoundAssignmentOp(op)
             ? clang::BinaryOperator::getOpForCompoundAssignment(op) : op;
}

FunctionEmitter::RValue FunctionEmitter::emit_binary(const clang::BinaryOperator* e) {
  clang::BinaryOperatorKind op = e->getOpcode();
  mlir::Location l = loc(e->getOperatorLoc());
  if (e->isAssignmentOp()) return emit_assign(e);
  if (op == clang::BO_LAnd || op == clang::BO_LOr) return {emit_logical(e)};
  if (op == clang::BO_Comma) {
    emit(e->getLHS());
    return emit(e->getRHS());
  }
  if (op == clang::BO_PtrMemD || op == clang::BO_PtrMemI || op == clang::BO_Cmp)
    error(e->getOperatorLoc(), "this operator is not supported in kernel code");
  const clang::Expr* lhs = e->getLHS();
  const clang::Expr* rhs = e->getRHS();
  if (e->getType()->isPointerType()) {
    RValue r;
    r.is_pointer = true;
    r.ptr = emit_pointer(e);
    return r;
  }
  if (lhs->getType()->isPointerType() || rhs->getType()->isPointerType()) {
    if (!(lhs->getType()->isPointerType() && rhs->getType()->isPointerType()))
      error(e->getOperatorLoc(), "pointer arithmetic of this form is not supported");
    Pointer a = emit_pointer(lhs), b = emit_pointer(rhs);
    if (a.mem != b.mem) error(e->getOperatorLoc(), "pointers into different buffers cannot be compared or subtracted");
    if (op == clang::BO_Sub) {
      mlir::Value d = builder_.create<arith::SubIOp>(l, a.offset, b.offset);
      return {builder_.create<arith::IndexCastOp>(l, type_of(e->getType(), e->getBeginLoc()), d)};
    }
    mlir::Value r = arith_op(builder_, op, ScalarType::I64,
                             builder_.create<arith::IndexCastOp>(l, builder_.getI64Type(), a.offset),
                             builder_.create<arith::IndexCastOp>(l, builder_.getI64Type(), b.offset), l);
    if (!r) error(e->getOperatorLoc(), "this pointer operator is not supported");
    return {r};
  }
  mlir::Value x = emit_scalar(lhs);
  mlir::Value y = emit_scalar(rhs);
  ScalarType k = kind_of(lhs->getType(), lhs->getBeginLoc());
  if (op == clang::BO_Shl || op == clang::BO_Shr) y = convert(y, rhs->getType(), ast_.getIntTypeForBitwidth(x.getType().getIntOrFloatBitWidth(), 0), rhs->getBeginLoc());
  mlir::Value r = arith_op(builder_, op, k, x, y, l);
  if (!r) error(e->getOperatorLoc(), "this operator is not supported in kernel code");
  return {r};
}

FunctionEmitter::RValue FunctionEmitter::emit_assign(const clang::BinaryOperator* e) {
  mlir::Location l = loc(e->getOperatorLoc());
  const clang::Expr* lhs = e->getLHS();
  clang::QualType lt = lhs->getType();
  if (lt->isPointerType()) {
    const auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(lhs->IgnoreParens());
    const auto* vd = dre ? llvm::dyn_cast<clang::VarDecl>(dre->getDecl()) : nullptr;
    auto it = vd ? vars_.find(vd) : vars_.end();
    if (it == vars_.end() || it->second.kind != Binding::PointerVar)
      error(lhs->getBeginLoc(), "only pointer variables can be assigned");
    Pointer p;
    if (e->getOpcode() == clang::BO_Assign) {
      p = emit_pointer(e->getRHS());
    } else {
      Pointer cur = emit_pointer(lhs);
      mlir::Value i = to_index(emit_scalar(e->getRHS()), e->getRHS()->getType(), l);
      p = {cur.mem, base_op(e->getOpcode()) == clang::BO_Sub ? builder_.create<arith::SubIOp>(l, cur.offset, i).getResult()
                                                              : builder_.create<arith::AddIOp>(l, cur.offset, i).getResult()};
    }
    if (p.mem != it->second.base)
      error(e->getOperatorLoc(), "pointer '" + vd->getName() + "' would point into a different buffer than "
                                 "the one it was initialised with; quiver requires each pointer to stay in one buffer");
    builder_.create<mlir::memref::StoreOp>(l, p.offset, it->second.slot);
    RValue r;
    r.is_pointer = true;
    r.ptr = p;
    return r;
  }
  if (is_shared_array(lt)) error(e->getOperatorLoc(), "qv::shared arrays cannot be assigned");
  mlir::Value value;
  LValue dst;
  if (e->getOpcode() == clang::BO_Assign) {
    value = emit_scalar(e->getRHS());
    dst = emit_lvalue(lhs);
  } else {
    const auto* ca = llvm::cast<clang::CompoundAssignOperator>(e);
    dst = emit_lvalue(lhs);
    mlir::Value old = load(dst, l);
    mlir::Value rhs = emit_scalar(e->getRHS());
    clang::QualType ct = ca->getComputationLHSType();
    mlir::Value a = convert(old, lt, ct, e->getBeginLoc());
    clang::BinaryOperatorKind op = base_op(e->getOpcode());
    if (op == clang::BO_Shl || op == clang::BO_Shr)
      rhs = convert(rhs, e->getRHS()->getType(), ast_.getIntTypeForBitwidth(a.getType().getIntOrFloatBitWidth(), 0), e->getBeginLoc());
    mlir::Value r = arith_op(builder_, op, kind_of(ct, e->getBeginLoc()), a, rhs, l);
    value = convert(r, ca->getComputationResultType(), lt, e->getBeginLoc());
  }
  mlir::Type mem_elem = llvm::cast<mlir::MemRefType>(dst.mem.getType()).getElementType();
  mlir::Value stored = value;
  if (value.getType().isInteger(1) && mem_elem.isInteger(8)) stored = builder_.create<arith::ExtUIOp>(l, mem_elem, value);
  store(dst, stored, l);
  return {value};
}

FunctionEmitter::RValue FunctionEmitter::emit_unary(const clang::UnaryOperator* e) {
  mlir::Location l = loc(e->getOperatorLoc());
  const clang::Expr* sub = e->getSubExpr();
  switch (e->getOpcode()) {
    case clang::UO_Plus: return emit(sub);
    case clang::UO_Minus: {
      mlir::Value v = emit_scalar(sub);
      if (llvm::isa<mlir::FloatType>(v.getType())) return {builder_.create<arith::NegFOp>(l, v)};
      return {builder_.create<arith::SubIOp>(l, int_const(v.getType(), 0, l), v)};
    }
    case clang::UO_Not: {
      mlir::Value v = emit_scalar(sub);
      return {builder_.create<arith::XOrIOp>(l, v, int_const(v.getType(), -1, l))};
    }
    case clang::UO_LNot: {
      mlir::Value v = emit_condition(sub);
      return {builder_.create<arith::XOrIOp>(l, v, int_const(v.getType(), 1, l))};
    }
    case clang::UO_Deref: {
      Pointer p = emit_pointer(sub);
      return {load({p.mem, p.offset}, l)};
    }
    case clang::UO_AddrOf: {
      RValue r;
      r.is_pointer = true;
      r.ptr = emit_pointer(e);
      return r;
    }
    case clang::UO_PreInc: case clang::UO_PreDec: case clang::UO_PostInc: case clang::UO_PostDec: {
      bool inc = e->isIncrementOp();
      if (sub->getType()->isPointerType()) {
        const auto* dre = llvm::dyn_cast<clang::DeclRefExpr>(sub->IgnoreParens());
        const auto* vd = dre ? llvm::dyn_cast<clang::VarDecl>(dre->getDecl()) : nullptr;
        auto it = vd ? vars_.find(vd) : vars_.end();
        if (it == vars_.end() || it->second.kind != Binding::PointerVar)
          error(sub->getBeginLoc(), "only pointer variables can be incremented");
        mlir::Value old = builder_.create<mlir::memref::LoadOp>(l, it->second.slot);
        mlir::Value one = int_const(builder_.getIndexType(), 1, l);
        mlir::Value nv = inc ? builder_.create<arith::AddIOp>(l, old, one).getResult() : builder_.create<arith::SubIOp>(l, old, one).getResult();
        builder_.create<mlir::memref::StoreOp>(l, nv, it->second.slot);
        RValue r;
        r.is_pointer = true;
        r.ptr = {it->second.base, e->isPrefix() ? nv : old};
        return r;
      }
      if (sub->getType()->isBooleanType()) error(e->getOperatorLoc(), "++/-- on bool is not allowed");
      LValue lv = emit_lvalue(sub);
      mlir::Value old = load(lv, l);
      mlir::Value nv;
      if (llvm::isa<mlir::FloatType>(old.getType())) {
        mlir::Value one = builder_.create<arith::ConstantOp>(l, builder_.getFloatAttr(old.getType(), 1.0));
        nv = inc ? builder_.create<arith::AddFOp>(l, old, one).getResult() : builder_.create<arith::SubFOp>(l, old, one).getResult();
      } else {
        mlir::Value one = int_const(old.getType(), 1, l);
        nv = inc ? builder_.create<arith::AddIOp>(l, old, one).getResult() : builder_.create<arith::SubIOp>(l, old, one).getResult();
      }
      store(lv, nv, l);
      return {e->isPrefix() ? nv : old};
    }
    default:
      error(e->getOperatorLoc(), "this unary operator is not supported in kernel code");
  }
}

mlir::Value FunctionEmitter::emit_logical(const clang::BinaryOperator* e) {
  mlir::Location l = loc(e->getOperatorLoc());
  mlir::Value a = emit_condition(e->getLHS());
  mlir::Block* rhs_b = new_block();
  mlir::Block* merge = new_block();
  merge->addArgument(builder_.getI1Type(), l);
  bool is_and = e->getOpcode() == clang::BO_LAnd;
  mlir::Value shortcut = int_const(builder_.getI1Type(), is_and ? 0 : 1, l);
  if (is_and) builder_.create<mlir::cf::CondBranchOp>(l, a, rhs_b, mlir::ValueRange{}, merge, mlir::ValueRange{shortcut});
  else builder_.create<mlir::cf::CondBranchOp>(l, a, merge, mlir::ValueRange{shortcut}, rhs_b, mlir::ValueRange{});
  continue_in(rhs_b);
  mlir::Value b = emit_condition(e->getRHS());
  builder_.create<mlir::cf::BranchOp>(l, merge, mlir::ValueRange{b});
  continue_in(merge);
  return merge->getArgument(0);
}

FunctionEmitter::RValue FunctionEmitter::emit_conditional(const clang::AbstractConditionalOperator* e, bool as_value) {
  if (llvm::isa<clang::BinaryConditionalOperator>(e)) error(e->getBeginLoc(), "'?:' without a middle operand is not supported");
  mlir::Location l = loc(e->getBeginLoc());
  mlir::Value c = emit_condition(e->getCond());
  mlir::Block* t = new_block();
  mlir::Block* f = new_block();
  mlir::Block* merge = new_block();
  builder_.create<mlir::cf::CondBranchOp>(l, c, t, f);
  bool is_void = e->getType()->isVoidType();
  bool is_ptr = e->getType()->isPointerType();
  if (e->isGLValue() && !is_ptr && !as_value) error(e->getBeginLoc(), "'?:' as an assignable value is not supported");
  mlir::Value mem;
  auto arm = [&](mlir::Block* b, const clang::Expr* x) {
    continue_in(b);
    if (is_void) { emit(x); builder_.create<mlir::cf::BranchOp>(l, merge); return; }
    if (is_ptr) {
      Pointer p = emit_pointer(x);
      if (mem && mem != p.mem) error(e->getBeginLoc(), "both arms of '?:' must point into the same buffer");
      mem = p.mem;
      builder_.create<mlir::cf::BranchOp>(l, merge, mlir::ValueRange{p.offset});
      return;
    }
    // `a ? x : b ? y : z` read as a value: the nested lvalue '?:' is read as a value too.
    const auto* nested = llvm::dyn_cast<clang::ConditionalOperator>(x->IgnoreParens());
    mlir::Value v = as_value && nested && nested->isGLValue() ? emit_conditional(nested, true).value : emit_scalar(x);
    builder_.create<mlir::cf::BranchOp>(l, merge, mlir::ValueRange{v});
  };
  if (is_ptr) merge->addArgument(builder_.getIndexType(), l);
  else if (!is_void) merge->addArgument(type_of(e->getType(), e->getBeginLoc()), l);
  arm(t, e->getTrueExpr());
  arm(f, e->getFalseExpr());
  continue_in(merge);
  if (is_void) return {};
  if (is_ptr) {
    RValue r;
    r.is_pointer = true;
    r.ptr = {mem, merge->getArgument(0)};
    return r;
  }
  return {merge->getArgument(0)};
}

static bool has_annotation(const clang::Decl* d, llvm::StringRef what) { return has_qv_annotation(d, what); }

FunctionEmitter::RValue FunctionEmitter::emit_call(const clang::CallExpr* e) {
  const clang::FunctionDecl* fn = e->getDirectCallee();
  if (!fn) error(e->getBeginLoc(), "indirect calls (function pointers, lambdas) are not supported in kernel code");
  if (auto r = try_emit_value_call(e, fn)) return *r;
  if (const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(e)) {
    if (op->getOperator() == clang::OO_Subscript && is_shared_array(op->getArg(0)->getType()))
      return {load(emit_lvalue(e), loc(e->getBeginLoc()))};
    error(e->getBeginLoc(), "overloaded operators are not supported in kernel code");
  }
  if (const auto* md = llvm::dyn_cast<clang::CXXMethodDecl>(fn)) {
    if (md->isVirtual()) error(e->getBeginLoc(), "virtual calls are not supported in kernel code");
    if (!md->isStatic()) error(e->getBeginLoc(), "member functions are not supported in kernel code (structs are not in v1)");
  }
  if (has_annotation(fn, "qv.builtin")) return emit_builtin(e, fn);
  if (has_annotation(fn, "qv.kernel")) error(e->getBeginLoc(), "a kernel cannot call another QV_KERNEL");
  const clang::FunctionDecl* def = callee_definition(e);
  if (!def)
    error(e->getBeginLoc(), "call to '" + fn->getQualifiedNameAsString() +
                                "', which has no definition quiverc can see; kernels may only call QV_DEVICE "
                                "or constexpr functions defined in their translation unit");
  if (!has_annotation(def, "qv.device") && !has_annotation(fn, "qv.device") && !def->isConstexpr())
    error(e->getBeginLoc(), "call to '" + fn->getQualifiedNameAsString() +
                                "', which is neither QV_DEVICE nor constexpr");
  return emit_inline_call(e, def);
}

FunctionEmitter::RValue FunctionEmitter::emit_inline_call(const clang::CallExpr* e, const clang::FunctionDecl* fn) {
  mlir::Location l = loc(e->getBeginLoc());
  for (const Frame& f : frames_)
    if (f.fn->getCanonicalDecl() == fn->getCanonicalDecl())
      error(e->getBeginLoc(), "recursion is not supported in kernel code ('" + fn->getQualifiedNameAsString() +
                                  "' calls itself)");
  if (frames_.size() > 64) error(e->getBeginLoc(), "calls nested more than 64 deep");
  clang::QualType rt = fn->getReturnType();
  if (rt->isPointerType() || rt->isReferenceType())
    error(e->getBeginLoc(), "'" + fn->getQualifiedNameAsString() + "' returns a pointer or reference, "
                            "which is not supported in kernel code");
  if (e->getNumArgs() != fn->getNumParams()) error(e->getBeginLoc(), "variadic calls are not supported");
  // Evaluate every argument before binding any parameter (C++ evaluates them before the call).
  std::vector<Binding> bound;
  for (unsigned i = 0; i < fn->getNumParams(); ++i) {
    const clang::ParmVarDecl* p = fn->getParamDecl(i);
    const clang::Expr* arg = e->getArg(i);
    clang::QualType t = p->getType();
    Binding b;
    if (t->isPointerType()) {
      Pointer ptr = emit_pointer(arg);
      b.kind = Binding::PointerVar;
      b.base = ptr.mem;
      b.slot = new_slot(builder_.getIndexType());
      builder_.create<mlir::memref::StoreOp>(l, ptr.offset, b.slot);
    } else if (t->isReferenceType()) {
      if (is_shared_array(t.getNonReferenceType())) {
        b.kind = Binding::Shared;
        b.base = emit_lvalue(arg).mem;
      } else {
        b.kind = Binding::Reference;
        if (arg->isGLValue()) b.ref = emit_lvalue(arg);
        else {
          b.ref.mem = new_slot(type_of(t.getNonReferenceType(), p->getLocation()));
          store(b.ref, emit_scalar(arg), l);
        }
      }
    } else {
      b.slot = new_slot(type_of(t, p->getLocation()));
      store({b.slot, {}}, emit_scalar(arg), l);
    }
    bound.push_back(b);
  }
  for (unsigned i = 0; i < fn->getNumParams(); ++i) vars_[fn->getParamDecl(i)] = bound[i];

  mlir::Value ret_slot;
  if (!rt->isVoidType()) ret_slot = new_slot(type_of(rt, fn->getLocation()));
  mlir::Block* cont = new_block();
  frames_.push_back({fn, cont, ret_slot});
  emit_stmt(fn->getBody());
  frames_.pop_back();
  branch_to(cont);
  continue_in(cont);
  if (!ret_slot) return {};
  return {load({ret_slot, {}}, l)};
}

}  // namespace quiver::frontend
