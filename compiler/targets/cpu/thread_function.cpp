// The CPU target's thread functions (thread_function.h).
#include "targets/cpu/thread_function.h"

#include "ir/layout.h"
#include "ir/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "targets/cpu/barrier_fission.h"
#include "targets/cpu/cpu_entry.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::cpu {

namespace {

constexpr uint64_t kBarrierOffset = 56;   // qv_cpu_ctx::barrier

void make_thread_function(mlir::func::FuncOp func) {
  mlir::MLIRContext* ctx = func.getContext();
  const std::string symbol = func.getSymName().str();
  auto name = func->getAttrOfType<mlir::StringAttr>("qv.name");
  std::array<uint32_t, 3> block = llvm_common::kernel_block(func, {name ? name.str() : symbol, "cpu"});
  mlir::FunctionType type = func.getFunctionType();
  bool has_barrier = false;
  func.walk([&](mlir::gpu::BarrierOp) { has_barrier = true; });

  // A kernel with barriers or subgroup operations in structured control flow runs its block as
  // loops over the threads (one call per block), its subgroups as lanes of those loops; the
  // others keep one fiber per thread (barriers) and subgroups of one thread.
  const bool has_subgroups = cpu::has_subgroup_operations(func);
  bool lanes = !has_subgroups;   // whether gpu.subgroup_size is the runtime's width
  bool block_loops = false;
  std::string kept;
  if (has_barrier || has_subgroups) {
    std::string why_not;
    block_loops = cpu::block_to_thread_loops(func, block, lanes, why_not);
    if (!has_subgroups) lanes = block_loops;
    if (!block_loops && has_barrier) kept = "fibers: " + why_not;
    else if (has_subgroups && !lanes) kept = "subgroups of one thread: " + why_not;
  }
  mlir::OpBuilder attrs(ctx);
  if (block_loops) func->setAttr(kBlockLoopsAttr, attrs.getUnitAttr());
  if (!kept.empty()) func->setAttr(kKeptAttr, attrs.getStringAttr(kept));

  quiver::ir::WorkgroupLayout layout = quiver::ir::workgroup_layout(func);

  // New parameters: shared memory, ctx, then thread_id, block_id, grid_dim (xyz each), the
  // subgroup size.
  mlir::OpBuilder b(ctx);
  mlir::Type index = b.getIndexType();
  auto ptr = mlir::LLVM::LLVMPointerType::get(ctx);
  auto bytes = mlir::MemRefType::get({mlir::ShapedType::kDynamic}, b.getI8Type());
  llvm::SmallVector<mlir::Type> inputs(type.getInputs());
  inputs.push_back(bytes);
  inputs.push_back(ptr);
  inputs.append(cpu::kCtxIds, index);
  mlir::Block& entry = func.getBody().front();
  mlir::Location loc = func.getLoc();
  mlir::Value shared = entry.addArgument(bytes, loc);
  mlir::Value ctx_arg = entry.addArgument(ptr, loc);
  std::array<mlir::Value, cpu::kCtxIds> ids;
  for (auto& v : ids) v = entry.addArgument(index, loc);
  func.setFunctionType(mlir::FunctionType::get(ctx, inputs, {}));
  func.setName(thread_function_name(symbol));
  func->removeAttr("qv.kernel");

  b.setInsertionPointToStart(&entry);
  for (auto& slot : layout.slots) {
    mlir::MemRefType t = slot.alloca.getType();
    auto plain = mlir::MemRefType::get(t.getShape(), t.getElementType());
    mlir::Value offset = b.create<mlir::arith::ConstantIndexOp>(loc, slot.offset);
    mlir::Value view = b.create<mlir::memref::ViewOp>(slot.alloca.getLoc(), plain, shared, offset, mlir::ValueRange{});
    slot.alloca.getResult().replaceAllUsesWith(view);
    slot.alloca.erase();
  }

  std::string unsupported;
  func.walk([&](mlir::Operation* op) {
    if (!op->getDialect() || op->getDialect()->getNamespace() != "gpu") return;
    mlir::OpBuilder ob(op);
    mlir::Location l = op->getLoc();
    auto dim_index = [](mlir::gpu::Dimension d) { return static_cast<unsigned>(d); };
    mlir::Value replacement;
    if (auto o = mlir::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      replacement = ids[0 + dim_index(o.getDimension())];
    } else if (auto o = mlir::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      replacement = ids[3 + dim_index(o.getDimension())];
    } else if (auto o = mlir::dyn_cast<mlir::gpu::GridDimOp>(op)) {
      replacement = ids[6 + dim_index(o.getDimension())];
    } else if (auto o = mlir::dyn_cast<mlir::gpu::BlockDimOp>(op)) {
      replacement = ob.create<mlir::arith::ConstantIndexOp>(l, block[dim_index(o.getDimension())]);
    } else if (mlir::isa<mlir::gpu::SubgroupSizeOp>(op)) {
      // The runtime's width (qv_cpu_ctx::subgroup_size), or 1 where the subgroup operations
      // below are a single thread's (docs/abi.md "CPU").
      replacement = lanes ? ids[9] : ob.create<mlir::arith::ConstantIndexOp>(l, 1).getResult();
    } else if (mlir::isa<mlir::gpu::LaneIdOp>(op)) {
      replacement = ob.create<mlir::arith::ConstantIndexOp>(l, 0);
    } else if (auto o = mlir::dyn_cast<mlir::gpu::SubgroupReduceOp>(op)) {
      replacement = o.getValue();   // a reduction over one lane is its value
    } else if (auto o = mlir::dyn_cast<mlir::gpu::ShuffleOp>(op)) {
      // One lane: the only valid source is lane 0, reached exactly when the offset is 0 in
      // every mode (xor, down, up, idx); the value is then this lane's own.
      mlir::Value zero = ob.create<mlir::arith::ConstantIntOp>(l, 0, o.getOffset().getType());
      mlir::Value valid = ob.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::eq, o.getOffset(), zero);
      o.getShuffleResult().replaceAllUsesWith(o.getValue());
      o.getValid().replaceAllUsesWith(valid);
      op->erase();
      return;
    } else if (mlir::isa<mlir::gpu::BarrierOp>(op)) {
      // ctx->barrier(ctx)
      mlir::Value slot = ob.create<mlir::LLVM::GEPOp>(l, ptr, ob.getI8Type(), ctx_arg,
                                                      llvm::ArrayRef<mlir::LLVM::GEPArg>{static_cast<int32_t>(kBarrierOffset)});
      mlir::Value fn = ob.create<mlir::LLVM::LoadOp>(l, ptr, slot);
      auto fn_type = mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(ctx), {ptr});
      ob.create<mlir::LLVM::CallOp>(l, fn_type, mlir::ValueRange{fn, ctx_arg});
      op->erase();
      return;
    } else {
      if (unsupported.empty()) unsupported = op->getName().getStringRef().str();
      return;
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  });
  if (!unsupported.empty())
    throw std::runtime_error("kernel '" + symbol + "': '" + unsupported + "' is not supported on the CPU");
}

}  // namespace

std::string thread_function_name(llvm::StringRef symbol) { return "__qv_thread_" + symbol.str(); }

void make_thread_functions(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols) {
  for (mlir::func::FuncOp func : quiver::ir::named_kernels(module, symbols)) make_thread_function(func);
}

}  // namespace quiver::compiler::cpu
