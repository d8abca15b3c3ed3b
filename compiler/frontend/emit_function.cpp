// FunctionEmitter: kernel entry, variables, and the small helpers the statement and
// expression emitters share.
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "clang/AST/DeclCXX.h"
#include "clang/Basic/SourceManager.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace quiver::frontend {

using format::ScalarType;

void FunctionEmitter::error(clang::SourceLocation where, const llvm::Twine& message) {
  unsigned id = diags_.getCustomDiagID(clang::DiagnosticsEngine::Error, "%0");
  diags_.Report(where, id) << message.str();
  throw EmitAbort{};
}

mlir::Location FunctionEmitter::loc(clang::SourceLocation l) {
  auto& sm = ast_.getSourceManager();
  clang::PresumedLoc p = sm.getPresumedLoc(sm.getExpansionLoc(l));
  if (p.isInvalid()) return builder_.getUnknownLoc();
  return mlir::FileLineColLoc::get(builder_.getContext(), p.getFilename(), p.getLine(), p.getColumn());
}

ScalarType FunctionEmitter::kind_of(clang::QualType t, clang::SourceLocation where) {
  if (auto k = scalar_kind(t)) return *k;
  if (is_matrix(t) || is_warpgroup_acc(t) || is_block_acc(t))
    error(where, "a matrix tile cannot be used here (its elements are not addressable: use the qv::*_matrix builtins)");
  if (is_vec(t))
    error(where, "a qv::vec value cannot be used here (it is not a scalar: use v[i] for an element)");
  if (const auto* rd = t->getAsCXXRecordDecl(); rd && rd->isLambda())
    error(where, "lambdas are not supported in kernel code");
  error(where, "type '" + t.getAsString() + "' is not supported in kernel code (use bool, the "
               "fixed-width integers, float, double, qv::half or qv::bf16)");
}

mlir::Type FunctionEmitter::type_of(clang::QualType t, clang::SourceLocation where) {
  clang::QualType elem;
  if (is_vec(t, &elem)) {
    mlir::Type v = storage_type(*builder_.getContext(), t);
    if (!v) error(where, "qv::vec elements must be integers, float, double, qv::half or qv::bf16 (not '" +
                             elem.getAsString() + "')");
    return v;
  }
  MatrixUse use;
  if (is_matrix(t, &elem, &use)) {
    mlir::Type v = storage_type(*builder_.getContext(), t);
    if (!v)
      error(where, std::string(use == MatrixUse::Acc ? "qv::matrix_acc elements must be float or int32_t"
                                                     : "qv::matrix_a / qv::matrix_b elements must be qv::half, qv::bf16 or int8_t") +
                       " (not '" + canonical_type_name(elem) + "')");
    return v;
  }
  uint32_t n = 0;
  if (is_warpgroup_acc(t, &elem, &n)) {
    mlir::Type v = storage_type(*builder_.getContext(), t);
    if (!v)
      error(where, "qv::warpgroup_acc<T, N> needs T = float (or int32_t, for int8 products) and N a multiple of 16 "
                   "from 16 to 256 (not '" + canonical_type_name(t) + "')");
    return v;
  }
  uint32_t m = 0;
  if (is_block_acc(t, &elem, &m, &n)) {
    mlir::Type v = storage_type(*builder_.getContext(), t);
    if (!v)
      error(where, "qv::block_acc<T, M, N> needs T = float (int32_t for int8 products) and M, N multiples of 16 "
                   "from 16 to 1024 (not '" +
                       canonical_type_name(t) + "')");
    return v;
  }
  return value_type(*builder_.getContext(), kind_of(t, where));
}

mlir::Value FunctionEmitter::int_const(mlir::Type t, int64_t v, mlir::Location l) {
  if (t.isIndex()) return builder_.create<mlir::arith::ConstantIndexOp>(l, v);
  return builder_.create<mlir::arith::ConstantOp>(l, builder_.getIntegerAttr(t, v));
}

mlir::Value FunctionEmitter::new_slot(mlir::Type t) {
  mlir::OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToStart(entry_);
  return builder_.create<mlir::memref::AllocaOp>(func_.getLoc(), mlir::MemRefType::get({}, t));
}

mlir::Block* FunctionEmitter::new_block() {
  auto* b = new mlir::Block();
  func_.getBody().push_back(b);
  return b;
}

bool FunctionEmitter::block_open() {
  mlir::Block* b = builder_.getInsertionBlock();
  return b->empty() || !b->back().hasTrait<mlir::OpTrait::IsTerminator>();
}

void FunctionEmitter::branch_to(mlir::Block* b) {
  if (block_open()) builder_.create<mlir::cf::BranchOp>(builder_.getUnknownLoc(), b);
}

void FunctionEmitter::continue_in(mlir::Block* b) { builder_.setInsertionPointToEnd(b); }

mlir::Value FunctionEmitter::load(const LValue& lv, mlir::Location l) {
  mlir::Value v = lv.index ? builder_.create<mlir::memref::LoadOp>(l, lv.mem, mlir::ValueRange{lv.index}).getResult()
                           : builder_.create<mlir::memref::LoadOp>(l, lv.mem).getResult();
  if (lv.lane >= 0) return builder_.create<mlir::vector::ExtractOp>(l, v, llvm::ArrayRef<int64_t>{lv.lane});
  return v;
}

void FunctionEmitter::store(const LValue& lv, mlir::Value v, mlir::Location l) {
  if (lv.lane >= 0) {   // one element of a vector: read, replace the element, write back
    LValue whole = lv;
    whole.lane = -1;
    v = builder_.create<mlir::vector::InsertOp>(l, v, load(whole, l), llvm::ArrayRef<int64_t>{lv.lane});
  }
  if (lv.index) builder_.create<mlir::memref::StoreOp>(l, v, lv.mem, mlir::ValueRange{lv.index});
  else builder_.create<mlir::memref::StoreOp>(l, v, lv.mem);
}

mlir::Value FunctionEmitter::to_index(mlir::Value v, clang::QualType t, mlir::Location l) {
  if (v.getType().isIndex()) return v;
  if (v.getType().isInteger(1) || !is_signed(kind_of(t, {})))
    return builder_.create<mlir::arith::IndexCastUIOp>(l, builder_.getIndexType(), v);
  return builder_.create<mlir::arith::IndexCastOp>(l, builder_.getIndexType(), v);
}

mlir::func::FuncOp FunctionEmitter::emit_kernel(const clang::FunctionDecl* fd, const std::string& symbol,
                                                format::Kernel& kernel) {
  auto& ctx = *builder_.getContext();
  if (!fd->getReturnType()->isVoidType())
    error(fd->getReturnTypeSourceRange().getBegin(), "a QV_KERNEL must return void");
  if (fd->getNumParams() > 16)
    error(fd->getParamDecl(16)->getLocation(), "a kernel takes at most 16 parameters");

  std::vector<mlir::Type> arg_types;
  for (const clang::ParmVarDecl* p : fd->parameters()) {
    clang::QualType t = p->getType();
    format::Param param;
    param.name = p->getNameAsString();
    if (t->isPointerType()) {
      clang::QualType pointee = t->getPointeeType();
      clang::QualType vec_elem;
      uint32_t width = 1;
      if (is_vec(pointee, &vec_elem, &width)) {
        param.vec_width = width;
        pointee = vec_elem.withCVRQualifiers(pointee.getCVRQualifiers());
      }
      auto k = scalar_kind(pointee);
      if (!k) error(p->getLocation(), "kernel parameter '" + param.name + "': buffers of '" +
                                          pointee.getAsString() + "' are not supported");
      param.is_buffer = true;
      param.type = *k;
      param.access = pointee.isConstQualified() ? format::Access::Read : format::Access::ReadWrite;
      if (width > 1 && *k == ScalarType::Bool)
        error(p->getLocation(), "kernel parameter '" + param.name + "': vectors of bool are not supported");
      mlir::Type elem = memory_type(ctx, *k);
      if (width > 1) elem = mlir::VectorType::get({width}, elem);
      arg_types.push_back(mlir::MemRefType::get({mlir::ShapedType::kDynamic}, elem));
    } else {
      auto k = scalar_kind(t);
      static const ScalarType allowed[] = {ScalarType::Bool, ScalarType::I32, ScalarType::U32, ScalarType::I64,
                                           ScalarType::U64, ScalarType::F32, ScalarType::F64, ScalarType::F16};
      if (!k || std::find(std::begin(allowed), std::end(allowed), *k) == std::end(allowed))
        error(p->getLocation(), "kernel parameter '" + param.name + "' has type '" + t.getAsString() +
                                    "'; scalars must be bool, int32_t, uint32_t, int64_t, uint64_t, "
                                    "float, double or qv::half, and buffers pointers");
      param.type = *k;
      arg_types.push_back(*k == ScalarType::Bool ? builder_.getI32Type() : value_type(ctx, *k));
    }
    kernel.params.push_back(param);
  }

  builder_.setInsertionPointToEnd(module_.getBody());
  func_ = builder_.create<mlir::func::FuncOp>(loc(fd->getLocation()), symbol,
                                              builder_.getFunctionType(arg_types, {}));
  entry_ = func_.addEntryBlock();
  // QV_SPECIALIZE parameters, by index, as a function attribute (targets rewrite signatures).
  std::vector<int32_t> specialized;
  for (unsigned i = 0; i < fd->getNumParams(); ++i) {
    const clang::ParmVarDecl* p = fd->getParamDecl(i);
    if (!has_qv_annotation(p, "qv.specialize")) continue;
    const format::Param& param = kernel.params[i];
    if (param.is_buffer || (param.type != ScalarType::I32 && param.type != ScalarType::U32))
      error(p->getLocation(), "kernel parameter '" + param.name +
                                  "': QV_SPECIALIZE takes int32_t or uint32_t parameters only");
    specialized.push_back(static_cast<int32_t>(i));
  }
  if (!specialized.empty()) func_->setAttr("qv.specialize", builder_.getDenseI32ArrayAttr(specialized));
  mlir::Block* exit = new_block();
  builder_.setInsertionPointToEnd(exit);
  builder_.create<mlir::func::ReturnOp>(loc(fd->getEndLoc()));
  builder_.setInsertionPointToEnd(entry_);

  for (unsigned i = 0; i < fd->getNumParams(); ++i) {
    const clang::ParmVarDecl* p = fd->getParamDecl(i);
    mlir::Value arg = entry_->getArgument(i);
    mlir::Location l = loc(p->getLocation());
    Binding b;
    if (kernel.params[i].is_buffer) {
      b.kind = Binding::PointerVar;
      b.base = arg;
      b.slot = new_slot(builder_.getIndexType());
      builder_.create<mlir::memref::StoreOp>(l, int_const(builder_.getIndexType(), 0, l), b.slot);
    } else {
      b.slot = new_slot(type_of(p->getType(), p->getLocation()));
      mlir::Value v = arg;
      if (kernel.params[i].type == ScalarType::Bool)
        v = builder_.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::ne, arg, int_const(arg.getType(), 0, l));
      builder_.create<mlir::memref::StoreOp>(l, v, b.slot);
    }
    vars_[p] = b;
  }

  frames_.push_back({fd, exit, {}});
  emit_stmt(fd->getBody());
  branch_to(exit);
  frames_.pop_back();
  // The exit block must be last so the function reads top to bottom.
  exit->moveBefore(&func_.getBody(), func_.getBody().end());

  func_->setAttr("qv.kernel", builder_.getUnitAttr());
  kernel.uses_barrier = uses_barrier_;
  return func_;
}

const clang::FunctionDecl* FunctionEmitter::callee_definition(const clang::CallExpr* e) {
  const clang::FunctionDecl* fn = e->getDirectCallee();
  if (!fn) error(e->getBeginLoc(), "indirect calls (function pointers, lambdas) are not supported in kernels");
  const clang::FunctionDecl* def = nullptr;
  if (!fn->hasBody(def) || !def) return nullptr;
  return def;
}

}  // namespace quiver::frontend
