// Emits one kernel (with its QV_DEVICE helpers inlined) from the Clang AST into a func.func of
// the neutral IR. Locals live in rank-0 memref.alloca slots (mem2reg promotes them later);
// control flow is emitted as cf branches (lift-cf-to-scf structures it later). A pointer is a
// (buffer memref, element offset) pair, so pointer arithmetic never leaves its buffer.
#pragma once

#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/Diagnostic.h"
#include "format/manifest.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::frontend {

// Thrown after a diagnostic has been reported, to abandon the current kernel.
struct EmitAbort {};

class FunctionEmitter {
 public:
  FunctionEmitter(clang::ASTContext& ast, clang::DiagnosticsEngine& diags, mlir::ModuleOp module)
      : ast_(ast), diags_(diags), module_(module), builder_(module.getContext()) {}

  // Emits `fd` as a kernel named `symbol`; fills `kernel.params`. Returns nullptr after errors.
  mlir::func::FuncOp emit_kernel(const clang::FunctionDecl* fd, const std::string& symbol,
                                 format::Kernel& kernel);

  [[noreturn]] void error(clang::SourceLocation loc, const llvm::Twine& message);

 private:
  struct Pointer {            // a pointer rvalue
    mlir::Value mem;          // memref<?xT> (buffer) or memref<NxT, workgroup> (shared)
    mlir::Value offset;       // index
  };
  struct LValue {
    mlir::Value mem;
    mlir::Value index;        // null for a rank-0 slot
    int lane = -1;            // >= 0: one element of the qv::vec stored at (mem, index)
  };
  struct RValue {
    mlir::Value value;        // scalar
    Pointer ptr;              // when is_pointer
    bool is_pointer = false;
  };
  struct Binding {
    enum Kind { Slot, PointerVar, Reference, Shared } kind = Slot;
    mlir::Value slot;         // Slot: memref<T>; PointerVar: memref<index> holding the offset
    mlir::Value base;         // PointerVar / Shared: the memref
    LValue ref;               // Reference
  };
  struct Frame {              // one inlined call (the kernel itself is frame 0)
    const clang::FunctionDecl* fn;
    mlir::Block* return_to;
    mlir::Value return_slot;  // memref<T> or null for void
  };
  struct Jump {
    mlir::Block* break_to;
    mlir::Block* continue_to;  // null for switch
  };

  // statements (emit_stmt.cpp)
  void emit_stmt(const clang::Stmt* s);
  void emit_decl(const clang::VarDecl* vd);
  void emit_if(const clang::IfStmt* s);
  void emit_loop(const clang::Stmt* init, const clang::Expr* cond, const clang::VarDecl* cond_var,
                 const clang::Expr* inc, const clang::Stmt* body, bool test_first);
  void emit_switch(const clang::SwitchStmt* s);
  void emit_return(const clang::ReturnStmt* s);

  // expressions (emit_expr.cpp)
  RValue emit(const clang::Expr* e);
  mlir::Value emit_scalar(const clang::Expr* e);
  mlir::Value emit_condition(const clang::Expr* e);   // i1
  LValue emit_lvalue(const clang::Expr* e);
  Pointer emit_pointer(const clang::Expr* e);
  RValue emit_cast(const clang::CastExpr* e);
  RValue emit_binary(const clang::BinaryOperator* e);
  RValue emit_assign(const clang::BinaryOperator* e);
  RValue emit_unary(const clang::UnaryOperator* e);
  RValue emit_conditional(const clang::AbstractConditionalOperator* e, bool as_value = false);
  mlir::Value emit_logical(const clang::BinaryOperator* e);
  RValue emit_call(const clang::CallExpr* e);
  RValue emit_inline_call(const clang::CallExpr* e, const clang::FunctionDecl* fn);
  std::optional<mlir::Value> try_constant(const clang::Expr* e);

  // qv::half, qv::bf16 and qv::vec values (emit_values.cpp): construction, conversions,
  // copies and assignments, element access, vector arithmetic, qv::load / qv::store.
  RValue emit_construct(const clang::CXXConstructExpr* e);
  std::optional<RValue> try_emit_value_call(const clang::CallExpr* e, const clang::FunctionDecl* fn);
  std::optional<LValue> try_emit_value_lvalue(const clang::Expr* e);
  RValue emit_vector_memory(const clang::CallExpr* e, const std::string& name);
  RValue emit_async_copy(const clang::CallExpr* e, const std::string& name);
  mlir::Value vector_arith(clang::OverloadedOperatorKind op, clang::QualType vec_type, mlir::Value a, mlir::Value b,
                           clang::SourceLocation where);

  // builtins (builtins.cpp): qv::thread_id_x() and friends, math, barrier.
  RValue emit_builtin(const clang::CallExpr* e, const clang::FunctionDecl* fn);
  RValue emit_atomic(const clang::CallExpr* e, const std::string& name);
  // qv::load_matrix_*, qv::mma, qv::store_matrix (emit_matrix.cpp). Null when `name` is none of them.
  std::optional<RValue> try_emit_matrix_builtin(const clang::CallExpr* e, const std::string& name);
  std::optional<RValue> try_emit_warpgroup_builtin(const clang::CallExpr* e, const std::string& name);
  std::optional<RValue> try_emit_block_builtin(const clang::CallExpr* e, const std::string& name);

  // helpers
  mlir::Location loc(clang::SourceLocation l);
  format::ScalarType kind_of(clang::QualType t, clang::SourceLocation where);
  mlir::Type type_of(clang::QualType t, clang::SourceLocation where);
  mlir::Value convert(mlir::Value v, clang::QualType from, clang::QualType to, clang::SourceLocation where);
  mlir::Value load(const LValue& lv, mlir::Location l);
  void store(const LValue& lv, mlir::Value v, mlir::Location l);
  mlir::Value to_index(mlir::Value v, clang::QualType t, mlir::Location l);
  mlir::Value int_const(mlir::Type t, int64_t v, mlir::Location l);
  mlir::Value new_slot(mlir::Type t);              // rank-0 memref.alloca in the entry block
  mlir::Block* new_block();
  void branch_to(mlir::Block* b);                   // terminates the current block (if open)
  void continue_in(mlir::Block* b);                 // insertion point at the end of b
  bool block_open();
  const clang::FunctionDecl* callee_definition(const clang::CallExpr* e);

  clang::ASTContext& ast_;
  clang::DiagnosticsEngine& diags_;
  mlir::ModuleOp module_;
  mlir::OpBuilder builder_;
  mlir::func::FuncOp func_;
  mlir::Block* entry_ = nullptr;
  llvm::DenseMap<const clang::VarDecl*, Binding> vars_;
  std::vector<Frame> frames_;
  std::vector<Jump> jumps_;
  bool uses_barrier_ = false;
};

}  // namespace quiver::frontend
