// Statements: every control-flow form of the kernel language, as cf branches between blocks.
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "clang/AST/Attr.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"

namespace quiver::frontend {

void FunctionEmitter::emit_stmt(const clang::Stmt* s) {
  if (!s) return;
  // Code after break/continue/return is unreachable; give it a block of its own.
  if (!block_open()) continue_in(new_block());
  switch (s->getStmtClass()) {
    case clang::Stmt::CompoundStmtClass:
      for (const clang::Stmt* c : llvm::cast<clang::CompoundStmt>(s)->body()) emit_stmt(c);
      return;
    case clang::Stmt::NullStmtClass:
      return;
    case clang::Stmt::DeclStmtClass:
      for (const clang::Decl* d : llvm::cast<clang::DeclStmt>(s)->decls()) {
        if (const auto* vd = llvm::dyn_cast<clang::VarDecl>(d)) emit_decl(vd);
        else if (llvm::isa<clang::TypedefNameDecl, clang::StaticAssertDecl, clang::UsingDecl,
                           clang::UsingDirectiveDecl>(d)) continue;
        else error(d->getLocation(), "this declaration is not supported in kernel code");
      }
      return;
    case clang::Stmt::IfStmtClass:
      return emit_if(llvm::cast<clang::IfStmt>(s));
    case clang::Stmt::ForStmtClass: {
      const auto* f = llvm::cast<clang::ForStmt>(s);
      return emit_loop(f->getInit(), f->getCond(), f->getConditionVariable(), f->getInc(), f->getBody(), true);
    }
    case clang::Stmt::WhileStmtClass: {
      const auto* w = llvm::cast<clang::WhileStmt>(s);
      return emit_loop(nullptr, w->getCond(), w->getConditionVariable(), nullptr, w->getBody(), true);
    }
    case clang::Stmt::DoStmtClass: {
      const auto* d = llvm::cast<clang::DoStmt>(s);
      return emit_loop(nullptr, d->getCond(), nullptr, nullptr, d->getBody(), false);
    }
    case clang::Stmt::BreakStmtClass:
      if (jumps_.empty()) error(s->getBeginLoc(), "'break' outside a loop or switch");
      branch_to(jumps_.back().break_to);
      return;
    case clang::Stmt::ContinueStmtClass:
      for (auto it = jumps_.rbegin(); it != jumps_.rend(); ++it)
        if (it->continue_to) return branch_to(it->continue_to);
      error(s->getBeginLoc(), "'continue' outside a loop");
    case clang::Stmt::ReturnStmtClass:
      return emit_return(llvm::cast<clang::ReturnStmt>(s));
    case clang::Stmt::SwitchStmtClass:
      return emit_switch(llvm::cast<clang::SwitchStmt>(s));
    case clang::Stmt::AttributedStmtClass:   // [[likely]], #pragma unroll: hints only
      return emit_stmt(llvm::cast<clang::AttributedStmt>(s)->getSubStmt());
    case clang::Stmt::CaseStmtClass:
    case clang::Stmt::DefaultStmtClass:
      error(s->getBeginLoc(), "case labels must appear directly in the body of their switch");
    case clang::Stmt::CXXTryStmtClass:
      error(s->getBeginLoc(), "exceptions are not supported in kernel code");
    case clang::Stmt::GotoStmtClass:
    case clang::Stmt::IndirectGotoStmtClass:
    case clang::Stmt::LabelStmtClass:
      error(s->getBeginLoc(), "goto and labels are not supported in kernel code");
    case clang::Stmt::CXXForRangeStmtClass:
      error(s->getBeginLoc(), "range-based for loops are not supported in kernel code");
    case clang::Stmt::GCCAsmStmtClass:
    case clang::Stmt::MSAsmStmtClass:
      error(s->getBeginLoc(), "inline assembly is not supported in kernel code");
    default:
      if (const auto* e = llvm::dyn_cast<clang::Expr>(s)) {
        emit(e);
        return;
      }
      error(s->getBeginLoc(), llvm::Twine("statement '") + s->getStmtClassName() +
                                  "' is not supported in kernel code");
  }
}

void FunctionEmitter::emit_decl(const clang::VarDecl* vd) {
  mlir::Location l = loc(vd->getLocation());
  clang::QualType t = vd->getType();
  if (vd->isStaticLocal() || vd->hasExternalStorage()) {
    if (vd->isConstexpr() || t.isConstQualified()) return;   // read through constant evaluation
    error(vd->getLocation(), "mutable static variables are not supported in kernel code");
  }
  clang::QualType elem;
  uint64_t count = 0;
  if (is_shared_array(t, &elem, &count)) {
    if (vd->hasInit() && !llvm::isa<clang::CXXConstructExpr>(vd->getInit()->IgnoreImplicit()))
      error(vd->getLocation(), "qv::shared arrays cannot be initialised");
    if (count == 0) error(vd->getLocation(), "qv::shared arrays need at least one element");
    auto space = mlir::gpu::AddressSpaceAttr::get(builder_.getContext(), mlir::gpu::AddressSpace::Workgroup);
    mlir::Type elem_type = is_vec(elem) ? type_of(elem, vd->getLocation())
                                        : memory_type(*builder_.getContext(), kind_of(elem, vd->getLocation()));
    auto type = mlir::MemRefType::get({(int64_t)count}, elem_type,
                                      mlir::MemRefLayoutAttrInterface{}, space);
    mlir::OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToStart(entry_);
    Binding b;
    b.kind = Binding::Shared;
    b.base = builder_.create<mlir::memref::AllocaOp>(l, type);
    vars_[vd] = b;
    return;
  }
  if (t->isReferenceType()) {
    if (!vd->getInit()) error(vd->getLocation(), "reference without initialiser");
    const clang::Expr* init = vd->getInit();
    Binding b;
    if (is_shared_array(t.getNonReferenceType())) {
      b.kind = Binding::Shared;
      b.base = emit_lvalue(init).mem;
    } else if (init->isGLValue()) {
      b.kind = Binding::Reference;
      b.ref = emit_lvalue(init);
    } else {   // const T& bound to a temporary: keep the value in a slot of its own
      b.kind = Binding::Reference;
      b.ref.mem = new_slot(type_of(t.getNonReferenceType(), vd->getLocation()));
      store(b.ref, emit_scalar(init), l);
    }
    vars_[vd] = b;
    return;
  }
  if (t->isPointerType()) {
    if (!vd->getInit())
      error(vd->getLocation(), "pointer variable '" + vd->getName() +
                                   "' must be initialised (quiver tracks which buffer each pointer points into)");
    Pointer p = emit_pointer(vd->getInit());
    Binding b;
    b.kind = Binding::PointerVar;
    b.base = p.mem;
    b.slot = new_slot(builder_.getIndexType());
    builder_.create<mlir::memref::StoreOp>(l, p.offset, b.slot);
    vars_[vd] = b;
    return;
  }
  if (t->isArrayType())
    error(vd->getLocation(), "local arrays are not supported in v1; use qv::shared or scalars");
  Binding b;
  b.slot = new_slot(type_of(t, vd->getLocation()));
  vars_[vd] = b;
  if (const clang::Expr* init = vd->getInit()) {
    if (const auto* ile = llvm::dyn_cast<clang::InitListExpr>(init->IgnoreImplicit())) {
      if (ile->getNumInits() > 1) error(init->getBeginLoc(), "scalar initialiser lists take one value");
      if (ile->getNumInits() == 1) store({b.slot, {}}, emit_scalar(ile->getInit(0)), l);
      else store({b.slot, {}}, convert(int_const(builder_.getI32Type(), 0, l), ast_.IntTy, t, vd->getLocation()), l);
      return;
    }
    store({b.slot, {}}, emit_scalar(init), l);
  }
}

void FunctionEmitter::emit_if(const clang::IfStmt* s) {
  if (s->isConsteval()) error(s->getBeginLoc(), "'if consteval' is not supported");
  if (s->getInit()) emit_stmt(s->getInit());
  if (const clang::VarDecl* cv = s->getConditionVariable()) emit_decl(cv);
  if (s->isConstexpr()) {   // only the taken branch exists for codegen
    std::optional<llvm::APSInt> taken = s->getCond()->getIntegerConstantExpr(ast_);
    if (!taken) error(s->getCond()->getBeginLoc(), "'if constexpr' condition is not a constant");
    emit_stmt(taken->getBoolValue() ? s->getThen() : s->getElse());
    return;
  }
  mlir::Value cond = emit_condition(s->getCond());
  mlir::Block* then_b = new_block();
  mlir::Block* merge = new_block();
  mlir::Block* else_b = s->getElse() ? new_block() : merge;
  builder_.create<mlir::cf::CondBranchOp>(loc(s->getIfLoc()), cond, then_b, else_b);
  continue_in(then_b);
  emit_stmt(s->getThen());
  branch_to(merge);
  if (s->getElse()) {
    continue_in(else_b);
    emit_stmt(s->getElse());
    branch_to(merge);
  }
  continue_in(merge);
}

void FunctionEmitter::emit_loop(const clang::Stmt* init, const clang::Expr* cond, const clang::VarDecl* cond_var,
                                const clang::Expr* inc, const clang::Stmt* body, bool test_first) {
  if (init) emit_stmt(init);
  mlir::Block* header = new_block();
  mlir::Block* body_b = new_block();
  mlir::Block* latch = new_block();
  mlir::Block* exit = new_block();
  branch_to(test_first ? header : body_b);

  continue_in(header);
  if (cond_var) emit_decl(cond_var);
  if (cond) builder_.create<mlir::cf::CondBranchOp>(loc(cond->getBeginLoc()), emit_condition(cond), body_b, exit);
  else branch_to(body_b);

  continue_in(body_b);
  jumps_.push_back({exit, latch});
  emit_stmt(body);
  jumps_.pop_back();
  branch_to(latch);

  continue_in(latch);
  if (inc) emit(inc);
  branch_to(header);
  continue_in(exit);
}

// Collects the case labels that belong to this switch (not to nested ones), in source order.
static void collect_cases(const clang::Stmt* s, std::vector<const clang::SwitchCase*>& out) {
  if (!s || llvm::isa<clang::SwitchStmt>(s)) return;
  if (const auto* sc = llvm::dyn_cast<clang::SwitchCase>(s)) out.push_back(sc);
  for (const clang::Stmt* c : s->children()) collect_cases(c, out);
}

void FunctionEmitter::emit_switch(const clang::SwitchStmt* s) {
  if (s->getInit()) emit_stmt(s->getInit());
  if (const clang::VarDecl* cv = s->getConditionVariable()) emit_decl(cv);
  mlir::Location l = loc(s->getSwitchLoc());
  const clang::Expr* cond = s->getCond();
  mlir::Value flag = emit_scalar(cond);
  if (!llvm::isa<mlir::IntegerType>(flag.getType()))
    error(cond->getBeginLoc(), "switch needs an integer condition");

  const auto* body = llvm::dyn_cast<clang::CompoundStmt>(s->getBody());
  if (!body) error(s->getBody()->getBeginLoc(), "a switch body must be a { ... } block");
  std::vector<const clang::SwitchCase*> cases;
  collect_cases(body, cases);

  mlir::Block* exit = new_block();
  mlir::Block* default_b = exit;
  std::vector<llvm::APInt> values;
  std::vector<mlir::Block*> dests;
  llvm::DenseMap<const clang::SwitchCase*, mlir::Block*> blocks;
  unsigned width = flag.getType().getIntOrFloatBitWidth();
  for (const clang::SwitchCase* sc : cases) {
    mlir::Block* b = new_block();
    blocks[sc] = b;
    if (const auto* cs = llvm::dyn_cast<clang::CaseStmt>(sc)) {
      if (cs->caseStmtIsGNURange()) error(cs->getBeginLoc(), "case ranges are not supported");
      llvm::APSInt v = cs->getLHS()->EvaluateKnownConstInt(ast_);
      values.push_back(v.extOrTrunc(width));
      dests.push_back(b);
    } else {
      default_b = b;
    }
  }
  std::vector<mlir::ValueRange> no_operands(dests.size(), mlir::ValueRange{});
  builder_.create<mlir::cf::SwitchOp>(l, flag, default_b, mlir::ValueRange{}, values,
                                      mlir::BlockRange(dests), no_operands);

  // The body in source order; each label starts its block and falls through from the previous.
  continue_in(new_block());   // code before the first label is unreachable
  jumps_.push_back({exit, nullptr});
  std::function<void(const clang::Stmt*)> emit_labelled = [&](const clang::Stmt* st) {
    if (const auto* sc = llvm::dyn_cast<clang::SwitchCase>(st)) {
      branch_to(blocks[sc]);
      continue_in(blocks[sc]);
      emit_labelled(sc->getSubStmt());
      return;
    }
    emit_stmt(st);
  };
  for (const clang::Stmt* st : body->body()) {
    // A label nested deeper than the body (Duff's device) is rejected by emit_stmt.
    emit_labelled(st);
  }
  jumps_.pop_back();
  branch_to(exit);
  continue_in(exit);
}

void FunctionEmitter::emit_return(const clang::ReturnStmt* s) {
  // A copy: emitting the value may inline calls, which grows (and can reallocate) frames_.
  const Frame f = frames_.back();
  if (const clang::Expr* v = s->getRetValue()) {
    if (f.return_slot) store({f.return_slot, {}}, emit_scalar(v), loc(s->getReturnLoc()));
    else emit(v);
  }
  branch_to(f.return_to);
}

}  // namespace quiver::frontend
