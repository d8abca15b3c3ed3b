#include "targets/ptx/outline_kernels.h"

#include "format/manifest.h"
#include "ir/layout.h"
#include "ir/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::ptx {

namespace {

// MLIR's bare-pointer calling convention needs static shapes, so each `memref<?xT>` parameter is
// retyped to `memref<2^40 x T>` (indices are never checked against it; only the pointer is passed).
constexpr int64_t kBufferExtent = int64_t{1} << 40;

void outline_kernel(mlir::ModuleOp module, mlir::func::FuncOp func) {
  mlir::MLIRContext* ctx = module.getContext();
  auto name = func->getAttrOfType<mlir::StringAttr>("qv.name");
  llvm_common::ErrorContext where{name ? name.str() : func.getSymName().str(), "ptx"};
  std::array<uint32_t, 3> block = llvm_common::kernel_block(func, where);
  mlir::FunctionType old_type = func.getFunctionType();
  llvm::SmallVector<mlir::Type> inputs;
  for (mlir::Type t : old_type.getInputs()) {
    if (auto memref = mlir::dyn_cast<mlir::MemRefType>(t)) t = mlir::MemRefType::get({kBufferExtent}, memref.getElementType());
    inputs.push_back(t);
  }
  quiver::ir::WorkgroupLayout layout = quiver::ir::workgroup_layout(func);
  bool dynamic_shared = layout.total_bytes > format::kCudaStaticSharedBytes;
  llvm::SmallVector<mlir::Type> workgroup;
  if (!dynamic_shared)
    for (auto& slot : layout.slots) workgroup.push_back(slot.alloca.getType());

  mlir::OpBuilder b(ctx);
  mlir::gpu::GPUFuncOp gfunc =
      llvm_common::create_kernel_func(module, func, kernel_module_name(func.getSymName()), inputs, workgroup, block);
  // QV_MIN_BLOCKS(n): .minnctapersm n, through the NVVM annotation convert-gpu-to-nvvm carries over.
  if (auto min_blocks = func->getAttrOfType<mlir::IntegerAttr>("qv.min_blocks"))
    gfunc->setAttr(mlir::NVVM::NVVMDialect::getMinctasmAttrName(), min_blocks);

  mlir::Block* entry = &gfunc.getBody().front();
  b.setInsertionPointToStart(entry);
  llvm::SmallVector<mlir::Value> memory;
  if (dynamic_shared) {
    auto workgroup_space = mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Workgroup);
    mlir::Value bytes = b.create<mlir::gpu::DynamicSharedMemoryOp>(
        func.getLoc(), mlir::MemRefType::get({mlir::ShapedType::kDynamic}, b.getI8Type(),
                                             mlir::MemRefLayoutAttrInterface{}, workgroup_space));
    for (const quiver::ir::WorkgroupSlot& slot : layout.slots)
      memory.push_back(llvm_common::workgroup_view(b, slot, bytes));
  } else {
    for (mlir::BlockArgument a : gfunc.getWorkgroupAttributions()) memory.push_back(a);
  }
  llvm_common::move_body_into(func, gfunc, layout, memory);
}

}  // namespace

std::string kernel_module_name(llvm::StringRef symbol) { return "qv_ptx_" + symbol.str(); }

void outline_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols) {
  for (mlir::func::FuncOp func : quiver::ir::named_kernels(module, symbols)) outline_kernel(module, func);
}

void share_dynamic_shared_memory(mlir::ModuleOp module) {
  constexpr llvm::StringLiteral kPrefix = "__dynamic_shmem__", kShared = "__qv_dynamic_shared";
  // The module may hold one such name several times (one per spliced kernel): no symbol lookups.
  module.walk([&](mlir::LLVM::AddressOfOp a) {
    if (a.getGlobalName().starts_with(kPrefix)) a.setGlobalName(kShared);
  });
  mlir::LLVM::GlobalOp kept;
  for (mlir::LLVM::GlobalOp g : llvm::make_early_inc_range(module.getOps<mlir::LLVM::GlobalOp>())) {
    if (!g.getSymName().starts_with(kPrefix)) continue;
    if (kept) {
      g.erase();
      continue;
    }
    kept = g;
    g.setSymName(kShared);
    g.setLinkage(mlir::LLVM::Linkage::External);
    g.getInitializerRegion().getBlocks().clear();
    g.removeValueAttr();
    g->moveBefore(module.getBody(), module.getBody()->begin());
  }
}

}  // namespace quiver::compiler::ptx
