// qv::copy_async (docs/async_copy.md) on NVIDIA GPUs: cp.async (sm_80+).
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// Rewrites each marked 16-byte copy from a device buffer into workgroup memory as one
// cp.async.cg.shared.global, and the group marks as cp.async.commit_group / wait_group. A marked
// copy whose source or destination is not of that kind stays the synchronous copy it is.
void lower_async_copies_to_cp_async(mlir::ModuleOp module);

}  // namespace quiver::compiler::ptx
