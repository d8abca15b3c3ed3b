// qv::dot4_i8 as SPIR-V's integer dot product (SPV_KHR_integer_dot_product, core in SPIR-V 1.6),
// for the spirv target's Vulkan 1.3 image: qv.dot4_i8 (ir/intrinsics.h) becomes OpSDot
// on the two words as packed 4 x 8-bit vectors, then an OpIAdd of the accumulator. The sum of
// four products of signed bytes fits 32 bits, and the addition wraps as the language defines
// (OpSDotAccSat would saturate instead). Devices run it with shaderIntegerDotProduct, which the
// image then requires; the portable image keeps the byte-lane arithmetic.
#pragma once

#include <string>

#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::spirv_target {

inline constexpr const char* kIntegerDotRequirement = "feature:shaderIntegerDotProduct";

// Whether `module` calls qv::dot4_i8's intrinsic.
bool uses_dot4_i8(mlir::ModuleOp module);

// func.call @qv.dot4_i8 -> OpSDot (PackedVectorFormat4x8Bit) + OpIAdd. Needs DotProduct and
// DotProductInput4x8BitPacked in the target env.
void populate_integer_dot_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns);

}  // namespace quiver::compiler::spirv_target
