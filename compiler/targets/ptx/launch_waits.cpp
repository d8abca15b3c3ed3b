#include "targets/ptx/launch_waits.h"

#include "ir/dialect/QvDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

namespace quiver::compiler::ptx {

namespace {

constexpr const char* kWait = "griddepcontrol.wait;";
constexpr const char* kLaunchDependents = "griddepcontrol.launch_dependents;";

bool is_asm(mlir::Operation* op, llvm::StringRef text) {
  auto asm_op = llvm::dyn_cast<mlir::LLVM::InlineAsmOp>(op);
  return asm_op && asm_op.getAsmString() == text;
}

// `text` as inline PTX with a memory clobber, so no load or store moves across it.
void create_asm(mlir::OpBuilder& b, mlir::Location loc, const char* text) {
  auto dialect = mlir::LLVM::AsmDialectAttr::get(b.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
  b.create<mlir::LLVM::InlineAsmOp>(loc, mlir::TypeRange{}, mlir::ValueRange{}, text, "~{memory}",
                                    /*has_side_effects=*/true, /*is_align_stack=*/false, dialect,
                                    /*operand_attrs=*/mlir::ArrayAttr());
}

}  // namespace

void lower_launch_waits(mlir::ModuleOp module) {
  llvm::SmallVector<quiver::ir::qv::WaitPriorLaunchesOp> waits;
  module.walk([&](quiver::ir::qv::WaitPriorLaunchesOp op) { waits.push_back(op); });
  for (quiver::ir::qv::WaitPriorLaunchesOp op : waits) {
    mlir::OpBuilder b(op);
    create_asm(b, op.getLoc(), kWait);
    op->erase();
  }
}

bool has_launch_waits(const std::string& arch) {
  // "sm_90a" -> 90; quiverc checked the spelling (sm_[0-9]+a?).
  int number = 0;
  for (char c : arch.substr(3)) {
    if (c < '0' || c > '9') break;
    number = number * 10 + (c - '0');
  }
  return number >= 90;
}

void place_launch_waits(mlir::ModuleOp module, bool overlap) {
  if (!overlap) {
    llvm::SmallVector<mlir::Operation*> waits;
    module.walk([&](mlir::LLVM::InlineAsmOp op) {
      if (is_asm(op, kWait)) waits.push_back(op);
    });
    for (mlir::Operation* op : waits) op->erase();
    return;
  }
  // A wait inside a helper the kernel calls (not inlined yet) is not seen here: that kernel waits
  // at its entry as well, which is safe and only gives up the early loads.
  for (mlir::LLVM::LLVMFuncOp kernel : module.getOps<mlir::LLVM::LLVMFuncOp>()) {
    if (kernel.isExternal() || !kernel->hasAttr(mlir::NVVM::NVVMDialect::getKernelFuncAttrName())) continue;
    llvm::SmallVector<mlir::Operation*> waits, returns;
    kernel.walk([&](mlir::Operation* op) {
      if (is_asm(op, kWait)) waits.push_back(op);
      if (llvm::isa<mlir::LLVM::ReturnOp>(op)) returns.push_back(op);
    });
    mlir::OpBuilder b(kernel.getContext());
    if (waits.empty()) {
      b.setInsertionPointToStart(&kernel.getBody().front());
      create_asm(b, kernel.getLoc(), kWait);
      waits.push_back(&kernel.getBody().front().front());
    } else {
      for (mlir::Operation* ret : returns) {
        b.setInsertionPoint(ret);
        create_asm(b, ret->getLoc(), kWait);
      }
    }
    for (mlir::Operation* wait : waits) {
      b.setInsertionPointAfter(wait);
      create_asm(b, wait->getLoc(), kLaunchDependents);
    }
  }
}

}  // namespace quiver::compiler::ptx
