// QV_SPECIALIZE parameters (include/quiver/kernel.h) as SPIR-V specialization constants.
//
// A scalar parameter i of a kernel is a storage buffer at binding i (docs/abi.md) that the
// kernel loads once. A specialized one is instead `OpSpecConstant` i32 0 with `SpecId i`: the
// runtime supplies the launch's value when it creates the pipeline (VkSpecializationInfo), so the
// driver compiles it as a constant. The binding stays (the runtime binds every parameter), unread.
#pragma once

#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace quiver::compiler::spirv_target {

// The parameters of kernel `fn` marked QV_SPECIALIZE (the front end's `qv.specialize` function
// attribute: their indices), in order.
std::vector<unsigned> specialized_parameters(mlir::func::FuncOp fn);

// In `module` (one kernel's, after conversion), every load of parameter i's binding for i in
// `params` becomes a reference to a new specialization constant with SpecId i.
void specialize_parameters(mlir::spirv::ModuleOp module, const std::string& symbol, const std::vector<unsigned>& params);

}  // namespace quiver::compiler::spirv_target
