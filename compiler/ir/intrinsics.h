// Intrinsic functions of the neutral IR (docs/ir.md): operations with no MLIR upstream op that
// the front end emits as calls to private func.func declarations. Each target either lowers a
// call to its native instruction or asks legalize() for the portable expansion.
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

// i32 @qv.dot4_i8(i32 a, i32 b, i32 acc): acc + sum over k of int8(a >> 8k) * int8(b >> 8k),
// wrapping on overflow (like dp4a).
inline constexpr const char* kDot4I8 = "qv.dot4_i8";

// Replaces every call of kDot4I8 by exact byte-lane arithmetic and drops the declaration.
void expand_dot4_i8(mlir::ModuleOp module);

}  // namespace quiver::ir
