// SPIR-V lowerings for the atomics MLIR 19's MemRefToSPIRV leaves out: float add and exchange
// (memref.atomic_rmw addf / assign) and compare-and-swap (the front end's memref.generic_atomic_rmw of
// the form `select(current == expected, desired, current)`).
#pragma once

namespace mlir {
class RewritePatternSet;
class SPIRVTypeConverter;
}  // namespace mlir

namespace quiver::compiler::spirv_target {
void populate_atomic_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns);
}
