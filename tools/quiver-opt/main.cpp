// quiver-opt: upstream MLIR's opt driver (mlir-opt's options: --pass-pipeline, --mlir-print-ir-*,
// --split-input-file, ...) over the dialects of quiver's IR, with every upstream pass and every
// qv- pass (compiler/ir/passes.h and each target's) registered. Each target's pipeline, as
// `quiverc -v` prints it, runs here on the IR files `quiverc --keep-temps` writes.
#include "ir/normalize.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "targets/target.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  quiver::ir::register_dialects(registry);
  registry.insert<mlir::index::IndexDialect, mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect,
                  mlir::ROCDL::ROCDLDialect, mlir::spirv::SPIRVDialect>();
  // The interfaces upstream conversions look up on these dialects (convert-to-llvm's, ...).
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
  quiver::compiler::register_passes();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "quiver-opt: runs MLIR and quiver (qv-) passes on quiver's IR\n", registry));
}
