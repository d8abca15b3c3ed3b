#include "targets/spirv/top_tested_loops.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace quiver::compiler::spirv_target {
namespace {

bool rewrite(mlir::scf::WhileOp loop) {
  mlir::Block& before = loop.getBefore().front();
  auto cond = llvm::cast<mlir::scf::ConditionOp>(before.getTerminator());
  mlir::scf::IfOp guard;
  llvm::SmallVector<mlir::Operation*> prefix;   // computes the condition (and values the body reads)
  for (mlir::Operation& op : before.without_terminator()) {
    auto branch = llvm::dyn_cast<mlir::scf::IfOp>(op);
    if (branch && !guard && branch.getCondition() == cond.getCondition()) {
      guard = branch;
      continue;
    }
    if (guard || op.getNumRegions() != 0 || !mlir::isMemoryEffectFree(&op)) return false;
    prefix.push_back(&op);
  }
  if (!guard || guard.getElseRegion().empty()) return false;
  for (mlir::Value v : guard.elseYield().getOperands())
    if (!v.getDefiningOp<mlir::ub::PoisonOp>()) return false;
  mlir::Block& after = loop.getAfter().front();
  auto forward = llvm::cast<mlir::scf::YieldOp>(after.getTerminator());
  if (&after.front() != forward.getOperation()) return false;
  llvm::SmallVector<unsigned> next_from;   // next iteration's argument j is the condition's value next_from[j]
  for (mlir::Value v : forward.getOperands()) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
    if (!arg || arg.getOwner() != &after) return false;
    next_from.push_back(arg.getArgNumber());
  }
  // Each value the condition passes on is a result of the if or an argument of the loop.
  for (mlir::Value v : cond.getArgs()) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
    if (v.getDefiningOp() != guard.getOperation() && !(arg && arg.getOwner() == &before)) return false;
  }

  mlir::OpBuilder b(loop);
  mlir::Location l = loop.getLoc();
  mlir::TypeRange types = before.getArgumentTypes();
  llvm::SmallVector<mlir::Location> locs(types.size(), l);
  auto top = b.create<mlir::scf::WhileOp>(l, types, loop.getInits());
  // Before: the condition, passing the loop's values on unchanged.
  mlir::Block* test = b.createBlock(&top.getBefore(), {}, types, locs);
  mlir::IRMapping in_test;
  in_test.map(before.getArguments(), test->getArguments());
  for (mlir::Operation* op : prefix) b.clone(*op, in_test);
  b.create<mlir::scf::ConditionOp>(l, in_test.lookup(cond.getCondition()), test->getArguments());
  // After: the body (the if's then branch, with what it reads of the prefix), then the next values.
  mlir::Block* body = b.createBlock(&top.getAfter(), {}, types, locs);
  mlir::IRMapping in_body;
  in_body.map(before.getArguments(), body->getArguments());
  for (mlir::Operation* op : prefix) b.clone(*op, in_body);
  for (mlir::Operation& op : guard.thenBlock()->without_terminator()) b.clone(op, in_body);
  auto value_of = [&](mlir::Value v) -> mlir::Value {   // a condition value, inside the body
    if (auto r = llvm::dyn_cast<mlir::OpResult>(v); r && r.getOwner() == guard.getOperation())
      return in_body.lookupOrDefault(guard.thenYield().getOperand(r.getResultNumber()));
    return in_body.lookup(v);
  };
  llvm::SmallVector<mlir::Value> next;
  for (unsigned from : next_from) next.push_back(value_of(cond.getArgs()[from]));
  b.create<mlir::scf::YieldOp>(l, next);
  // The old results: the loop's values at the exit, or (the if's, which the exit skips) poison.
  b.setInsertionPointAfter(top);
  for (auto [i, v] : llvm::enumerate(cond.getArgs())) {
    mlir::Value now;
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) now = top.getResult(arg.getArgNumber());
    else now = b.create<mlir::ub::PoisonOp>(l, v.getType());
    loop.getResult(i).replaceAllUsesWith(now);
  }
  loop.erase();
  return true;
}

}  // namespace

unsigned make_loops_top_tested(mlir::func::FuncOp fn) {
  llvm::SmallVector<mlir::scf::WhileOp> loops;
  fn.walk([&](mlir::scf::WhileOp w) { loops.push_back(w); });   // post-order: innermost first
  unsigned n = 0;
  for (mlir::scf::WhileOp w : loops) n += rewrite(w) ? 1 : 0;
  return n;
}

}  // namespace quiver::compiler::spirv_target
