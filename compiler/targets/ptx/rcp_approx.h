// qv::rcp on NVIDIA GPUs: the special-function unit's rcp.approx.ftz.f32 (docs/numerics.md).
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// Replaces every f32 `1 / x` the front end marked afn (qv::rcp) with llvm.nvvm.rcp.approx.ftz.f:
// one MUFU.RCP (1 ulp, subnormals flushed) where the IEEE reciprocal is a range check, a
// MUFU.RCP and two refinement steps behind a branch — what held gelu_erf bf16 compute-bound.
void lower_rcp_to_rcp_approx(mlir::ModuleOp module);

}  // namespace quiver::compiler::ptx
