// A block's subgroups as lanes of its thread loops (subgroup_lanes.h).
//
// After split_into_thread_loops every thread op of the kernel sits in a thread loop nest
// (z, y, x). A nest holding subgroup operations becomes
//   for g in [0, T / W):                       (qv.cpu.subgroup_loop)
//     lane = gpu.thread_id x, t = g W + lane, (x, y, z) = t's coordinates in the block
//     <the nest's body>
// whose body is then split like a block at a barrier, with `lane` as the thread and W lanes:
// each subgroup operation becomes a store of the lane's operand to a per-lane array, a
// gpu.barrier, and the result: for a reduction, one loop over the W elements run once after
// the lane loop (qv.cpu.after_threads, so its value is uniform over the lanes); for a shuffle,
// each lane's load of its source lane's element. So a subgroup's lanes are consecutive
// iterations of an inner loop, which LLVM vectorises, and its operations cost one pass over
// W values instead of a fiber switch per thread.
#include "targets/cpu/subgroup_lanes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "targets/cpu/barrier_fission.h"

namespace quiver::compiler::cpu {

namespace {

constexpr const char* kGroupLoopAttr = "qv.cpu.subgroup_loop";   // a loop over a block's subgroups

class Lanes {
 public:
  Lanes(mlir::func::FuncOp func, std::array<uint32_t, 3> block)
      : func_(func), entry_(&func.getBody().front()), block_(block),
        threads_(int64_t(block[0]) * block[1] * block[2]) {}

  void run() {
    // A block of one thread has no thread loops: its subgroup of one is what the target's
    // scalar replacement computes.
    if (threads_ == 1) return;
    std::vector<mlir::scf::ForOp> nests;
    func_.walk<mlir::WalkOrder::PreOrder>([&](mlir::scf::ForOp loop) {
      if (!loop->hasAttr(kLoopAttr)) return mlir::WalkResult::advance();
      if (has_subgroup_operations(loop)) nests.push_back(loop);
      return mlir::WalkResult::skip();   // the nest's inner loops are part of it
    });
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(entry_);
    width_ = b.create<mlir::gpu::SubgroupSizeOp>(func_.getLoc(), mlir::IntegerAttr());
    for (mlir::scf::ForOp nest : nests) rewrite(nest);
    if (has_subgroup_operations(func_)) throw FissionFailure{"a subgroup operation outside the thread loops"};
  }

 private:
  mlir::Value constant(mlir::OpBuilder& b, mlir::Location loc, int64_t v) {
    return b.create<mlir::arith::ConstantIndexOp>(loc, v);
  }

  // The nest `outer` as a loop over the subgroups around the lanes' body, then split.
  void rewrite(mlir::scf::ForOp outer) {
    std::array<mlir::Value, 3> ivs{};
    mlir::scf::ForOp inner = outer;
    for (;;) {
      llvm::StringRef dim = inner->getAttrOfType<mlir::StringAttr>(kLoopAttr).getValue();
      ivs[dim[0] - 'x'] = inner.getInductionVar();
      // The next loop of the nest ends its parent's body, after only its bound's constant.
      mlir::Block* body = inner.getBody();
      auto next = mlir::dyn_cast_or_null<mlir::scf::ForOp>(body->getTerminator()->getPrevNode());
      if (!next || !next->hasAttr(kLoopAttr)) break;
      bool only_constants = true;
      for (mlir::Operation& op : body->without_terminator())
        only_constants &= &op == next.getOperation() || mlir::isa<mlir::arith::ConstantOp>(op);
      if (!only_constants) break;
      inner = next;
    }
    mlir::Location loc = outer.getLoc();
    mlir::OpBuilder b(outer);
    mlir::Value groups = b.create<mlir::arith::DivUIOp>(loc, constant(b, loc, threads_), width_);
    auto groups_loop = b.create<mlir::scf::ForOp>(loc, constant(b, loc, 0), groups, constant(b, loc, 1));
    groups_loop->setAttr(kGroupLoopAttr, b.getUnitAttr());
    mlir::Block* body = groups_loop.getBody();
    b.setInsertionPoint(body->getTerminator());
    mlir::Value lane = b.create<mlir::gpu::ThreadIdOp>(loc, mlir::gpu::Dimension::x);
    mlir::Value first = b.create<mlir::arith::MulIOp>(loc, groups_loop.getInductionVar(), width_);
    mlir::Value t = b.create<mlir::arith::AddIOp>(loc, first, lane);
    // t's coordinates (x fastest), for the axes the nest loops over.
    if (ivs[0]) {
      mlir::Value x = block_[1] * block_[2] == 1 ? t : b.create<mlir::arith::RemUIOp>(loc, t, constant(b, loc, block_[0]));
      ivs[0].replaceAllUsesWith(x);
    }
    if (ivs[1]) {
      mlir::Value y = b.create<mlir::arith::DivUIOp>(loc, t, constant(b, loc, block_[0]));
      if (block_[2] > 1) y = b.create<mlir::arith::RemUIOp>(loc, y, constant(b, loc, block_[1]));
      ivs[1].replaceAllUsesWith(y);
    }
    if (ivs[2]) ivs[2].replaceAllUsesWith(b.create<mlir::arith::DivUIOp>(loc, t, constant(b, loc, int64_t(block_[0]) * block_[1])));
    for (mlir::Operation& op : llvm::make_early_inc_range(inner.getBody()->without_terminator()))
      op.moveBefore(body->getTerminator());
    outer.erase();

    std::vector<mlir::Operation*> ops;
    groups_loop.walk([&](mlir::Operation* op) {
      if (mlir::isa<mlir::gpu::SubgroupReduceOp, mlir::gpu::ShuffleOp, mlir::gpu::LaneIdOp>(op)) ops.push_back(op);
    });
    for (mlir::Operation* op : ops) lower(op);
    split_into_thread_loops(groups_loop, body, entry_, {uint32_t(threads_), 1, 1}, width_);
  }

  // A per-lane array of the block's thread count (W never exceeds it), at the kernel's entry.
  mlir::Value lane_array(mlir::Type type, mlir::Location loc) {
    if (mlir::isa<mlir::VectorType>(type) || !mlir::MemRefType::isValidElementType(type))
      throw FissionFailure{"a subgroup operation on a value that is not a scalar"};
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(entry_);
    auto alloca = b.create<mlir::memref::AllocaOp>(loc, mlir::MemRefType::get({threads_}, type));
    alloca->setAttr(kSlotAttr, b.getUnitAttr());
    return alloca;
  }

  // Stores this lane's `value` and meets the subgroup's other lanes; returns the array.
  mlir::Value publish(mlir::OpBuilder& b, mlir::Value value, mlir::Location loc) {
    mlir::Value array = lane_array(value.getType(), loc);
    mlir::Value lane = b.create<mlir::gpu::ThreadIdOp>(loc, mlir::gpu::Dimension::x);
    b.create<mlir::memref::StoreOp>(loc, value, array, lane);
    b.create<mlir::gpu::BarrierOp>(loc);
    return array;
  }

  void lower(mlir::Operation* op) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op->getLoc();
    if (mlir::isa<mlir::gpu::LaneIdOp>(op)) {
      op->getResult(0).replaceAllUsesWith(b.create<mlir::gpu::ThreadIdOp>(loc, mlir::gpu::Dimension::x));
    } else if (auto reduce = mlir::dyn_cast<mlir::gpu::SubgroupReduceOp>(op)) {
      mlir::Value array = publish(b, reduce.getValue(), loc);
      mlir::Value one = constant(b, loc, 1);
      auto first = b.create<mlir::memref::LoadOp>(loc, array, constant(b, loc, 0));
      first->setAttr(kAfterAttr, b.getUnitAttr());
      const mlir::vector::CombiningKind kind = mlir::gpu::convertReductionKind(reduce.getOp());
      auto loop = b.create<mlir::scf::ForOp>(
          loc, one, width_, one, mlir::ValueRange{first.getResult()},
          [&](mlir::OpBuilder& lb, mlir::Location l, mlir::Value i, mlir::ValueRange acc) {
            mlir::Value e = lb.create<mlir::memref::LoadOp>(l, array, i);
            lb.create<mlir::scf::YieldOp>(l, mlir::vector::makeArithReduction(lb, l, kind, acc[0], e));
          });
      loop->setAttr(kAfterAttr, b.getUnitAttr());
      reduce.getResult().replaceAllUsesWith(loop.getResult(0));
    } else if (auto shuffle = mlir::dyn_cast<mlir::gpu::ShuffleOp>(op)) {
      mlir::Value array = publish(b, shuffle.getValue(), loc);
      mlir::Type i32 = b.getI32Type();
      mlir::Value lane = b.create<mlir::gpu::ThreadIdOp>(loc, mlir::gpu::Dimension::x);
      mlir::Value own = b.create<mlir::arith::IndexCastUIOp>(loc, i32, lane);
      mlir::Value offset = shuffle.getOffset();
      mlir::Value src;
      switch (shuffle.getMode()) {
        case mlir::gpu::ShuffleMode::XOR: src = b.create<mlir::arith::XOrIOp>(loc, own, offset); break;
        case mlir::gpu::ShuffleMode::DOWN: src = b.create<mlir::arith::AddIOp>(loc, own, offset); break;
        case mlir::gpu::ShuffleMode::UP: src = b.create<mlir::arith::SubIOp>(loc, own, offset); break;
        case mlir::gpu::ShuffleMode::IDX: src = offset; break;
      }
      // A source past the shuffle's width or the subgroup (or wrapped around) is invalid: the
      // lane keeps its own value, as on the GPU targets.
      mlir::Value size = b.create<mlir::arith::IndexCastUIOp>(loc, i32, width_);
      mlir::Value limit = b.create<mlir::arith::MinUIOp>(loc, shuffle.getWidth(), size);
      mlir::Value valid = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::ult, src, limit);
      if (shuffle.getMode() == mlir::gpu::ShuffleMode::DOWN) {
        mlir::Value forward = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::uge, src, own);
        valid = b.create<mlir::arith::AndIOp>(loc, valid, forward);
      }
      mlir::Value from = b.create<mlir::arith::SelectOp>(loc, valid, src, own);
      mlir::Value index = b.create<mlir::arith::IndexCastUIOp>(loc, b.getIndexType(), from);
      shuffle.getShuffleResult().replaceAllUsesWith(b.create<mlir::memref::LoadOp>(loc, array, index));
      shuffle.getValid().replaceAllUsesWith(valid);
    }
    op->erase();
  }

  mlir::func::FuncOp func_;
  mlir::Block* entry_;
  std::array<uint32_t, 3> block_;
  int64_t threads_;
  mlir::Value width_;
};

}  // namespace

void subgroups_to_lanes(mlir::func::FuncOp func, std::array<uint32_t, 3> block) { Lanes(func, block).run(); }

void subgroups_to_lanes_in_module(mlir::ModuleOp module) {
  for_each_kernel(module, [](mlir::func::FuncOp func, std::array<uint32_t, 3> block) {
    if (has_barrier(func) || !has_subgroup_operations(func)) return;
    bool has_thread_loops = false;
    func.walk([&](mlir::scf::ForOp loop) { has_thread_loops |= loop->hasAttr(kLoopAttr); });
    std::string why_not;
    rewrite_on_copy(func, [&](mlir::func::FuncOp copy) {
      mlir::Block* entry = &copy.getBody().front();
      if (!has_thread_loops) split_into_thread_loops(copy, entry, entry, block, {});
      subgroups_to_lanes(copy, block);
    }, why_not);
  });
}

}  // namespace quiver::compiler::cpu
