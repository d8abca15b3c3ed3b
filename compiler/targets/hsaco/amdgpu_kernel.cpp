#include "targets/hsaco/amdgpu_kernel.h"

#include <cctype>

#include "ir/intrinsics.h"
#include "ir/layout.h"
#include "ir/math.h"
#include "ir/passes.h"
#include "ir/subgroup_reduce.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace quiver::compiler::hsaco {

namespace {

constexpr int64_t kBufferExtent = int64_t{1} << 40;
constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kConstantAddressSpace = 4;
// hsa_kernel_dispatch_packet_t: uint32_t grid_size_x/y/z at byte 12/16/20 (work-items).
constexpr int32_t kDispatchGridSizeOffset = 12;

// The attributes that tell the AMDGPU backend a kernel reads none of the hidden arguments
// (code object v5 appends ~256 bytes of them to the kernarg segment otherwise, which a runtime
// would have to fill). quiver's kernels get block counts from the dispatch packet instead.
constexpr const char* kNoHiddenArguments[] = {
    "amdgpu-no-implicitarg-ptr", "amdgpu-no-hostcall-ptr",     "amdgpu-no-heap-ptr",
    "amdgpu-no-multigrid-sync-arg", "amdgpu-no-default-queue", "amdgpu-no-completion-action",
    "amdgpu-no-queue-ptr",
};

unsigned dim_index(mlir::gpu::Dimension d) { return static_cast<unsigned>(d); }

// grid_dim.d = dispatch_packet->grid_size[d] / block[d]. quiver always dispatches whole blocks
// (the HSA backend sets grid_size = blocks * block), so the division is exact.
mlir::Value grid_dim_from_dispatch_packet(mlir::OpBuilder& b, mlir::Location loc, unsigned dim,
                                          uint32_t block) {
  mlir::MLIRContext* ctx = b.getContext();
  auto constant_ptr = mlir::LLVM::LLVMPointerType::get(ctx, kConstantAddressSpace);
  auto packet = b.create<mlir::LLVM::CallIntrinsicOp>(loc, constant_ptr, "llvm.amdgcn.dispatch.ptr",
                                                      mlir::ValueRange{});
  mlir::Value field = b.create<mlir::LLVM::GEPOp>(
      loc, constant_ptr, b.getI8Type(), packet.getResult(0),
      llvm::ArrayRef<mlir::LLVM::GEPArg>{kDispatchGridSizeOffset + 4 * static_cast<int32_t>(dim)});
  auto load = b.create<mlir::LLVM::LoadOp>(loc, b.getI32Type(), field, /*alignment=*/4);
  load.setInvariant(true);
  mlir::Value items = b.create<mlir::arith::IndexCastUIOp>(loc, b.getIndexType(), load.getResult());
  mlir::Value size = b.create<mlir::arith::ConstantIndexOp>(loc, block);
  return b.create<mlir::arith::DivUIOp>(loc, items, size);
}

// Replaces the gpu ops convert-gpu-to-rocdl would lower to ROCm device-library calls
// (__ockl_get_local_size, __ockl_get_num_groups) or not at all (subgroup_size in MLIR 19).
void replace_dimension_ops(mlir::gpu::GPUFuncOp gfunc, const std::array<uint32_t, 3>& block,
                           unsigned wave_size) {
  llvm::SmallVector<mlir::Operation*> ops;
  gfunc.walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::gpu::BlockDimOp, mlir::gpu::GridDimOp, mlir::gpu::SubgroupSizeOp>(op))
      ops.push_back(op);
  });
  for (mlir::Operation* op : ops) {
    mlir::OpBuilder b(op);
    mlir::Value value;
    if (auto o = mlir::dyn_cast<mlir::gpu::BlockDimOp>(op)) {
      value = b.create<mlir::arith::ConstantIndexOp>(op->getLoc(), block[dim_index(o.getDimension())]);
    } else if (auto o = mlir::dyn_cast<mlir::gpu::GridDimOp>(op)) {
      unsigned d = dim_index(o.getDimension());
      value = grid_dim_from_dispatch_packet(b, op->getLoc(), d, block[d]);
    } else {
      value = b.create<mlir::arith::ConstantIndexOp>(op->getLoc(), wave_size);
    }
    op->getResult(0).replaceAllUsesWith(value);
    op->erase();
  }
}

void lower_subgroup_reductions(mlir::gpu::GPUModuleOp gpu_module, unsigned wave_size,
                               const llvm_common::ErrorContext& where) {
  quiver::ir::lower_partial_subgroup_reductions(gpu_module, wave_size);   // blocks whose last wave is partly filled
  mlir::RewritePatternSet patterns(gpu_module.getContext());
  mlir::populateGpuLowerSubgroupReduceToShufflePattenrs(patterns, wave_size);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(gpu_module, std::move(patterns))))
    throw TargetError(where.kernel, where.target, "subgroup reductions could not be lowered to wave shuffles");
  bool left = false;
  gpu_module.walk([&](mlir::gpu::SubgroupReduceOp) { left = true; });
  if (left)
    throw TargetError(where.kernel, where.target,
                      "a subgroup reduction has a type or operation the wave-shuffle lowering does not handle");
}


}  // namespace


int gfx_major(const std::string& arch) {
  if (arch.size() < 6 || arch.compare(0, 3, "gfx") != 0) return -1;
  std::string digits = arch.substr(3, arch.size() - 5);
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  for (size_t i = arch.size() - 2; i < arch.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(arch[i])) || std::isupper(static_cast<unsigned char>(arch[i])))
      return -1;
  return std::stoi(digits);
}

namespace {

bool uses_f64(mlir::Type type) {
  if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type)) return uses_f64(shaped.getElementType());
  return type.isF64();
}

}  // namespace

void reject_double(mlir::func::FuncOp func, const llvm_common::ErrorContext& where) {
  const std::string reason =
      "double is not supported by the hsaco target (the kernel language has double on CPU and CUDA "
      "only); use float, or build this kernel for ptx/cpu only";
  for (mlir::Type t : func.getFunctionType().getInputs())
    if (uses_f64(t)) throw TargetError(where.kernel, where.target, reason + " (in the parameters)");
  std::string culprit;
  func.walk([&](mlir::Operation* op) {
    if (!culprit.empty()) return;
    for (mlir::Type t : op->getResultTypes())
      if (uses_f64(t)) culprit = op->getName().getStringRef().str();
    for (mlir::Type t : op->getOperandTypes())
      if (uses_f64(t)) culprit = op->getName().getStringRef().str();
  });
  if (!culprit.empty()) throw TargetError(where.kernel, where.target, reason + " (in '" + culprit + "')");
}

void lower_dot4_to_sdot4(mlir::ModuleOp module) {
  quiver::ir::replace_dot4_i8(module, [](mlir::OpBuilder& b, quiver::ir::qv::Dot4I8Op dot) {
    mlir::Value no_clamp = b.create<mlir::LLVM::ConstantOp>(dot.getLoc(), b.getI1Type(), b.getBoolAttr(false));
    llvm::SmallVector<mlir::Value> operands(dot->getOperands());
    operands.push_back(no_clamp);
    return b.create<mlir::LLVM::CallIntrinsicOp>(dot.getLoc(), b.getI32Type(), "llvm.amdgcn.sdot4", operands)
        .getResult(0);
  });
}

namespace {

void outline_kernel(mlir::ModuleOp module, mlir::func::FuncOp func, unsigned wave_size) {
  mlir::MLIRContext* ctx = module.getContext();
  auto name = func->getAttrOfType<mlir::StringAttr>("qv.name");
  llvm_common::ErrorContext where{name ? name.str() : func.getSymName().str(), "hsaco"};
  std::array<uint32_t, 3> block = llvm_common::kernel_block(func, where);
  mlir::FunctionType old_type = func.getFunctionType();
  mlir::OpBuilder b(ctx);
  llvm::SmallVector<mlir::Type> inputs;
  for (mlir::Type t : old_type.getInputs()) {
    if (auto memref = mlir::dyn_cast<mlir::MemRefType>(t))
      t = mlir::MemRefType::get({kBufferExtent}, memref.getElementType(), mlir::MemRefLayoutAttrInterface{},
                                b.getI64IntegerAttr(kGlobalAddressSpace));
    inputs.push_back(t);
  }

  quiver::ir::WorkgroupLayout layout = quiver::ir::workgroup_layout(func);
  auto workgroup_space = mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Workgroup);
  llvm::SmallVector<mlir::Type> workgroup;
  if (layout.total_bytes > 0)
    workgroup.push_back(mlir::MemRefType::get({static_cast<int64_t>(layout.total_bytes)}, b.getI8Type(),
                                              mlir::MemRefLayoutAttrInterface{}, workgroup_space));

  mlir::gpu::GPUFuncOp gfunc =
      llvm_common::create_kernel_func(module, func, kernel_module_name(func.getSymName()), inputs, workgroup, block);

  b.setInsertionPointToStart(&gfunc.getBody().front());
  llvm::SmallVector<mlir::Value> memory;
  for (const quiver::ir::WorkgroupSlot& slot : layout.slots)
    memory.push_back(llvm_common::workgroup_view(b, slot, gfunc.getWorkgroupAttributions()[0]));
  llvm_common::move_body_into(func, gfunc, layout, memory);

  replace_dimension_ops(gfunc, block, wave_size);
  lower_subgroup_reductions(gfunc->getParentOfType<mlir::gpu::GPUModuleOp>(), wave_size, where);
}

}  // namespace

std::string kernel_module_name(llvm::StringRef symbol) { return "qv_hsaco_" + symbol.str(); }

void outline_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols, unsigned wave_size) {
  if (wave_size != 32 && wave_size != 64)
    throw std::runtime_error("wave-size = " + std::to_string(wave_size) + ": AMD GPUs run waves of 32 or 64 lanes");
  for (mlir::func::FuncOp func : quiver::ir::named_kernels(module, symbols)) outline_kernel(module, func, wave_size);
}

void finish_llvm_module(llvm::Module& module, const llvm_common::ErrorContext& where) {
  module.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 500);
  std::string external;
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) {
      if (!f.isIntrinsic()) external += (external.empty() ? "" : ", ") + f.getName().str();
      continue;
    }
    if (f.getCallingConv() != llvm::CallingConv::AMDGPU_KERNEL) continue;
    for (const char* attribute : kNoHiddenArguments) f.addFnAttr(attribute);
  }
  if (!external.empty())
    throw TargetError(where.kernel, where.target,
                      "the kernel calls functions no HSACO image can link (no ROCm device library is used): " +
                          external);
}

}  // namespace quiver::compiler::hsaco
