// Integer dot products and asynchronous copies of the neutral IR (docs/ir.md): the qv dialect's
// operations (compiler/ir/dialect) that each target either lowers to its native instruction or
// leaves to legalize()'s portable expansion.
#pragma once

#include "ir/dialect/QvDialect.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

// qv.dot4_i8 (the qv dialect, compiler/ir/dialect) a, b, acc: acc + sum over k of
// int8(a >> 8k) * int8(b >> 8k), wrapping on overflow (like dp4a).

// Replaces every qv.dot4_i8 by exact byte-lane arithmetic.
void expand_dot4_i8(mlir::ModuleOp module);
// Replaces every qv.dot4_i8 by the value `lower` builds for it (`b` inserts before it): the
// portable expansion and each target's instruction.
void replace_dot4_i8(mlir::ModuleOp module,
                     llvm::function_ref<mlir::Value(mlir::OpBuilder& b, qv::Dot4I8Op dot)> lower);

// Asynchronous copies into shared memory (docs/async_copy.md). qv::copy_async is an ordinary
// 16-byte vector.load + vector.store pair, both carrying the unit attribute kAsyncCopyAttr, so a
// target without asynchronous copies needs nothing more than the copy it already is; the qv
// dialect's qv.copy_async_commit and qv.copy_async_wait mark the groups.
inline constexpr const char* kAsyncCopyAttr = "qv.copy_async";

// Drops the group marks: the copies are already synchronous.
void erase_async_copy_marks(mlir::ModuleOp module);

// Drops qv.wait_prior_launches: on a target whose launches never overlap it has nothing to wait for.
void erase_launch_waits(mlir::ModuleOp module);

}  // namespace quiver::ir
