// Intrinsic functions of the neutral IR (docs/ir.md): operations with no MLIR upstream op that
// the front end emits as calls to private func.func declarations (those not yet in the qv
// dialect, compiler/ir/dialect). Each target either lowers a call to its native instruction or
// asks legalize() for the portable expansion.
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

// i32 @qv.dot4_i8(i32 a, i32 b, i32 acc): acc + sum over k of int8(a >> 8k) * int8(b >> 8k),
// wrapping on overflow (like dp4a).
inline constexpr const char* kDot4I8 = "qv.dot4_i8";

// Replaces every call of kDot4I8 by exact byte-lane arithmetic and drops the declaration.
void expand_dot4_i8(mlir::ModuleOp module);
// Replaces every call of kDot4I8 by the value `lower` builds for it (`b` inserts before the
// call), then drops the declaration: the portable expansion and each target's instruction.
void replace_dot4_i8(mlir::ModuleOp module,
                     llvm::function_ref<mlir::Value(mlir::OpBuilder& b, mlir::func::CallOp call)> lower);

// Asynchronous copies into shared memory (docs/async_copy.md). qv::copy_async is an ordinary
// 16-byte vector.load + vector.store pair, both carrying the unit attribute kAsyncCopyAttr, so a
// target without asynchronous copies needs nothing more than the copy it already is; the qv
// dialect's qv.copy_async_commit and qv.copy_async_wait mark the groups.
inline constexpr const char* kAsyncCopyAttr = "qv.copy_async";

// Drops the group marks: the copies are already synchronous.
void erase_async_copy_marks(mlir::ModuleOp module);

}  // namespace quiver::ir
