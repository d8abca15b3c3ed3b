// qv::exp2 of float on Vulkan: GLSL.std.450 Exp2, which NVIDIA's driver maps to the
// special-function unit (as PTX's ex2.approx) and Mesa's to its own exp2 (docs/numerics.md).
#pragma once

#include <cstdint>
#include <vector>

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::spirv_target {

// Replaces every f32 math.exp2 with a stand-in, spirv.GL.Exp, before the portable math lowering
// would expand it into about sixty instructions (a polynomial exp behind two range reductions:
// the largest cost of softmax and gelu on Vulkan). MLIR 19's SPIR-V dialect has no GL.Exp2
// op, so the stand-in becomes Exp2 in the binary (retag_exp_as_exp2). Returns how many.
size_t exp2_to_glsl_stand_in(mlir::ModuleOp module);

// The serialized module's GLSL.std.450 Exp instructions become Exp2 (same operands). Every
// Exp in the module must be a stand-in: the portable math lowering leaves no math.exp behind,
// so nothing else creates one. Returns how many were retagged.
size_t retag_exp_as_exp2(std::vector<uint32_t>& words);

}  // namespace quiver::compiler::spirv_target
