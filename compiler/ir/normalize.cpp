#include "ir/normalize.h"

#include "ir/dialect/QvDialect.h"
#include "ir/passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/MemorySlotInterfaces.h"
#include "mlir/Transforms/Mem2Reg.h"

namespace quiver::ir {

void register_dialects(mlir::DialectRegistry& registry) {
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::ub::UBDialect, mlir::vector::VectorDialect, qv::QvDialect>();
}

// A kernel's block shape is fixed at compile time (qv.block, from QV_BLOCK; every backend launches
// exactly that shape), so qv::block_dim_*() is a constant and thread_id along an axis of size 1 is
// 0: folded here, loops over the block's subgroups (qv::block_sum's) get constant trip counts.
// Left as a read of the launch's shape, layer_norm<bf16> on the H100 spent ~130 of its ~540
// instructions per warp and row in the two block sums' loops (ncu).
void fold_block_dims(mlir::ModuleOp module) {
  module.walk([](mlir::func::FuncOp func) {
    auto block = func->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
    if (!block || block.size() != 3) return;
    func.walk([&](mlir::gpu::BlockDimOp op) {
      int32_t size = block[static_cast<unsigned>(op.getDimension())];
      if (size <= 0) return;
      mlir::OpBuilder b(op);
      op.replaceAllUsesWith(b.create<mlir::arith::ConstantIndexOp>(op.getLoc(), size).getResult());
      op.erase();
    });
    func.walk([&](mlir::gpu::ThreadIdOp op) {   // the only thread index along an axis of size 1
      if (block[static_cast<unsigned>(op.getDimension())] != 1) return;
      mlir::OpBuilder b(op);
      op.replaceAllUsesWith(b.create<mlir::arith::ConstantIndexOp>(op.getLoc(), 0).getResult());
      op.erase();
    });
  });
}

// mem2reg over each thread's own variables only. Upstream's promotion of memref.alloca ignores
// the memory space, so it would turn a one-element qv::shared array (a flag the block shares)
// into a value of each thread's own.
void promote_private_variables(mlir::ModuleOp module) {
  module.walk([](mlir::func::FuncOp func) {
    if (func.isExternal()) return;
    llvm::SmallVector<mlir::PromotableAllocationOpInterface> slots;
    func.walk([&](mlir::memref::AllocaOp alloca) {
      if (!alloca.getType().getMemorySpace())
        slots.push_back(llvm::cast<mlir::PromotableAllocationOpInterface>(alloca.getOperation()));
    });
    if (slots.empty()) return;
    // As upstream's pass: new values (a read before any write) go at the body's start.
    mlir::Block& entry = func.getBody().front();
    mlir::OpBuilder builder(&entry, entry.begin());
    mlir::DominanceInfo dominance(func);
    (void)mlir::tryToPromoteMemorySlots(slots, builder, mlir::DataLayout::closest(func), dominance);
  });
}

// The pipelines (passes.cpp) run as one pass manager each.
static bool run(mlir::ModuleOp module, const std::string& pipeline, std::string& error) {
  register_passes();
  if (run_pipeline(module, pipeline, error)) return true;
  error = "internal error while normalising the IR: " + error;
  return false;
}

bool normalize(mlir::ModuleOp module, std::string& error) { return run(module, normalize_pipeline(), error); }

bool structure(mlir::ModuleOp module, std::string& error) { return run(module, structure_pipeline(), error); }

}  // namespace quiver::ir
