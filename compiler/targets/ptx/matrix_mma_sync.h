// Matrix tiles (compiler/ir/matrix.h) on NVIDIA tensor cores through mma.sync (sm_80+).
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// Rewrites every matrix operation (qv.matrix_*) of the (legalised, structured) module into per-lane
// fragment accesses and mma.sync inline PTX; tile values become vector<8 x T> per lane.
void lower_matrix_to_mma_sync(mlir::ModuleOp module);

}  // namespace quiver::compiler::ptx
