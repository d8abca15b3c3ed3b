// qv:: builtins: indices, barrier and math. Each is recognised by its name in namespace qv.
#include "frontend/emitter.h"
#include "frontend/types.h"

#include "ir/intrinsics.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/TypeUtilities.h"

namespace quiver::frontend {

namespace arith = mlir::arith;
namespace math = mlir::math;
using format::ScalarType;

// qv::atomic_*(p, v...): memref.atomic_rmw on the element p points at (buffer or shared);
// compare-and-swap is a generic read-modify-write that keeps the old value unless it matched.
FunctionEmitter::RValue FunctionEmitter::emit_atomic(const clang::CallExpr* e, const std::string& name) {
  mlir::Location l = loc(e->getBeginLoc());
  if (e->getNumArgs() < 2) error(e->getBeginLoc(), "qv::" + name + " takes a pointer and a value");
  Pointer p = emit_pointer(e->getArg(0));
  mlir::Value v = emit_scalar(e->getArg(1));
  clang::QualType t = e->getArg(0)->getType()->getPointeeType();
  if (t.isConstQualified()) error(e->getArg(0)->getBeginLoc(), "qv::" + name + " needs a pointer to non-const memory");
  bool fp = llvm::isa<mlir::FloatType>(v.getType());
  bool sg = !fp && is_signed(kind_of(t, e->getBeginLoc()));
  using K = mlir::arith::AtomicRMWKind;
  std::optional<K> kind;
  if (name == "atomic_add") kind = fp ? K::addf : K::addi;
  else if (name == "atomic_max" && !fp) kind = sg ? K::maxs : K::maxu;
  else if (name == "atomic_min" && !fp) kind = sg ? K::mins : K::minu;
  else if (name == "atomic_exchange") kind = K::assign;
  if (kind) return {builder_.create<mlir::memref::AtomicRMWOp>(l, *kind, v, p.mem, mlir::ValueRange{p.offset})};
  if (name == "atomic_cas" && e->getNumArgs() == 3) {
    mlir::Value desired = emit_scalar(e->getArg(2));
    auto rmw = builder_.create<mlir::memref::GenericAtomicRMWOp>(l, p.mem, mlir::ValueRange{p.offset});
    mlir::OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToStart(rmw.getBody());
    mlir::Value current = rmw.getCurrentValue();
    mlir::Value same = builder_.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, current, v);
    builder_.create<mlir::memref::AtomicYieldOp>(l, builder_.create<arith::SelectOp>(l, same, desired, current).getResult());
    return {rmw.getResult()};
  }
  error(e->getBeginLoc(), "qv::" + name + " is not supported with these argument types");
}

FunctionEmitter::RValue FunctionEmitter::emit_builtin(const clang::CallExpr* e, const clang::FunctionDecl* fn) {
  mlir::Location l = loc(e->getBeginLoc());
  std::string name = fn->getNameAsString();
  if (llvm::StringRef(name).starts_with("atomic_")) return emit_atomic(e, name);
  if (name == "load" || name == "store") return emit_vector_memory(e, name);
  if (llvm::StringRef(name).starts_with("copy_async")) return emit_async_copy(e, name);
  if (auto r = try_emit_matrix_builtin(e, name)) return *r;
  std::vector<mlir::Value> a;
  for (const clang::Expr* arg : e->arguments()) a.push_back(emit_scalar(arg));

  // Indices: thread_id_x ... global_id_z, as uint32_t.
  static const std::pair<const char*, int> index_fns[] = {
      {"thread_id_", 0}, {"block_id_", 1}, {"block_dim_", 2}, {"grid_dim_", 3}, {"global_id_", 4}};
  for (auto [prefix, which] : index_fns) {
    llvm::StringRef n(name);
    if (!n.starts_with(prefix) || n.size() != strlen(prefix) + 1) continue;
    char axis = n.back();
    if (axis < 'x' || axis > 'z') break;
    auto dim = static_cast<mlir::gpu::Dimension>(axis - 'x');
    auto idx = [&](int w) -> mlir::Value {
      switch (w) {
        case 0: return builder_.create<mlir::gpu::ThreadIdOp>(l, dim);
        case 1: return builder_.create<mlir::gpu::BlockIdOp>(l, dim);
        case 2: return builder_.create<mlir::gpu::BlockDimOp>(l, dim);
        default: return builder_.create<mlir::gpu::GridDimOp>(l, dim);
      }
    };
    mlir::Value v;
    if (which == 4) {
      // 32-bit arithmetic, as the spec defines global_id = block_id * block_dim + thread_id.
      auto to32 = [&](mlir::Value x) { return builder_.create<arith::IndexCastUIOp>(l, builder_.getI32Type(), x).getResult(); };
      v = builder_.create<arith::AddIOp>(l, builder_.create<arith::MulIOp>(l, to32(idx(1)), to32(idx(2))), to32(idx(0)));
    } else {
      v = builder_.create<arith::IndexCastUIOp>(l, builder_.getI32Type(), idx(which));
    }
    return {v};
  }

  if (name == "wait_prior_launches") {
    if (e->getNumArgs() != 0) error(e->getBeginLoc(), "qv::wait_prior_launches takes no arguments");
    builder_.create<ir::qv::WaitPriorLaunchesOp>(l);
    return {};
  }

  if (name == "device_fence") {
    if (e->getNumArgs() != 0) error(e->getBeginLoc(), "qv::device_fence takes no arguments");
    builder_.create<ir::qv::DeviceFenceOp>(l);
    return {};
  }

  if (name == "barrier") {
    builder_.create<mlir::gpu::BarrierOp>(l);
    uses_barrier_ = true;
    return {};
  }

  if (name == "subgroup_size")
    return {builder_.create<arith::IndexCastUIOp>(l, builder_.getI32Type(), builder_.create<mlir::gpu::SubgroupSizeOp>(l, mlir::IntegerAttr()))};
  if (name == "subgroup_lane")
    return {builder_.create<arith::IndexCastUIOp>(l, builder_.getI32Type(), builder_.create<mlir::gpu::LaneIdOp>(l, mlir::IntegerAttr()))};
  if (llvm::StringRef(name).starts_with("subgroup_")) {
    bool is_fp = !a.empty() && llvm::isa<mlir::FloatType>(a[0].getType());
    bool is_signed_int = !is_fp && !a.empty() && is_signed(kind_of(e->getArg(0)->getType(), e->getBeginLoc()));
    using Op = mlir::gpu::AllReduceOperation;
    std::optional<Op> reduce;
    if (name == "subgroup_sum") reduce = Op::ADD;
    if (name == "subgroup_max") reduce = is_fp ? Op::MAXNUMF : is_signed_int ? Op::MAXSI : Op::MAXUI;
    if (name == "subgroup_min") reduce = is_fp ? Op::MINNUMF : is_signed_int ? Op::MINSI : Op::MINUI;
    if (reduce) return {builder_.create<mlir::gpu::SubgroupReduceOp>(l, a[0].getType(), a[0], *reduce, /*uniform=*/false)};
    auto mode = name == "subgroup_shuffle_xor" ? mlir::gpu::ShuffleMode::XOR : mlir::gpu::ShuffleMode::IDX;
    if (name == "subgroup_shuffle" || name == "subgroup_shuffle_xor" || name == "subgroup_broadcast") {
      mlir::Value width = builder_.create<arith::IndexCastUIOp>(l, builder_.getI32Type(),
                                                               builder_.create<mlir::gpu::SubgroupSizeOp>(l, mlir::IntegerAttr()));
      return {builder_.create<mlir::gpu::ShuffleOp>(l, a[0], a[1], width, mlir::gpu::ShuffleModeAttr::get(builder_.getContext(), mode)).getShuffleResult()};
    }
  }

  if (name == "dot4_i8") {
    // qv.dot4_i8 (docs/ir.md "The qv dialect"): each target lowers it to its native
    // instruction (dp4a on PTX) or to exact byte-lane arithmetic.
    return {builder_.create<ir::qv::Dot4I8Op>(l, builder_.getI32Type(), a[0], a[1], a[2]).getResult()};
  }

  if (name == "bit_cast") {
    // Same-size scalars of 32 or 16 bits. Where half / bf16 are carried as i16 bits (docs/ir.md),
    // a 16-bit cast becomes i16 -> i16 and vanishes (ir/float16_bits.cpp); elsewhere it is a move.
    mlir::Type to = type_of(e->getType(), e->getBeginLoc());
    auto width = [](mlir::Type t) { return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 0u; };
    if (a.size() != 1 || (width(to) != 32 && width(to) != 16) || width(a[0].getType()) != width(to))
      error(e->getBeginLoc(), "qv::bit_cast takes one scalar of 32 bits (float, int32_t, uint32_t) or 16 bits (qv::half, "
                              "qv::bf16, int16_t, uint16_t) and returns one of the same size");
    if (to == a[0].getType()) return {a[0]};
    return {builder_.create<arith::BitcastOp>(l, to, a[0])};
  }

  auto need = [&](size_t n) {
    if (a.size() != n) error(e->getBeginLoc(), "qv::" + name + " takes " + std::to_string(n) + " arguments");
  };
  // Float scalars, and matrix accumulators (vector<256 x f32>: element-wise, docs/matrix.md).
  bool fp = !a.empty() && llvm::isa<mlir::FloatType>(mlir::getElementTypeOrSelf(a[0].getType()));
  bool sg = !a.empty() && !fp && is_signed(kind_of(e->getArg(0)->getType(), e->getBeginLoc()));
  if (fp) {
    if (name == "exp") { need(1); return {builder_.create<math::ExpOp>(l, a[0])}; }
    if (name == "exp2") { need(1); return {builder_.create<math::Exp2Op>(l, a[0])}; }
    if (name == "exp2_ftz") {   // math.exp2 marked afn: targets/ptx/exp2_ex2_approx.cpp flushes
      need(1);
      if (!mlir::getElementTypeOrSelf(a[0].getType()).isF32())
        error(e->getBeginLoc(), "qv::exp2_ftz takes float (or a float accumulator)");
      return {builder_.create<math::Exp2Op>(l, a[0], arith::FastMathFlags::afn)};
    }
    if (name == "rcp") {   // 1 / x marked afn: targets/ptx/rcp_approx.cpp makes it rcp.approx.ftz
      need(1);
      if (!a[0].getType().isF32()) error(e->getBeginLoc(), "qv::rcp takes float");
      mlir::Value one = builder_.create<arith::ConstantOp>(l, builder_.getF32FloatAttr(1.0f));
      return {builder_.create<arith::DivFOp>(l, one, a[0], arith::FastMathFlags::afn)};
    }
    if (name == "log") { need(1); return {builder_.create<math::LogOp>(l, a[0])}; }
    if (name == "log2") { need(1); return {builder_.create<math::Log2Op>(l, a[0])}; }
    if (name == "sqrt") { need(1); return {builder_.create<math::SqrtOp>(l, a[0])}; }
    if (name == "rsqrt") { need(1); return {builder_.create<math::RsqrtOp>(l, a[0])}; }
    if (name == "sin") { need(1); return {builder_.create<math::SinOp>(l, a[0])}; }
    if (name == "cos") { need(1); return {builder_.create<math::CosOp>(l, a[0])}; }
    if (name == "tanh") { need(1); return {builder_.create<math::TanhOp>(l, a[0])}; }
    if (name == "erf") { need(1); return {builder_.create<math::ErfOp>(l, a[0])}; }
    if (name == "pow") { need(2); return {builder_.create<math::PowFOp>(l, a[0], a[1])}; }
    if (name == "abs") { need(1); return {builder_.create<math::AbsFOp>(l, a[0])}; }
    if (name == "floor") { need(1); return {builder_.create<math::FloorOp>(l, a[0])}; }
    if (name == "ceil") { need(1); return {builder_.create<math::CeilOp>(l, a[0])}; }
    if (name == "fma") { need(3); return {builder_.create<math::FmaOp>(l, a[0], a[1], a[2])}; }
    if (name == "min") { need(2); return {builder_.create<arith::MinNumFOp>(l, a[0], a[1])}; }
    if (name == "max") { need(2); return {builder_.create<arith::MaxNumFOp>(l, a[0], a[1])}; }
    if (name == "clamp") {
      need(3);
      return {builder_.create<arith::MinNumFOp>(l, builder_.create<arith::MaxNumFOp>(l, a[0], a[1]), a[2])};
    }
  } else if (!a.empty()) {
    if (name == "abs") { need(1); return {builder_.create<math::AbsIOp>(l, a[0])}; }
    auto mn = [&](mlir::Value x, mlir::Value y) -> mlir::Value {
      return sg ? builder_.create<arith::MinSIOp>(l, x, y).getResult() : builder_.create<arith::MinUIOp>(l, x, y).getResult();
    };
    auto mx = [&](mlir::Value x, mlir::Value y) -> mlir::Value {
      return sg ? builder_.create<arith::MaxSIOp>(l, x, y).getResult() : builder_.create<arith::MaxUIOp>(l, x, y).getResult();
    };
    if (name == "min") { need(2); return {mn(a[0], a[1])}; }
    if (name == "max") { need(2); return {mx(a[0], a[1])}; }
    if (name == "clamp") { need(3); return {mn(mx(a[0], a[1]), a[2])}; }
  }
  error(e->getBeginLoc(), "qv::" + name + " is not supported with these argument types");
}

}  // namespace quiver::frontend
