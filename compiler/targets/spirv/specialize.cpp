#include "targets/spirv/specialize.h"

#include <stdexcept>

#include "mlir/IR/Builders.h"

namespace quiver::compiler::spirv_target {

std::vector<unsigned> specialized_parameters(mlir::func::FuncOp fn) {
  std::vector<unsigned> out;
  if (auto attr = fn->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.specialize"))
    for (int32_t i : attr.asArrayRef()) out.push_back(static_cast<unsigned>(i));
  return out;
}

void specialize_parameters(mlir::spirv::ModuleOp module, const std::string& symbol, const std::vector<unsigned>& params) {
  for (unsigned i : params) {
    const std::string binding = symbol + "_arg_" + std::to_string(i);
    llvm::SmallVector<mlir::spirv::LoadOp> loads;
    module.walk([&](mlir::spirv::AddressOfOp address) {
      if (address.getVariable() != binding) return;
      for (mlir::Operation* chain : address->getUsers())
        for (mlir::Operation* user : chain->getUsers())
          if (auto load = llvm::dyn_cast<mlir::spirv::LoadOp>(user)) loads.push_back(load);
    });
    if (loads.empty()) continue;   // the kernel never reads it
    mlir::Type type = loads.front().getType();
    if (!type.isInteger(32))
      throw std::runtime_error("internal error: specialized parameter " + std::to_string(i) + " of " + symbol +
                               " is not loaded as a 32-bit integer");
    mlir::OpBuilder b(module.getContext());
    b.setInsertionPointToStart(module.getBody());
    const std::string name = symbol + "_spec_" + std::to_string(i);
    auto spec = b.create<mlir::spirv::SpecConstantOp>(module.getLoc(), name, b.getI32IntegerAttr(0));
    spec->setAttr("spec_id", b.getI32IntegerAttr(static_cast<int32_t>(i)));
    for (mlir::spirv::LoadOp load : loads) {
      mlir::OpBuilder at(load);
      auto value = at.create<mlir::spirv::ReferenceOfOp>(load.getLoc(), type, name);
      load.getResult().replaceAllUsesWith(value.getResult());
      mlir::Operation* chain = load.getPtr().getDefiningOp();
      load.erase();
      if (chain && chain->use_empty()) chain->erase();
    }
  }
}

}  // namespace quiver::compiler::spirv_target
