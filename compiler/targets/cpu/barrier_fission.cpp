// A barrier kernel's block as loops over its threads (barrier_fission.h).
//
// Each block whose ops the rewrite splits ("split block": the kernel body, and the bodies of
// the scf ops that contain a barrier) has four kinds of ops:
//   sync     a gpu.barrier or an scf.for / scf.if / scf.while containing one: run once per
//            block (their operands uniform), their regions split in turn;
//   uniform  pure, region-free ops on uniform values (constants, index arithmetic on kernel
//            arguments, workgroup-memory views), and the per-thread arrays: hoisted out of the
//            thread loops, visible to every thread;
//   after    the load of thread 0's copy of a value a sync op or the block's terminator needs
//            (a loop bound, a condition), placed after the thread loop that stored it;
//   thread   the rest, run by every thread: each maximal run between sync ops becomes one
//            thread loop nest (z, y, x; x innermost, so consecutive threads are consecutive
//            iterations), gpu.thread_id its induction variables.
// A thread value used outside its run is stored to a per-thread array (memref.alloca of the
// block's size at the kernel's entry) right after its definition and loaded where it is used;
// the results and loop-carried values of sync ops become such arrays first.
#include "targets/cpu/barrier_fission.h"

#include <optional>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "targets/cpu/subgroup_lanes.h"

namespace quiver::compiler::cpu {

namespace {

// Per-thread arrays live on the worker's stack (8 MiB): a kernel needing more keeps fibers.
constexpr uint64_t kMaxSlotBytes = 512 * 1024;

using Failure = FissionFailure;

// Thread first: an op the map does not know (made by the rewrite itself) counts as a thread op.
enum class Kind { Thread, Uniform, Sync, After };

class Fission {
 public:
  // `root`'s block `body` is split; the per-thread arrays go at the start of `entry`. Without
  // `lanes` the thread loops run over `block`; with it, one loop over x from 0 to `lanes` (the
  // lanes of a subgroup, subgroup_lanes.h), `block` then being {capacity, 1, 1}.
  Fission(mlir::Operation* root, mlir::Block* body, mlir::Block* entry, std::array<uint32_t, 3> block,
          mlir::Value lanes)
      : root_(root), body_(body), entry_(entry), block_(block), lanes_(lanes),
        threads_(int64_t(block[0]) * block[1] * block[2]) {}

  void run() {
    // The barriers' enclosing ops in walk order, not sync_'s (pointer) order: the slots their
    // carried values get are created in that order, and an image must be the same bytes in every
    // compilation.
    std::vector<mlir::Operation*> with_values;
    root_->walk([&](mlir::gpu::BarrierOp barrier) {
      for (mlir::Operation* op = barrier; op != root_; op = op->getParentOp()) {
        if (op != barrier.getOperation() && !mlir::isa<mlir::scf::ForOp, mlir::scf::IfOp, mlir::scf::WhileOp>(op))
          throw Failure{"a barrier inside '" + op->getName().getStringRef().str() + "'"};
        if (sync_.insert(op).second && op != barrier.getOperation()) with_values.push_back(op);
      }
    });
    for (mlir::Operation* op : with_values) demote_carried_values(op);
    std::vector<mlir::memref::AllocaOp> private_arrays;
    root_->walk([&](mlir::memref::AllocaOp a) {
      if (!a->hasAttr(kSlotAttr) && !is_workgroup(a)) private_arrays.push_back(a);
    });
    for (mlir::memref::AllocaOp a : private_arrays) give_each_thread_its_array(a);
    split(body_);
    // Every thread op went into a thread loop, its gpu.thread_id replaced by the loop's index.
    mlir::WalkResult stray = root_->walk([](mlir::gpu::ThreadIdOp) { return mlir::WalkResult::interrupt(); });
    if (stray.wasInterrupted()) throw Failure{"a thread id outside the thread loops"};
  }

 private:
  // --- per-thread arrays ---------------------------------------------------------------------

  mlir::Value slot_for(mlir::Type type, mlir::Location loc) {
    if (mlir::isa<mlir::MemRefType, mlir::UnrankedMemRefType>(type) || !mlir::MemRefType::isValidElementType(type)) {
      std::string name;
      llvm::raw_string_ostream os(name);
      type.print(os);
      throw Failure{"a value of type " + name + " live across a barrier"};
    }
    slot_bytes_ += uint64_t(threads_) * byte_size(type);
    if (slot_bytes_ > kMaxSlotBytes) throw Failure{"values live across barriers need more than 512 KiB per block"};
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(entry_);
    auto alloca = b.create<mlir::memref::AllocaOp>(loc, mlir::MemRefType::get({threads_}, type));
    alloca->setAttr(kSlotAttr, b.getUnitAttr());
    return alloca;
  }

  static uint64_t byte_size(mlir::Type type) {
    if (auto v = mlir::dyn_cast<mlir::VectorType>(type)) return v.getNumElements() * byte_size(v.getElementType());
    if (type.isIndex()) return 8;
    return std::max<uint64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
  }

  // This thread's linear id (x fastest), as ops on gpu.thread_id at `b`'s insertion point.
  mlir::Value linear_thread_id(mlir::OpBuilder& b, mlir::Location loc) {
    auto id = [&](mlir::gpu::Dimension d) { return b.create<mlir::gpu::ThreadIdOp>(loc, d).getResult(); };
    auto constant = [&](int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v).getResult(); };
    mlir::Value linear = id(mlir::gpu::Dimension::x);
    if (block_[1] * block_[2] == 1) return linear;
    mlir::Value yz = id(mlir::gpu::Dimension::y);
    if (block_[2] > 1) {
      mlir::Value z = b.create<mlir::arith::MulIOp>(loc, id(mlir::gpu::Dimension::z), constant(block_[1]));
      yz = b.create<mlir::arith::AddIOp>(loc, yz, z);
    }
    mlir::Value scaled = b.create<mlir::arith::MulIOp>(loc, yz, constant(block_[0]));
    return b.create<mlir::arith::AddIOp>(loc, linear, scaled);
  }

  void store_own(mlir::OpBuilder& b, mlir::Value value, mlir::Value slot) {
    mlir::Location loc = value.getLoc();
    b.create<mlir::memref::StoreOp>(loc, value, slot, mlir::ValueRange{linear_thread_id(b, loc)});
  }
  mlir::Value load_own(mlir::OpBuilder& b, mlir::Value slot, mlir::Location loc) {
    return b.create<mlir::memref::LoadOp>(loc, slot, mlir::ValueRange{linear_thread_id(b, loc)});
  }
  // Thread 0's copy, for an op that runs once per block.
  mlir::Value load_first(mlir::OpBuilder& b, mlir::Value slot, mlir::Location loc) {
    mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
    auto load = b.create<mlir::memref::LoadOp>(loc, slot, mlir::ValueRange{zero});
    load->setAttr(kAfterAttr, b.getUnitAttr());
    return load;
  }

  std::vector<mlir::Value> slots_for(mlir::TypeRange types, mlir::Location loc) {
    std::vector<mlir::Value> slots;
    for (mlir::Type t : types) slots.push_back(slot_for(t, loc));
    return slots;
  }
  // Stores `values` to `slots` before `op` (a terminator), then drops them from its operands
  // (keeping the first `keep`).
  void store_and_drop(mlir::Operation* op, const std::vector<mlir::Value>& slots, unsigned keep) {
    mlir::OpBuilder b(op);
    for (size_t i = 0; i < slots.size(); ++i) store_own(b, op->getOperand(keep + i), slots[i]);
    op->eraseOperands(keep, op->getNumOperands() - keep);
  }
  // Replaces the arguments of `block` by loads of `slots` at its start, and erases them.
  void load_arguments(mlir::Block& block, const std::vector<mlir::Value>& slots, unsigned first) {
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(&block);
    for (size_t i = 0; i < slots.size(); ++i) {
      mlir::BlockArgument arg = block.getArgument(first + i);
      arg.replaceAllUsesWith(load_own(b, slots[i], arg.getLoc()));
    }
    block.eraseArguments(first, slots.size());
  }

  static bool is_workgroup(mlir::memref::AllocaOp alloca) {
    auto space = mlir::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(alloca.getType().getMemorySpace());
    return space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
  }

  // A thread's own array (a local array of the kernel) becomes its row of one array of the
  // block, allocated once at the entry: a thread loop runs many threads' accesses, and an
  // array may be live across a barrier. Only loads and stores (memref, vector) can be re-indexed.
  void give_each_thread_its_array(mlir::memref::AllocaOp alloca) {
    mlir::MemRefType type = alloca.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() || !alloca.getDynamicSizes().empty())
      throw Failure{"a per-thread array of dynamic shape or layout"};
    for (mlir::Operation* user : alloca->getUsers()) {
      if (!mlir::isa<mlir::memref::LoadOp, mlir::memref::StoreOp, mlir::vector::LoadOp, mlir::vector::StoreOp>(user))
        throw Failure{"a per-thread array used by '" + user->getName().getStringRef().str() + "'"};
      if (auto store = mlir::dyn_cast<mlir::memref::StoreOp>(user); store && store.getValue() == alloca.getResult())
        throw Failure{"a per-thread array stored as a value"};
      if (auto store = mlir::dyn_cast<mlir::vector::StoreOp>(user); store && store.getValueToStore() == alloca.getResult())
        throw Failure{"a per-thread array stored as a value"};
    }
    llvm::SmallVector<int64_t> shape{threads_};
    shape.append(type.getShape().begin(), type.getShape().end());
    uint64_t elements = 1;
    for (int64_t d : type.getShape()) elements *= uint64_t(d);
    slot_bytes_ += uint64_t(threads_) * elements * byte_size(type.getElementType());
    if (slot_bytes_ > kMaxSlotBytes) throw Failure{"values live across barriers need more than 512 KiB per block"};
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(entry_);
    auto rows = b.create<mlir::memref::AllocaOp>(alloca.getLoc(), mlir::MemRefType::get(shape, type.getElementType()));
    rows->setAttr(kSlotAttr, b.getUnitAttr());
    if (std::optional<uint64_t> align = alloca.getAlignment()) {   // every row keeps it
      if ((elements * byte_size(type.getElementType())) % *align != 0)
        throw Failure{"a per-thread array whose alignment its size does not keep"};
      rows.setAlignment(*align);
    }
    for (mlir::OpOperand& use : llvm::make_early_inc_range(alloca->getUses())) {
      mlir::Operation* user = use.getOwner();
      mlir::OpBuilder ub(user);
      llvm::SmallVector<mlir::Value> indices{linear_thread_id(ub, user->getLoc())};
      const unsigned first = use.getOperandNumber() + 1;   // the indices follow the memref
      for (unsigned i = first; i < user->getNumOperands(); ++i) indices.push_back(user->getOperand(i));
      user->setOperand(use.getOperandNumber(), rows);
      user->eraseOperands(first, user->getNumOperands() - first);
      user->insertOperands(first, indices);
    }
    alloca->erase();
  }

  // A sync scf op without results or loop-carried values: those go through per-thread arrays.
  void demote_carried_values(mlir::Operation* op) {
    mlir::Location loc = op->getLoc();
    mlir::OpBuilder before(op);
    mlir::Operation* replacement = nullptr;
    std::vector<mlir::Value> result_slots;
    auto rebuild = [&](mlir::ValueRange operands) {
      mlir::OperationState state(loc, op->getName());
      state.addOperands(operands);
      for (unsigned i = 0; i < op->getNumRegions(); ++i) state.addRegion();
      replacement = before.create(state);
      for (unsigned i = 0; i < op->getNumRegions(); ++i) replacement->getRegion(i).takeBody(op->getRegion(i));
    };
    if (auto if_op = mlir::dyn_cast<mlir::scf::IfOp>(op)) {
      if (if_op.getNumResults() == 0) return;
      result_slots = slots_for(if_op.getResultTypes(), loc);
      rebuild(if_op.getCondition());
      for (mlir::Region& r : replacement->getRegions())
        if (!r.empty()) store_and_drop(r.front().getTerminator(), result_slots, 0);
    } else if (auto for_op = mlir::dyn_cast<mlir::scf::ForOp>(op)) {
      if (for_op.getNumResults() == 0) return;
      result_slots = slots_for(for_op.getResultTypes(), loc);
      for (size_t i = 0; i < result_slots.size(); ++i) store_own(before, for_op.getInitArgs()[i], result_slots[i]);
      rebuild({for_op.getLowerBound(), for_op.getUpperBound(), for_op.getStep()});
      mlir::Block& body = replacement->getRegion(0).front();
      load_arguments(body, result_slots, 1);
      store_and_drop(body.getTerminator(), result_slots, 0);
    } else if (auto while_op = mlir::dyn_cast<mlir::scf::WhileOp>(op)) {
      std::vector<mlir::Value> carried = slots_for(while_op.getInits().getTypes(), loc);
      result_slots = slots_for(while_op.getResultTypes(), loc);
      for (size_t i = 0; i < carried.size(); ++i) store_own(before, while_op.getInits()[i], carried[i]);
      rebuild({});
      mlir::Block& cond = replacement->getRegion(0).front();
      mlir::Block& body = replacement->getRegion(1).front();
      load_arguments(cond, carried, 0);
      store_and_drop(cond.getTerminator(), result_slots, 1);
      load_arguments(body, result_slots, 0);
      store_and_drop(body.getTerminator(), carried, 0);
    }
    if (!replacement) return;
    mlir::OpBuilder after(replacement->getBlock(), std::next(replacement->getIterator()));
    for (size_t i = 0; i < result_slots.size(); ++i)
      op->getResult(i).replaceAllUsesWith(load_own(after, result_slots[i], loc));
    sync_.erase(op);
    sync_.insert(replacement);
    op->erase();
  }

  // --- splitting -----------------------------------------------------------------------------

  Kind kind_of(mlir::Operation* op, const llvm::DenseMap<mlir::Operation*, Kind>& kinds) const {
    if (sync_.contains(op)) return Kind::Sync;
    if (op->hasAttr(kAfterAttr)) return Kind::After;
    if (op->hasAttr(kSlotAttr)) return Kind::Uniform;
    if (auto alloca = mlir::dyn_cast<mlir::memref::AllocaOp>(op)) {   // workgroup memory: one per block
      auto space = mlir::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(alloca.getType().getMemorySpace());
      if (space && space.getValue() == mlir::gpu::AddressSpace::Workgroup) return Kind::Uniform;
    }
    if (op->getNumRegions() != 0 || !mlir::isPure(op)) return Kind::Thread;
    if (op->getDialect() && op->getDialect()->getNamespace() == "gpu" &&
        !mlir::isa<mlir::gpu::BlockIdOp, mlir::gpu::BlockDimOp, mlir::gpu::GridDimOp, mlir::gpu::SubgroupSizeOp>(op))
      return Kind::Thread;
    for (mlir::Value v : op->getOperands()) {
      mlir::Operation* def = v.getDefiningOp();
      if (!def || def->getBlock() != op->getBlock()) continue;   // outside this block: uniform
      auto it = kinds.find(def);
      if (it == kinds.end() || (it->second != Kind::Uniform && it->second != Kind::After)) return Kind::Thread;
    }
    return Kind::Uniform;
  }

  llvm::DenseMap<mlir::Operation*, Kind> classify(mlir::Block* block) const {
    llvm::DenseMap<mlir::Operation*, Kind> kinds;
    for (mlir::Operation& op : block->without_terminator()) kinds[&op] = kind_of(&op, kinds);
    return kinds;
  }

  // Where a use by `user`, inside sync op `sync`, loads this thread's copy: before the
  // outermost non-sync op between them; none when `user` itself is sync (thread 0's copy).
  static mlir::Operation* thread_load_point(mlir::Operation* sync, mlir::Operation* user, bool& user_is_sync,
                                            const llvm::DenseSet<mlir::Operation*>& syncs) {
    std::vector<mlir::Operation*> chain;
    for (mlir::Operation* op = user; op != sync; op = op->getParentOp()) chain.push_back(op);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if (!syncs.contains(*it)) return *it;
    user_is_sync = true;
    return user;
  }

  // A thread value cheap to compute again where it is used instead of keeping it per thread:
  // arith on thread ids and uniform values (a thread's offsets into buffers and shared memory).
  static bool recomputable(mlir::Operation* op, const llvm::DenseMap<mlir::Operation*, Kind>& kinds, int depth = 0) {
    if (depth > 6 || op->getNumResults() != 1 || op->getNumRegions() != 0 || !mlir::isPure(op)) return false;
    if (!mlir::isa<mlir::gpu::ThreadIdOp>(op) && op->getDialect()->getNamespace() != "arith") return false;
    for (mlir::Value v : op->getOperands()) {
      mlir::Operation* def = v.getDefiningOp();
      if (!def || def->getBlock() != op->getBlock()) continue;
      Kind k = kinds.lookup(def);
      if (k == Kind::Uniform || k == Kind::After) continue;
      if (k != Kind::Thread || !recomputable(def, kinds, depth + 1)) return false;
    }
    return true;
  }
  static mlir::Value recompute(mlir::OpBuilder& b, mlir::Operation* op, const llvm::DenseMap<mlir::Operation*, Kind>& kinds) {
    mlir::IRMapping map;
    for (mlir::Value v : op->getOperands()) {
      mlir::Operation* def = v.getDefiningOp();
      if (def && def->getBlock() == op->getBlock() && kinds.lookup(def) == Kind::Thread)
        map.map(v, recompute(b, def, kinds));
    }
    return b.clone(*op, map)->getResult(0);
  }

  void demote_crossing_values(mlir::Block* block, const llvm::DenseMap<mlir::Operation*, Kind>& kinds) {
    llvm::DenseMap<mlir::Operation*, int> segment;
    int current = 0;
    for (mlir::Operation& op : block->without_terminator()) {
      if (kinds.lookup(&op) == Kind::Sync) ++current;
      segment[&op] = current;
    }
    mlir::Operation* terminator = block->getTerminator();
    for (mlir::Operation& def : llvm::make_early_inc_range(block->without_terminator())) {
      auto known = kinds.find(&def);   // not an op the demotion itself made
      if (known == kinds.end() || known->second != Kind::Thread) continue;
      const bool cheap = recomputable(&def, kinds);
      for (mlir::Value v : def.getResults()) {
        mlir::Value slot;
        llvm::DenseMap<mlir::Operation*, mlir::Value> loaded;   // per load point
        // The uses before any rewriting: the store of `v` made below is one more.
        llvm::SmallVector<mlir::OpOperand*> uses;
        for (mlir::OpOperand& use : v.getUses()) uses.push_back(&use);
        for (mlir::OpOperand* use_ptr : uses) {
          mlir::OpOperand& use = *use_ptr;
          mlir::Operation* user = use.getOwner();
          mlir::Operation* top = block->findAncestorOpInBlock(*user);
          bool first_copy = top == terminator;
          mlir::Operation* point = top;
          if (!first_copy) {
            Kind k = kinds.lookup(top);
            if (k == Kind::Thread && segment.lookup(top) == segment.lookup(&def)) continue;
            if (k == Kind::Sync) point = thread_load_point(top, user, first_copy, sync_);
          }
          if (cheap && !first_copy) {
            mlir::Value& copy = loaded[point];
            if (!copy) {
              mlir::OpBuilder b(point);
              copy = recompute(b, &def, kinds);
            }
            use.set(copy);
            continue;
          }
          if (!slot) {
            slot = slot_for(v.getType(), v.getLoc());
            mlir::OpBuilder b(def.getBlock(), std::next(def.getIterator()));
            store_own(b, v, slot);
          }
          mlir::Value& copy = loaded[point];
          if (!copy) {
            mlir::OpBuilder b(point);
            copy = first_copy ? load_first(b, slot, v.getLoc()) : load_own(b, slot, v.getLoc());
          }
          use.set(copy);
        }
      }
    }
  }

  // One loop nest over the block's threads around the thread ops `run` (in order), the uniform
  // ops among them hoisted in front of it.
  void wrap_in_thread_loops(const std::vector<mlir::Operation*>& run, const std::vector<mlir::Operation*>& uniform) {
    mlir::Operation* first = run.front();
    for (mlir::Operation* op : uniform)
      if (first->isBeforeInBlock(op)) op->moveBefore(first);
    mlir::OpBuilder b(first);
    mlir::Location loc = first->getLoc();
    mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
    mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
    std::array<mlir::Value, 3> ids{zero, zero, zero};
    mlir::Block* body = nullptr;
    for (int d = 2; d >= 0; --d) {
      if (block_[d] == 1 && !(lanes_ && d == 0)) continue;
      mlir::Value extent = lanes_ && d == 0 ? lanes_ : b.create<mlir::arith::ConstantIndexOp>(loc, block_[d]);
      auto loop = b.create<mlir::scf::ForOp>(loc, zero, extent, one);
      loop->setAttr(kLoopAttr, b.getStringAttr(std::string(1, "xyz"[d])));
      ids[d] = loop.getInductionVar();
      body = loop.getBody();
      b.setInsertionPoint(body->getTerminator());
    }
    if (!body) {   // a block of one thread: the ops stay where they are
      replace_thread_ids(run, ids);
      return;
    }
    for (mlir::Operation* op : run) op->moveBefore(body->getTerminator());
    replace_thread_ids(run, ids);
  }

  static void replace_thread_ids(const std::vector<mlir::Operation*>& run, const std::array<mlir::Value, 3>& ids) {
    for (mlir::Operation* op : run) {
      op->walk([&](mlir::gpu::ThreadIdOp id) {
        id.replaceAllUsesWith(ids[static_cast<unsigned>(id.getDimension())]);
        id->erase();
      });
    }
  }

  void split(mlir::Block* block) {
    demote_crossing_values(block, classify(block));
    for (mlir::Operation& op : block->without_terminator()) {
      if (!sync_.contains(&op)) continue;
      for (mlir::Region& r : op.getRegions())
        for (mlir::Block& inner : r) split(&inner);
    }
    llvm::DenseMap<mlir::Operation*, Kind> kinds = classify(block);
    std::vector<mlir::Operation*> run, uniform, barriers;
    auto flush = [&] {
      if (!run.empty()) wrap_in_thread_loops(run, uniform);
      run.clear();
      uniform.clear();
    };
    for (mlir::Operation& op : llvm::make_early_inc_range(block->without_terminator())) {
      switch (kinds.lookup(&op)) {
        case Kind::Thread: run.push_back(&op); break;
        case Kind::Uniform: uniform.push_back(&op); break;
        case Kind::After: flush(); break;
        case Kind::Sync:
          flush();
          if (mlir::isa<mlir::gpu::BarrierOp>(op)) barriers.push_back(&op);
          break;
      }
    }
    flush();
    for (mlir::Operation* op : barriers) {
      sync_.erase(op);
      op->erase();
    }
  }

  mlir::Operation* root_;
  mlir::Block* body_;
  mlir::Block* entry_;
  std::array<uint32_t, 3> block_;
  mlir::Value lanes_;
  int64_t threads_;
  uint64_t slot_bytes_ = 0;
  llvm::DenseSet<mlir::Operation*> sync_;
};

}  // namespace

void split_into_thread_loops(mlir::Operation* root, mlir::Block* body, mlir::Block* entry,
                             std::array<uint32_t, 3> block, mlir::Value lanes) {
  Fission(root, body, entry, block, lanes).run();
}

bool has_subgroup_operations(mlir::Operation* root) {
  return root->walk([](mlir::Operation* op) {
    return mlir::isa<mlir::gpu::SubgroupReduceOp, mlir::gpu::ShuffleOp, mlir::gpu::LaneIdOp>(op)
               ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  }).wasInterrupted();
}

bool rewrite_on_copy(mlir::func::FuncOp func, llvm::function_ref<void(mlir::func::FuncOp)> rewrite,
                     std::string& why_not) {
  mlir::OpBuilder b(func);
  auto copy = mlir::cast<mlir::func::FuncOp>(b.clone(*func.getOperation()));
  try {
    rewrite(copy);
  } catch (const Failure& f) {
    why_not = f.why;
    copy->erase();
    return false;
  }
  func.getBody().takeBody(copy.getBody());
  copy->erase();
  return true;
}

void for_each_kernel(mlir::ModuleOp module,
                     llvm::function_ref<void(mlir::func::FuncOp, std::array<uint32_t, 3>)> visit) {
  std::vector<mlir::func::FuncOp> funcs(module.getOps<mlir::func::FuncOp>().begin(),
                                        module.getOps<mlir::func::FuncOp>().end());
  for (mlir::func::FuncOp func : funcs) {
    auto dims = func->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
    if (!dims || dims.size() != 3 || !func.getBody().hasOneBlock()) continue;
    std::array<uint32_t, 3> block{};
    for (int i = 0; i < 3; ++i) block[i] = static_cast<uint32_t>(dims[i]);
    visit(func, block);
  }
}

bool has_barrier(mlir::Operation* root) {
  return root->walk([](mlir::gpu::BarrierOp) { return mlir::WalkResult::interrupt(); }).wasInterrupted();
}

bool block_to_thread_loops(mlir::func::FuncOp func, std::array<uint32_t, 3> block, bool& subgroup_lanes,
                           std::string& why_not) {
  const bool barriers = has_barrier(func);
  const bool has_subgroups = has_subgroup_operations(func);
  subgroup_lanes = false;
  if (!barriers && !has_subgroups) {
    why_not = "no barrier and no subgroup operation";
    return false;
  }
  if (!func.getBody().hasOneBlock()) {
    why_not = "the kernel body has several blocks";
    return false;
  }
  // A barrier kernel whose subgroups cannot be lanes is tried again with subgroups of one thread.
  auto attempt = [&](bool lanes) {
    return rewrite_on_copy(func, [&](mlir::func::FuncOp copy) {
      mlir::Block* entry = &copy.getBody().front();
      split_into_thread_loops(copy, entry, entry, block, {});
      if (lanes) subgroups_to_lanes(copy, block);
    }, why_not);
  };
  if (has_subgroups && attempt(true)) {
    subgroup_lanes = true;
    return true;
  }
  if (!barriers) return false;
  std::string lanes_why = why_not;
  if (!attempt(false)) return false;
  why_not = lanes_why;
  return true;
}

void barriers_to_loops_in_module(mlir::ModuleOp module) {
  for_each_kernel(module, [](mlir::func::FuncOp func, std::array<uint32_t, 3> block) {
    if (!has_barrier(func)) return;
    std::string why_not;
    rewrite_on_copy(func, [&](mlir::func::FuncOp copy) {
      split_into_thread_loops(copy, &copy.getBody().front(), &copy.getBody().front(), block, {});
    }, why_not);
  });
}

}  // namespace quiver::compiler::cpu
