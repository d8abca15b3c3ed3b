#include "targets/spirv/prepare.h"

#include <optional>

#include "ir/legalize.h"
#include "ir/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "targets/target.h"

namespace quiver::compiler::spirv_target {
namespace {

[[noreturn]] void fail(const format::Kernel& kernel, const std::string& reason) {
  throw TargetError(kernel.symbol, kTargetName, reason);
}

std::string type_string(mlir::Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

// Why `type` cannot be used on portable Vulkan 1.2, or nothing when it can.
std::optional<std::string> unsupported_reason(mlir::Type type) {
  if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(type)) {
    if (auto inner = unsupported_reason(shaped.getElementType())) return inner;
    return std::nullopt;
  }
  if (type.isF64())
    return "double is not supported by the portable Vulkan 1.2 target (shaderFloat64 is an "
           "optional device feature); use float, or build this kernel for ptx/cpu only";
  return std::nullopt;
}

void check_type(mlir::Type type, const format::Kernel& kernel, const std::string& where) {
  if (auto reason = unsupported_reason(type)) fail(kernel, *reason + " (in " + where + ")");
}

// Replaces `op` by a chain of scf.if ops comparing the selector with each case value in turn;
// the last else branch is the default region.
void lower_index_switch(mlir::scf::IndexSwitchOp op) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op.getLoc();
  mlir::TypeRange result_types = op.getResultTypes();
  llvm::ArrayRef<int64_t> cases = op.getCases();
  if (cases.empty()) {
    // Only the default region: inline it.
    mlir::Block& block = op.getDefaultRegion().front();
    auto yield = llvm::cast<mlir::scf::YieldOp>(block.getTerminator());
    llvm::SmallVector<mlir::Value> results(yield.getOperands());
    yield.erase();
    op->getBlock()->getOperations().splice(op->getIterator(), block.getOperations());
    op.replaceAllUsesWith(results);
    op.erase();
    return;
  }
  mlir::scf::IfOp outer;
  for (size_t i = 0; i < cases.size(); ++i) {
    mlir::Value value = b.create<mlir::arith::ConstantIndexOp>(loc, cases[i]);
    mlir::Value cond = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq,
                                                     op.getArg(), value);
    auto branch = b.create<mlir::scf::IfOp>(loc, result_types, cond, /*addThenBlock=*/false,
                                            /*addElseBlock=*/false);
    branch.getThenRegion().takeBody(op.getCaseRegions()[i]);
    if (!outer) {
      outer = branch;
    } else {
      // `branch` sits alone in the previous if's else block; yield its results from there.
      b.create<mlir::scf::YieldOp>(loc, branch.getResults());
    }
    if (i + 1 == cases.size()) {
      branch.getElseRegion().takeBody(op.getDefaultRegion());
    } else {
      mlir::Block* else_block = b.createBlock(&branch.getElseRegion());
      b.setInsertionPointToStart(else_block);
    }
  }
  op.replaceAllUsesWith(outer.getResults());
  op.erase();
}

}  // namespace

std::vector<mlir::func::FuncOp> find_kernel_functions(mlir::ModuleOp module,
                                                      std::span<const format::Kernel> kernels) {
  std::vector<mlir::func::FuncOp> funcs;
  for (const format::Kernel& kernel : kernels) {
    auto func = module.lookupSymbol<mlir::func::FuncOp>(kernel.symbol);
    if (!func) fail(kernel, "no func.func named '" + kernel.symbol + "' in the IR");
    if (!func->hasAttr("qv.kernel")) fail(kernel, "func.func lacks the qv.kernel attribute");
    if (func.isExternal()) fail(kernel, "func.func has no body");
    if (func.getNumResults() != 0) fail(kernel, "a kernel must not return values");
    // Word views of buffers (ir::kBufferViewsAttr) follow the parameters after legalisation.
    size_t views = 0;
    if (auto attr = func->getAttrOfType<mlir::DenseI32ArrayAttr>(ir::kBufferViewsAttr)) views = attr.size();
    if (func.getNumArguments() != kernel.params.size() + views)
      fail(kernel, "the IR has " + std::to_string(func.getNumArguments() - views) +
                       " parameters but the manifest lists " +
                       std::to_string(kernel.params.size()));
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      mlir::Type type = func.getArgument(i).getType();
      bool is_memref = llvm::isa<mlir::MemRefType>(type);
      if (is_memref != kernel.params[i].is_buffer)
        fail(kernel, "parameter " + std::to_string(i) + " ('" + kernel.params[i].name +
                         "') is a " + (kernel.params[i].is_buffer ? "buffer" : "scalar") +
                         " in the manifest but has type " + type_string(type) + " in the IR");
      if (auto memref = llvm::dyn_cast<mlir::MemRefType>(type)) {
        if (memref.getRank() != 1 || !memref.getLayout().isIdentity() ||
            memref.getMemorySpace())
          fail(kernel, "buffer parameter " + std::to_string(i) + " ('" +
                           kernel.params[i].name + "') must be memref<?xT> in the default "
                           "memory space, not " + type_string(type));
      }
    }
    uint64_t threads = 1;
    for (uint32_t d : kernel.block) {
      if (d == 0) fail(kernel, "block dimensions must be at least 1");
      threads *= d;
    }
    if (threads > 1024)
      fail(kernel, "block of " + std::to_string(threads) +
                       " threads exceeds the 1024 invocations Vulkan devices allow");
    if (auto attr = func->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block")) {
      llvm::ArrayRef<int32_t> dims = attr.asArrayRef();
      if (dims.size() != 3 || uint32_t(dims[0]) != kernel.block[0] ||
          uint32_t(dims[1]) != kernel.block[1] || uint32_t(dims[2]) != kernel.block[2])
        fail(kernel, "qv.block in the IR differs from the manifest's block shape");
    }
    funcs.push_back(func);
  }
  return funcs;
}

void check_kernel_types(mlir::func::FuncOp func, const format::Kernel& kernel) {
  for (size_t i = 0; i < func.getNumArguments(); ++i)
    check_type(func.getArgument(i).getType(), kernel,
               "parameter " + std::to_string(i) + " '" +
                   (i < kernel.params.size() ? kernel.params[i].name : std::string()) + "'");
  func.walk([&](mlir::Operation* op) {
    std::string where = "'" + op->getName().getStringRef().str() + "'";
    for (mlir::Type t : op->getResultTypes()) check_type(t, kernel, where);
    for (mlir::Type t : op->getOperandTypes()) check_type(t, kernel, where);
    for (mlir::Region& region : op->getRegions())
      for (mlir::Block& block : region)
        for (mlir::Type t : block.getArgumentTypes()) check_type(t, kernel, where);
  });
}

void exact_signed_remainder(mlir::func::FuncOp func) {
  llvm::SmallVector<mlir::arith::RemSIOp> rems;
  func.walk([&](mlir::arith::RemSIOp op) { rems.push_back(op); });
  for (mlir::arith::RemSIOp op : rems) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op.getLoc();
    mlir::Value q = b.create<mlir::arith::DivSIOp>(loc, op.getLhs(), op.getRhs());
    mlir::Value prod = b.create<mlir::arith::MulIOp>(loc, q, op.getRhs());
    op.replaceAllUsesWith(b.create<mlir::arith::SubIOp>(loc, op.getLhs(), prod).getResult());
    op.erase();
  }
}

void structure_control_flow(mlir::func::FuncOp func, const format::Kernel& kernel) {
  if (func.getBody().getBlocks().size() != 1)
    fail(kernel, "unstructured control flow (several blocks) reached the spirv target");
  llvm::SmallVector<mlir::Operation*> work;
  func.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
    if (llvm::isa<mlir::scf::IndexSwitchOp, mlir::scf::ExecuteRegionOp>(op)) work.push_back(op);
    if (op->getDialect() && op->getDialect()->getNamespace() == "cf")
      fail(kernel, "unstructured control flow ('" + op->getName().getStringRef().str() +
                       "') reached the spirv target; the IR must be structured (docs/ir.md)");
  });
  // Pre-order: outer ops come first; rewriting an outer op moves (but keeps) inner ones.
  for (mlir::Operation* op : work) {
    if (auto sw = llvm::dyn_cast<mlir::scf::IndexSwitchOp>(op)) {
      lower_index_switch(sw);
      continue;
    }
    auto region_op = llvm::cast<mlir::scf::ExecuteRegionOp>(op);
    mlir::Region& region = region_op.getRegion();
    if (!region.hasOneBlock())
      fail(kernel, "scf.execute_region with several blocks is not supported by the spirv target");
    mlir::Block& block = region.front();
    auto yield = llvm::cast<mlir::scf::YieldOp>(block.getTerminator());
    llvm::SmallVector<mlir::Value> results(yield.getOperands());
    yield.erase();
    op->getBlock()->getOperations().splice(op->getIterator(), block.getOperations());
    op->replaceAllUsesWith(results);
    op->erase();
  }
}

namespace {

void wrap_as_gpu_kernel(mlir::func::FuncOp func) {
  mlir::MLIRContext* ctx = func.getContext();
  format::Kernel kernel;   // names the kernel in an error
  kernel.symbol = func.getSymName().str();
  auto block_attr = func->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
  if (!block_attr || block_attr.size() != 3) fail(kernel, "qv.block must be array<i32: x, y, z>");
  auto parent = func->getParentOfType<mlir::ModuleOp>();
  mlir::Location loc = func.getLoc();
  mlir::OpBuilder b(ctx);
  b.setInsertionPointToEnd(parent.getBody());
  auto gpu_module = b.create<mlir::gpu::GPUModuleOp>(loc, kernel_module_name(kernel.symbol));

  b.setInsertionPoint(gpu_module.getBody()->getTerminator());
  auto gpu_func = b.create<mlir::gpu::GPUFuncOp>(loc, kernel.symbol, func.getFunctionType());
  gpu_func.getBody().takeBody(func.getBody());
  gpu_func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  gpu_func->setAttr(mlir::spirv::getEntryPointABIAttrName(),
                    mlir::spirv::getEntryPointABIAttr(ctx, block_attr.asArrayRef()));
  // docs/abi.md: parameter i is binding i of set 0; scalars live in a StorageBuffer struct.
  // A word view of a buffer (ir::kBufferViewsAttr) is a second variable at its parameter's
  // binding (Vulkan allows aliased bindings; lower.cpp decorates them Aliased); the views follow
  // the kernel's own parameters.
  llvm::ArrayRef<int32_t> view_of;
  if (auto attr = func->getAttrOfType<mlir::DenseI32ArrayAttr>(ir::kBufferViewsAttr)) view_of = attr.asArrayRef();
  if (view_of.size() > gpu_func.getNumArguments()) fail(kernel, "more word views than parameters");
  const unsigned params = gpu_func.getNumArguments() - view_of.size();
  for (unsigned i = 0; i < gpu_func.getNumArguments(); ++i) {
    std::optional<mlir::spirv::StorageClass> storage;
    if (!llvm::isa<mlir::MemRefType>(gpu_func.getArgument(i).getType()))
      storage = mlir::spirv::StorageClass::StorageBuffer;
    unsigned binding = i < params ? i : unsigned(view_of[i - params]);
    gpu_func.setArgAttr(i, mlir::spirv::getInterfaceVarABIAttrName(),
                        mlir::spirv::getInterfaceVarABIAttr(0, binding, storage, ctx));
  }

  // func.return → gpu.return.
  llvm::SmallVector<mlir::func::ReturnOp> returns;
  gpu_func.walk([&](mlir::func::ReturnOp ret) { returns.push_back(ret); });
  for (mlir::func::ReturnOp ret : returns) {
    b.setInsertionPoint(ret);
    b.create<mlir::gpu::ReturnOp>(ret.getLoc());
    ret.erase();
  }

  // Workgroup allocas become memref.alloc, which MemRefToSPIRV turns into Workgroup globals;
  // thread-private allocas move to the entry block's start (SPIR-V requires Function variables
  // there) and get the private address space, mapped to the Function storage class.
  llvm::SmallVector<mlir::memref::AllocaOp> allocas;
  gpu_func.walk([&](mlir::memref::AllocaOp alloca) { allocas.push_back(alloca); });
  mlir::Block& entry = gpu_func.getBody().front();
  for (mlir::memref::AllocaOp alloca : allocas) {
    mlir::MemRefType type = alloca.getType();
    if (!type.hasStaticShape() || !alloca.getDynamicSizes().empty())
      fail(kernel, "memref.alloca of dynamic shape " + type_string(type) + " is not supported");
    auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(type.getMemorySpace());
    if (space && space.getValue() == mlir::gpu::AddressSpace::Workgroup) {
      b.setInsertionPoint(alloca);
      auto alloc = b.create<mlir::memref::AllocOp>(alloca.getLoc(), type);
      alloca.replaceAllUsesWith(alloc.getResult());
      alloca.erase();
      continue;
    }
    if (type.getMemorySpace() && !space)
      fail(kernel, "memref.alloca in unsupported memory space " + type_string(type));
    auto private_type = mlir::MemRefType::get(
        type.getShape(), type.getElementType(), type.getLayout(),
        mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Private));
    alloca->moveBefore(&entry, entry.begin());
    alloca.getResult().setType(private_type);
  }
  func.erase();
}

}  // namespace

std::string kernel_module_name(llvm::StringRef symbol) { return "qv_spirv_" + symbol.str(); }

void wrap_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols) {
  for (mlir::func::FuncOp func : quiver::ir::named_kernels(module, symbols)) wrap_as_gpu_kernel(func);
}

}  // namespace quiver::compiler::spirv_target
