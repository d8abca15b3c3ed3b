// The portable math lowering: every math op of the neutral IR (docs/ir.md) becomes arith /
// bit-level code that every target can lower, so every backend computes the same values.
#pragma once

#include <stdexcept>
#include <string>

#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

// A math op that cannot be lowered (unsupported type, ...). The message names the function
// and the op.
class MathLoweringError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Rewrites, in every function of `module`:
// - f16 / bf16 math: computed in f32 and truncated back;
// - f32 exp, log, log2, tanh, erf: MLIR's polynomial approximations;
// - f64 exp, log, log2, tanh, erf, and sin, cos of f32 and f64: quiver's own (math_f64.cpp);
// - exp2 (any type): exp of the fraction, scaled by 2^n with exponent-bit arithmetic;
// - powf (any type): exp(y * log|x|) with C's rules for zero, negative and special inputs;
// - rsqrt: 1 / sqrt.
// Afterwards only the ops `is_exact_math_op` accepts remain; each target has an exact
// (correctly rounded) instruction for them.
void lower_math(mlir::ModuleOp module);

// math.sqrt, fma, absf, floor, ceil, roundeven, trunc, copysign: the ops left by lower_math.
bool is_exact_math_op(mlir::Operation* op);

}  // namespace quiver::ir
