#include "targets/spirv/matrix_coop_lanes.h"

#include <map>

#include "ir/dialect/QvDialect.h"
#include "ir/matrix.h"
#include "ir/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "targets/spirv/matrix_coop.h"

namespace quiver::compiler::spirv_target {
namespace {

using ir::MatrixOp;

constexpr int64_t kShare = ir::kMatrixElements / kShareSubgroupSize;   // elements a lane holds: 8
constexpr int64_t kScratchStride = ir::kMatrixTile;                      // the scratch is a packed tile

enum class Rep { Matrix, Share };

bool is_acc(mlir::Type t) {
  return ir::is_matrix_type(t) && llvm::cast<mlir::VectorType>(t).getElementType().isF32();
}

std::optional<MatrixOp> matrix_call(mlir::Operation* op) { return ir::matrix_op_of(op); }

// A tile filled with one scalar: it has both forms for free.
bool is_splat(mlir::Value v) {
  mlir::Operation* def = v.getDefiningOp();
  if (!def) return false;
  if (llvm::isa<mlir::vector::BroadcastOp, mlir::vector::SplatOp, mlir::ub::PoisonOp>(def)) return true;
  if (auto c = llvm::dyn_cast<mlir::arith::ConstantOp>(def)) {
    auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(c.getValue());
    return dense && dense.isSplat();
  }
  return false;
}

bool all_acc(mlir::Operation* op) {
  return op->getNumResults() == 1 && is_acc(op->getResult(0).getType()) &&
         llvm::all_of(op->getOperandTypes(), is_acc);
}

// + - / and scaling, which cooperative matrices have: such an operation takes the form its
// operands and users want.
bool either_form(mlir::Operation* op) {
  if (!all_acc(op)) return false;
  if (llvm::isa<mlir::arith::AddFOp, mlir::arith::SubFOp, mlir::arith::DivFOp, mlir::arith::NegFOp>(op)) return true;
  if (auto mul = llvm::dyn_cast<mlir::arith::MulFOp>(op)) return is_splat(mul.getLhs()) || is_splat(mul.getRhs());
  return false;
}

// Element-wise math cooperative matrices lack (exp2, max, products of two accumulators, …).
bool share_only(mlir::Operation* op) {
  return all_acc(op) && op->hasTrait<mlir::OpTrait::Elementwise>() && !either_form(op) && !is_splat(op->getResult(0));
}

std::string where(mlir::Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->getLoc().print(os);
  return "'" + op->getName().getStringRef().str() + "' at " + s;
}

mlir::Type memory_element(mlir::Value memref) { return llvm::cast<mlir::MemRefType>(memref.getType()).getElementType(); }

// The block argument of `succ` that operand `use` of a branch feeds, if any.
mlir::BlockArgument forwarded_argument(mlir::OpOperand& use) {
  auto branch = llvm::dyn_cast<mlir::BranchOpInterface>(use.getOwner());
  if (!branch) return {};
  for (unsigned s = 0; s < branch->getNumSuccessors(); ++s) {
    mlir::SuccessorOperands ops = branch.getSuccessorOperands(s);
    mlir::OperandRange forwarded = ops.getForwardedOperands();
    if (forwarded.empty()) continue;
    unsigned first = forwarded.getBeginOperandIndex();
    if (use.getOperandNumber() >= first && use.getOperandNumber() < first + forwarded.size())
      return branch->getSuccessor(s)->getArgument(ops.getProducedOperandCount() + use.getOperandNumber() - first);
  }
  return {};
}

// Which accumulators live as shares: products' results are matrices and the results of
// share-only operations are shares; the rest (+ - / and scaling, loads, block arguments) start
// as matrices and become shares when an operand is one, or when every user wants a share and
// none needs a matrix. Values only ever turn into shares, so this ends.
class FormSolver {
 public:
  explicit FormSolver(mlir::func::FuncOp fn) {
    fn.walk([&](mlir::Block* block) {
      if (block->isEntryBlock()) return;
      for (mlir::BlockArgument arg : block->getArguments())
        if (is_acc(arg.getType())) free_.push_back(arg);
    });
    fn.walk([&](mlir::Operation* op) {
      for (mlir::Value r : op->getResults()) {
        if (!is_acc(r.getType()) || is_splat(r)) continue;
        auto m = matrix_call(op);
        if (m == MatrixOp::RowMax || m == MatrixOp::RowSum || share_only(op)) rep_[r] = Rep::Share;
        else if (m == MatrixOp::Mma) rep_[r] = Rep::Matrix;
        else free_.push_back(r);
      }
    });
    for (mlir::Value v : free_) rep_[v] = Rep::Matrix;
    for (bool changed = true; changed;) {
      changed = false;
      for (mlir::Value v : free_)
        if (rep_[v] == Rep::Matrix && becomes_share(v)) {
          rep_[v] = Rep::Share;
          changed = true;
        }
    }
  }

  // The form of a non-splat accumulator.
  Rep form(mlir::Value v) const { return rep_.lookup(v); }
  bool known(mlir::Value v) const { return rep_.count(v) != 0; }

 private:
  bool is_share(mlir::Value v) const { return !is_splat(v) && rep_.lookup(v) == Rep::Share; }

  bool becomes_share(mlir::Value v) {
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
      mlir::Block* block = arg.getOwner();
      for (auto it = block->pred_begin(); it != block->pred_end(); ++it) {
        auto branch = llvm::cast<mlir::BranchOpInterface>((*it)->getTerminator());
        for (unsigned s = 0; s < branch->getNumSuccessors(); ++s)
          if (branch->getSuccessor(s) == block && is_share(branch.getSuccessorOperands(s)[arg.getArgNumber()]))
            return true;
      }
    } else if (either_form(v.getDefiningOp())) {
      if (llvm::any_of(v.getDefiningOp()->getOperands(), [&](mlir::Value o) { return is_share(o); })) return true;
    }
    bool wants_share = false;
    for (mlir::OpOperand& use : v.getUses()) {
      mlir::Operation* user = use.getOwner();
      auto m = matrix_call(user);
      if (m == MatrixOp::Mma) return false;
      if (m == MatrixOp::RowMax || m == MatrixOp::RowSum || share_only(user)) wants_share = true;
      else if (either_form(user)) {
        if (!is_share(user->getResult(0))) return false;
        wants_share = true;
      } else if (mlir::BlockArgument arg = forwarded_argument(use)) {
        if (!is_share(arg)) return false;
        wants_share = true;
      }
      // Stores and to_matrix_a take either form.
    }
    return wants_share;
  }

  llvm::DenseMap<mlir::Value, Rep> rep_;
  llvm::SmallVector<mlir::Value> free_;
};

class LaneRewriter {
 public:
  explicit LaneRewriter(mlir::func::FuncOp fn) : fn_(fn), b_(fn.getContext()) {}

  void run() {
    FormSolver forms(fn_);
    mlir::MLIRContext* ctx = fn_.getContext();
    share_type_ = mlir::VectorType::get({kShare}, mlir::Float32Type::get(ctx));
    set_up_scratch();

    // Shares take their type in place; every use then gets the form it needs.
    llvm::SmallVector<mlir::Value> shares;
    fn_.walk([&](mlir::Block* block) {
      if (!block->isEntryBlock())
        for (mlir::BlockArgument arg : block->getArguments())
          if (forms.known(arg) && forms.form(arg) == Rep::Share) shares.push_back(arg);
    });
    fn_.walk([&](mlir::Operation* op) {
      for (mlir::Value r : op->getResults())
        if (forms.known(r) && forms.form(r) == Rep::Share) shares.push_back(r);
    });
    for (mlir::Value v : shares) {
      form_[v] = Rep::Share;
      v.setType(share_type_);
    }
    llvm::SmallVector<mlir::Operation*> ops, splats;
    fn_.walk([&](mlir::Operation* op) {
      ops.push_back(op);
      if (op->getNumResults() == 1 && is_splat(op->getResult(0)) && is_acc(op->getResult(0).getType()))
        splats.push_back(op);
    });
    for (mlir::Operation* op : ops) {
      for (mlir::OpOperand& use : op->getOpOperands()) {
        mlir::Value v = use.get();
        if (!(is_splat(v) && is_acc(v.getType())) && !forms.known(v)) continue;
        std::optional<Rep> need = needed(use, forms);
        if (need) use.set(in_form(v, *need, forms));
      }
    }
    for (mlir::Operation* op : ops) {
      auto m = matrix_call(op);
      if (!m) continue;
      mlir::Operation* call = op;
      bool share_operand = call->getNumOperands() > 0 && call->getOperands().back().getType() == share_type_;
      switch (*m) {
        case MatrixOp::RowMax:
        case MatrixOp::RowSum: replace(call, row_reduce(call, call->getOperand(0), *m == MatrixOp::RowMax)); break;
        case MatrixOp::LoadAcc:
          if (call->getResult(0).getType() == share_type_) replace(call, load_share(call));
          break;
        case MatrixOp::Store:
          if (share_operand) {
            store_share(call);
            call->erase();
          }
          break;
        case MatrixOp::ToA: replace(call, to_left_operand(call)); break;
        default: break;
      }
    }
    for (mlir::Operation* op : splats)
      if (op->use_empty()) op->erase();
  }

 private:
  // The form operand `use` must have; nullopt where either does (stores, to_matrix_a).
  std::optional<Rep> needed(mlir::OpOperand& use, const FormSolver& forms) {
    mlir::Operation* user = use.getOwner();
    if (auto m = matrix_call(user)) {
      if (*m == MatrixOp::Mma) return Rep::Matrix;
      if (*m == MatrixOp::RowMax || *m == MatrixOp::RowSum) return Rep::Share;
      return is_splat(use.get()) ? std::optional<Rep>(Rep::Matrix) : std::nullopt;
    }
    if (mlir::BlockArgument arg = forwarded_argument(use))
      return forms.known(arg) ? std::optional<Rep>(forms.form(arg)) : std::nullopt;
    if (share_only(user) || user->getNumResults() == 1 && user->getResult(0).getType() == share_type_)
      return Rep::Share;
    if (either_form(user)) return Rep::Matrix;
    return std::nullopt;
  }

  Rep form_of(mlir::Value v, const FormSolver& forms) {
    if (auto it = form_.find(v); it != form_.end()) return it->second;
    return forms.known(v) ? forms.form(v) : Rep::Matrix;
  }

  // `v` in form `want`, converted once, right after its definition (which dominates every use
  // and runs in the subgroup-uniform control flow every tile operation needs).
  mlir::Value in_form(mlir::Value v, Rep want, const FormSolver& forms) {
    if (is_splat(v) && is_acc(v.getType())) {
      if (want == Rep::Matrix) return v;
      if (mlir::Value done = converted_[want].lookup(v)) return done;
      mlir::Operation* def = v.getDefiningOp();
      b_.setInsertionPointAfter(def);
      mlir::Operation* copy = b_.clone(*def);
      if (auto c = llvm::dyn_cast<mlir::arith::ConstantOp>(copy)) {
        auto dense = llvm::cast<mlir::DenseElementsAttr>(c.getValue());
        c.setValueAttr(dense.resizeSplat(share_type_));
      }
      copy->getResult(0).setType(share_type_);
      return converted_[want][v] = copy->getResult(0);
    }
    if (form_of(v, forms) == want) return v;
    if (mlir::Value done = converted_[want].lookup(v)) return done;
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) b_.setInsertionPointToStart(arg.getOwner());
    else b_.setInsertionPointAfter(v.getDefiningOp());
    mlir::Value out = want == Rep::Share ? matrix_to_share(v) : share_to_matrix(v);
    return converted_[want][v] = out;
  }

  // The subgroup's scratch (one packed 16 x 16 tile of float, and one of half for left operands)
  // and where this lane's share sits in it, computed once at the kernel's entry.
  void set_up_scratch() {
    auto block = fn_->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
    int64_t threads = 1;
    if (block)
      for (int32_t d : block.asArrayRef()) threads *= d;
    subgroups_ = (threads + kShareSubgroupSize - 1) / kShareSubgroupSize;
    l_ = fn_.getLoc();
    b_.setInsertionPointToStart(&fn_.getBody().front());
    mlir::Value sg = b_.create<mlir::gpu::SubgroupIdOp>(l_, mlir::IntegerAttr());
    base_ = b_.create<mlir::arith::MulIOp>(l_, sg, index(ir::kMatrixElements));
    lane_ = b_.create<mlir::gpu::LaneIdOp>(l_, mlir::IntegerAttr());
    share_at_ = b_.create<mlir::arith::AddIOp>(l_, base_, b_.create<mlir::arith::MulIOp>(l_, lane_, index(kShare)));
  }

  mlir::Value scratch(mlir::Type element) {
    mlir::Value& s = element.isF32() ? scratch_f32_ : scratch_f16_;
    if (s) return s;
    mlir::OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(&fn_.getBody().front());
    auto space = mlir::gpu::AddressSpaceAttr::get(b_.getContext(), mlir::gpu::AddressSpace::Workgroup);
    auto type = mlir::MemRefType::get({subgroups_ * ir::kMatrixElements}, element, mlir::MemRefLayoutAttrInterface(), space);
    return s = b_.create<mlir::memref::AllocaOp>(l_, type);
  }

  mlir::Value index(int64_t v) { return b_.create<mlir::arith::ConstantIndexOp>(l_, v); }
  mlir::Value i32(int64_t v) { return b_.create<mlir::arith::ConstantIntOp>(l_, v, 32); }

  mlir::Operation* call(MatrixOp op, mlir::ValueRange operands, mlir::Type result = {}) {
    return ir::create_matrix_op(b_, l_, op, operands, result);
  }

  void subgroup_barrier() { b_.create<ir::qv::SubgroupBarrierOp>(l_); }

  mlir::Value element(mlir::Value share, int64_t i) { return b_.create<mlir::vector::ExtractOp>(l_, share, i); }

  // A share's eight elements at `at` of float memory: two 16-byte accesses (legalisation keeps
  // them whole: buffers through word views, workgroup arrays as words), not eight 4-byte ones
  // that hit the same banks eight lanes at a time.
  mlir::Value read_share(mlir::Value mem, mlir::Value at) {
    auto quad = mlir::VectorType::get({kShare / 2}, b_.getF32Type());
    mlir::Value lo = b_.create<mlir::vector::LoadOp>(l_, quad, mem, mlir::ValueRange{at});
    mlir::Value hi = b_.create<mlir::vector::LoadOp>(l_, quad, mem, mlir::ValueRange{add(at, kShare / 2)});
    return b_.create<mlir::vector::ShuffleOp>(l_, lo, hi, llvm::ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  }

  // The share to memory of float (two 16-byte stores) or of a 16-bit type (rounded to nearest
  // even, one 16-byte store).
  void write_share(mlir::Value share, mlir::Value mem, mlir::Value at) {
    mlir::Type memory = memory_element(mem);
    if (!memory.isF32()) {
      mlir::Value rounded = b_.create<mlir::arith::TruncFOp>(l_, mlir::VectorType::get({kShare}, memory), share);
      b_.create<mlir::vector::StoreOp>(l_, rounded, mem, mlir::ValueRange{at});
      return;
    }
    mlir::Value lo = b_.create<mlir::vector::ShuffleOp>(l_, share, share, llvm::ArrayRef<int64_t>{0, 1, 2, 3});
    mlir::Value hi = b_.create<mlir::vector::ShuffleOp>(l_, share, share, llvm::ArrayRef<int64_t>{4, 5, 6, 7});
    b_.create<mlir::vector::StoreOp>(l_, lo, mem, mlir::ValueRange{at});
    b_.create<mlir::vector::StoreOp>(l_, hi, mem, mlir::ValueRange{add(at, kShare / 2)});
  }

  // Each trip starts with a barrier: the previous trip's readers are done with the scratch.
  mlir::Value matrix_to_share(mlir::Value m) {
    mlir::Value s = scratch(b_.getF32Type());
    subgroup_barrier();
    call(MatrixOp::Store, {s, base_, i32(kScratchStride), m});
    subgroup_barrier();
    return read_share(s, share_at_);
  }

  mlir::Value share_to_matrix(mlir::Value share) {
    mlir::Value s = scratch(b_.getF32Type());
    subgroup_barrier();
    write_share(share, s, share_at_);
    subgroup_barrier();
    auto acc = mlir::VectorType::get({ir::kMatrixElements}, b_.getF32Type());
    return call(MatrixOp::LoadAcc, {s, base_, i32(kScratchStride)}, acc)->getResult(0);
  }

  mlir::Value add(mlir::Value at, int64_t i) { return i ? b_.create<mlir::arith::AddIOp>(l_, at, index(i)) : at; }

  // Element (r, c) of the share of lane L: r = L / 2, c = 8 (L % 2) + i; at off + r stride + c.
  mlir::Value share_address(mlir::Value offset, mlir::Value stride_i32) {
    mlir::Value stride = b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), stride_i32);
    mlir::Value row = b_.create<mlir::arith::DivUIOp>(l_, lane_, index(2));
    mlir::Value col = b_.create<mlir::arith::MulIOp>(l_, b_.create<mlir::arith::RemUIOp>(l_, lane_, index(2)), index(kShare));
    return b_.create<mlir::arith::AddIOp>(l_, offset,
                                          b_.create<mlir::arith::AddIOp>(l_, b_.create<mlir::arith::MulIOp>(l_, row, stride), col));
  }

  mlir::Value load_share(mlir::Operation* load) {
    b_.setInsertionPoint(load);
    return read_share(load->getOperand(0), share_address(load->getOperand(1), load->getOperand(2)));
  }

  void store_share(mlir::Operation* store) {
    b_.setInsertionPoint(store);
    write_share(store->getOperand(3), store->getOperand(0), share_address(store->getOperand(1), store->getOperand(2)));
  }

  // In-lane in index order, then with the lane holding the row's other half; both lanes combine
  // the same two values (a + b == b + a), so every element of a row gets the same statistic.
  mlir::Value row_reduce(mlir::Operation* reduce, mlir::Value share, bool max) {
    b_.setInsertionPoint(reduce);
    auto combine = [&](mlir::Value a, mlir::Value c) -> mlir::Value {
      if (max) return b_.create<mlir::arith::MaxNumFOp>(l_, a, c);
      return b_.create<mlir::arith::AddFOp>(l_, a, c);
    };
    mlir::Value r = element(share, 0);
    for (int64_t i = 1; i < kShare; ++i) r = combine(r, element(share, i));
    mlir::Value other =
        b_.create<mlir::gpu::ShuffleOp>(l_, r, 1, int32_t(kShareSubgroupSize), mlir::gpu::ShuffleMode::XOR).getShuffleResult();
    return b_.create<mlir::vector::BroadcastOp>(l_, share_type_, combine(r, other));
  }

  // to_matrix_a: the accumulator rounded to half (nearest even) in the half scratch, loaded back
  // as a left operand.
  mlir::Value to_left_operand(mlir::Operation* to_a) {
    b_.setInsertionPoint(to_a);
    mlir::Value v = to_a->getOperand(0);
    mlir::Type half = llvm::cast<mlir::VectorType>(to_a->getResult(0).getType()).getElementType();
    mlir::Value s = scratch(half);
    subgroup_barrier();
    if (v.getType() == share_type_) {
      write_share(v, s, share_at_);
    } else {
      call(MatrixOp::Store, {s, base_, i32(kScratchStride), v});
    }
    subgroup_barrier();
    return call(MatrixOp::LoadA, {s, base_, i32(kScratchStride)}, to_a->getResult(0).getType())->getResult(0);
  }

  void replace(mlir::Operation* call, mlir::Value v) {
    call->getResult(0).replaceAllUsesWith(v);
    call->erase();
  }

  mlir::func::FuncOp fn_;
  mlir::OpBuilder b_;
  mlir::Location l_ = mlir::UnknownLoc::get(fn_.getContext());
  mlir::VectorType share_type_;
  int64_t subgroups_ = 1;
  mlir::Value base_, lane_, share_at_, scratch_f32_, scratch_f16_;
  llvm::DenseMap<mlir::Value, Rep> form_;
  std::map<Rep, llvm::DenseMap<mlir::Value, mlir::Value>> converted_;   // per form wanted
};

}  // namespace

bool lanes_applicable(mlir::func::FuncOp fn, std::string& why) {
  // A share is a 32nd of a tile per lane: a partial subgroup would leave rows unheld.
  if (auto block = fn->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block")) {
    int64_t threads = 1;
    for (int32_t d : block.asArrayRef()) threads *= d;
    if (threads % kShareSubgroupSize != 0) {
      why = "a block of " + std::to_string(threads) + " threads (lane shares need whole subgroups of " +
            std::to_string(kShareSubgroupSize) + ")";
      return false;
    }
  }
  bool row_math = false;
  fn.walk([&](mlir::Operation* op) {
    if (!why.empty()) return;
    if (auto m = matrix_call(op)) {
      row_math |= *m == MatrixOp::RowMax || *m == MatrixOp::RowSum || *m == MatrixOp::ToA;
      mlir::ValueRange args = op->getOperands();
      switch (*m) {
        case MatrixOp::LoadA:
        case MatrixOp::LoadB:
        case MatrixOp::LoadBT:
          if (!memory_element(args[0]).isF16()) why = "tiles of bf16 (the device reports half tiles only)";
          break;
        case MatrixOp::Store:
          if (!memory_element(args[0]).isF32() && !memory_element(args[0]).isF16()) why = "a store of a tile to bf16 memory";
          break;
        case MatrixOp::Mma:
          if (!llvm::cast<mlir::VectorType>(args[0].getType()).getElementType().isF16()) why = "products of bf16 tiles";
          break;
        case MatrixOp::ToA:
          if (!llvm::cast<mlir::VectorType>(op->getResult(0).getType()).getElementType().isF16())
            why = "qv::to_matrix_a to bf16";
          break;
        default: break;
      }
      if (!why.empty()) why += " (" + where(op) + ")";
      return;
    }
    bool tiles = llvm::any_of(op->getOperandTypes(), ir::is_matrix_type) ||
                 llvm::any_of(op->getResultTypes(), ir::is_matrix_type);
    if (!tiles || llvm::isa<mlir::BranchOpInterface>(op)) return;
    if (op->getNumResults() == 1 && is_splat(op->getResult(0))) return;
    if (either_form(op)) return;
    if (share_only(op)) {
      row_math = true;
      return;
    }
    why = where(op) + " on a tile has neither a cooperative-matrix nor a lane-share form";
  });
  if (why.empty() && !row_math) why = "no accumulator math that needs lane shares";
  return why.empty();
}

void move_accumulator_math_to_lanes(mlir::func::FuncOp fn) { LaneRewriter(fn).run(); }

void move_kernels_accumulator_math_to_lanes(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols) {
  for (mlir::func::FuncOp fn : ir::named_kernels(module, symbols)) {
    const std::string symbol = fn.getSymName().str();
    std::string why;
    if (!lanes_applicable(fn, why)) throw std::runtime_error(symbol + ": lane shares cannot take its tiles: " + why);
    move_accumulator_math_to_lanes(fn);
    if (!coop_lowerable(fn, why)) throw std::runtime_error(symbol + ": internal: lane shares left " + why);
    fn.walk([](mlir::gpu::SubgroupSizeOp op) {
      mlir::OpBuilder b(op);
      op.replaceAllUsesWith(b.create<mlir::arith::ConstantIndexOp>(op.getLoc(), kShareSubgroupSize).getResult());
      op.erase();
    });
  }
}

}  // namespace quiver::compiler::spirv_target
