// qv::exp2 of float on NVIDIA GPUs: the special-function unit's ex2.approx.f32 (docs/numerics.md).
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// Replaces every f32 math.exp2 (scalar, or element by element for vectors: matrix tiles) with
// llvm.nvvm.ex2.approx.f (ex2.approx.f32: one MUFU.EX2, subnormal results kept) before the
// portable math lowering, which would otherwise expand it into about twenty instructions — the
// largest cost of an online softmax on tensor cores (kernels/attention_tiles.cpp).
void lower_exp2_to_ex2_approx(mlir::ModuleOp module);

}  // namespace quiver::compiler::ptx
