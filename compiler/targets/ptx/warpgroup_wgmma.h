// qv.warpgroup_mma / _bt / wait (ir/warpgroup.h) as Hopper's wgmma (sm_90a only).
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// Rewrites the warpgroup products and waits of `module` in place (qv.warpgroup_store is left
// to ir::expand_warpgroup_ops), and fences the kernels' barriers for the async proxy.
void lower_warpgroup_to_wgmma(mlir::ModuleOp module);

}  // namespace quiver::compiler::ptx
