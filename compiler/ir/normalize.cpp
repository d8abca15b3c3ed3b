#include "ir/normalize.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace quiver::ir {

void register_dialects(mlir::DialectRegistry& registry) {
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::ub::UBDialect, mlir::vector::VectorDialect>();
}

static bool run(mlir::ModuleOp module, mlir::PassManager& pm, std::string& error) {
  std::string diag;
  llvm::raw_string_ostream os(diag);
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic& d) {
    os << d << "\n";
    return mlir::success();
  });
  if (mlir::failed(pm.run(module))) {
    error = "internal error while normalising the IR: " + diag;
    return false;
  }
  return true;
}

bool normalize(mlir::ModuleOp module, std::string& error) {
  mlir::PassManager pm(module.getContext());
  // Unreachable blocks (code after break/return) go first, so mem2reg sees a clean CFG.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createMem2Reg());
  pm.addPass(mlir::createCanonicalizerPass());
  return run(module, pm, error);
}

bool structure(mlir::ModuleOp module, std::string& error) {
  mlir::PassManager pm(module.getContext());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createLiftControlFlowToSCFPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  return run(module, pm, error);
}

}  // namespace quiver::ir
