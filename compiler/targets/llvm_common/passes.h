// The LLVM-based targets' own passes (qv-math-to-llvm-intrinsics, qv-align-vector-accesses,
// qv-align-workgroup-globals: llvm_common.h describes each rewrite) and the runner of their
// module pipelines.
#pragma once

#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::llvm_common {

// Registers these passes and ir::register_passes()'. Idempotent.
void register_passes();

// Runs the textual pipeline on `module` (printed first under quiverc -v); a failure is a
// TargetError quoting the failing passes' diagnostics.
void run_passes(mlir::ModuleOp module, const std::string& pipeline, const ErrorContext& where,
                const TargetOptions& options);

}  // namespace quiver::compiler::llvm_common
