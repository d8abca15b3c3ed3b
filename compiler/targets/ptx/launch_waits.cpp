#include "targets/ptx/launch_waits.h"

#include "ir/dialect/QvDialect.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace quiver::compiler::ptx {

namespace {

constexpr const char* kWait = "griddepcontrol.wait;";
constexpr const char* kLaunchDependents = "griddepcontrol.launch_dependents;";

bool is_asm_call(const llvm::Instruction& inst, llvm::StringRef text) {
  const auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
  if (!call) return false;
  const auto* asm_op = llvm::dyn_cast<llvm::InlineAsm>(call->getCalledOperand());
  return asm_op && asm_op->getAsmString() == text;
}

llvm::CallInst* insert_asm(llvm::Instruction* before, const char* text) {
  llvm::LLVMContext& ctx = before->getContext();
  llvm::FunctionType* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false);
  llvm::InlineAsm* asm_op = llvm::InlineAsm::get(type, text, "~{memory}", /*hasSideEffects=*/true);
  return llvm::CallInst::Create(type, asm_op, "", before);
}

// The kernels: nvvm.annotations lists each as {ptr @f, !"kernel", i32 1}.
llvm::SmallVector<llvm::Function*> kernels_of(llvm::Module& module) {
  llvm::SmallVector<llvm::Function*> kernels;
  llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations");
  if (!annotations) return kernels;
  for (llvm::MDNode* node : annotations->operands()) {
    if (node->getNumOperands() < 2) continue;
    auto* key = llvm::dyn_cast<llvm::MDString>(node->getOperand(1));
    auto* value = llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(node->getOperand(0).get());
    if (!key || key->getString() != "kernel" || !value) continue;
    if (auto* f = llvm::dyn_cast<llvm::Function>(value->getValue()); f && !f->isDeclaration()) kernels.push_back(f);
  }
  return kernels;
}

}  // namespace

void lower_launch_waits(mlir::ModuleOp module) {
  llvm::SmallVector<quiver::ir::qv::WaitPriorLaunchesOp> waits;
  module.walk([&](quiver::ir::qv::WaitPriorLaunchesOp op) { waits.push_back(op); });
  for (quiver::ir::qv::WaitPriorLaunchesOp op : waits) {
    mlir::OpBuilder b(op);
    auto dialect = mlir::LLVM::AsmDialectAttr::get(b.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
    b.create<mlir::LLVM::InlineAsmOp>(op.getLoc(), mlir::TypeRange{}, mlir::ValueRange{}, kWait, "~{memory}",
                                      /*has_side_effects=*/true, /*is_align_stack=*/false, dialect,
                                      /*operand_attrs=*/mlir::ArrayAttr());
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

void place_launch_waits(llvm::Module& module, bool overlap) {
  if (!overlap) {
    for (llvm::Function& f : module)
      for (llvm::BasicBlock& block : f)
        for (llvm::Instruction& inst : llvm::make_early_inc_range(block))
          if (is_asm_call(inst, kWait)) inst.eraseFromParent();
    return;
  }
  // A wait inside a helper the kernel calls (not inlined yet) is not seen here: that kernel waits
  // at its entry as well, which is safe and only gives up the early loads.
  for (llvm::Function* kernel : kernels_of(module)) {
    llvm::SmallVector<llvm::Instruction*> waits, returns;
    for (llvm::BasicBlock& block : *kernel)
      for (llvm::Instruction& inst : block) {
        if (is_asm_call(inst, kWait)) waits.push_back(&inst);
        if (llvm::isa<llvm::ReturnInst>(inst)) returns.push_back(&inst);
      }
    if (waits.empty()) {
      waits.push_back(insert_asm(&*kernel->getEntryBlock().getFirstInsertionPt(), kWait));
    } else {
      for (llvm::Instruction* ret : returns) insert_asm(ret, kWait);
    }
    for (llvm::Instruction* wait : waits) insert_asm(wait->getNextNode(), kLaunchDependents);
  }
}

}  // namespace quiver::compiler::ptx
