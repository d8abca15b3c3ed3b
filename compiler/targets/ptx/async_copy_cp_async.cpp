#include "targets/ptx/async_copy_cp_async.h"

#include "ir/dialect/QvDialect.h"
#include "ir/intrinsics.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace quiver::compiler::ptx {

namespace {

bool in_workgroup(mlir::Value memref) {
  auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(
      llvm::cast<mlir::MemRefType>(memref.getType()).getMemorySpace());
  return space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
}

// The address of element `index` of a 1-D memref as a pointer of `address_space` (the buffers'
// generic addresses go through addrspacecast: cvta.to.global).
mlir::Value element_address(mlir::OpBuilder& b, mlir::Location l, mlir::Value memref, mlir::Value index,
                            unsigned address_space) {
  mlir::Type elem = llvm::cast<mlir::MemRefType>(memref.getType()).getElementType();
  mlir::Value base = b.create<mlir::memref::ExtractAlignedPointerAsIndexOp>(l, memref);
  mlir::Value size = b.create<mlir::arith::ConstantIndexOp>(l, elem.getIntOrFloatBitWidth() / 8);
  mlir::Value bytes = b.create<mlir::arith::AddIOp>(l, base, b.create<mlir::arith::MulIOp>(l, index, size));
  mlir::Value address = b.create<mlir::arith::IndexCastUIOp>(l, b.getI64Type(), bytes);
  if (address_space == 3)
    return b.create<mlir::LLVM::IntToPtrOp>(l, mlir::LLVM::LLVMPointerType::get(b.getContext(), 3), address);
  mlir::Value generic =
      b.create<mlir::LLVM::IntToPtrOp>(l, mlir::LLVM::LLVMPointerType::get(b.getContext(), 0), address);
  return b.create<mlir::LLVM::AddrSpaceCastOp>(l, mlir::LLVM::LLVMPointerType::get(b.getContext(), address_space),
                                               generic);
}

}  // namespace

void lower_async_copies_to_cp_async(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::vector::StoreOp> stores;
  module.walk([&](mlir::vector::StoreOp s) {
    if (s->hasAttr(quiver::ir::kAsyncCopyAttr)) stores.push_back(s);
  });
  for (mlir::vector::StoreOp store : stores) {
    auto load = store.getValueToStore().getDefiningOp<mlir::vector::LoadOp>();
    bool copies = load && load->hasAttr(quiver::ir::kAsyncCopyAttr) && load->getBlock() == store->getBlock() &&
                  in_workgroup(store.getBase()) && !in_workgroup(load.getBase()) &&
                  store.getIndices().size() == 1 && load.getIndices().size() == 1 &&
                  store.getVectorType().getNumElements() *
                          store.getVectorType().getElementType().getIntOrFloatBitWidth() ==
                      128;
    if (!copies) continue;   // stays a synchronous copy
    mlir::OpBuilder b(store);
    mlir::Location l = store.getLoc();
    mlir::Value dst = element_address(b, l, store.getBase(), store.getIndices()[0], 3);
    mlir::Value src = element_address(b, l, load.getBase(), load.getIndices()[0], 1);
    // .cg: cached in L2 only; the data lands in shared memory, L1 would hold a second copy.
    b.create<mlir::NVVM::CpAsyncOp>(l, dst, src, 16u, mlir::NVVM::LoadCacheModifierKind::CG, mlir::Value());
    store.erase();
    if (load->use_empty()) load.erase();
  }

  llvm::SmallVector<mlir::Operation*> marks;
  module.walk([&](mlir::Operation* op) {
    if (llvm::isa<quiver::ir::qv::CopyAsyncCommitOp, quiver::ir::qv::CopyAsyncWaitOp>(op)) marks.push_back(op);
  });
  for (mlir::Operation* op : marks) {
    mlir::OpBuilder b(op);
    if (auto wait = llvm::dyn_cast<quiver::ir::qv::CopyAsyncWaitOp>(op))
      b.create<mlir::NVVM::CpAsyncWaitGroupOp>(op->getLoc(), wait.getPending());
    else
      b.create<mlir::NVVM::CpAsyncCommitGroupOp>(op->getLoc());
    op->erase();
  }
}

}  // namespace quiver::compiler::ptx
