// Normalisation of the front end's output into the neutral IR of docs/ir.md: locals promoted
// to SSA values and canonicalised (control flow still cf branches); structure() then lifts the
// control flow to scf, after the target-dependent rewrites of legalize.h.
#pragma once

#include <string>

#include "mlir/IR/BuiltinOps.h"

namespace mlir { class MLIRContext; class DialectRegistry; }

namespace quiver::ir {

// Every dialect the neutral IR uses (front end output, normalisation, targets' inputs).
void register_dialects(mlir::DialectRegistry& registry);

// Returns false and fills `error` when a pass fails (an internal error: the front end's output
// is always valid IR).
bool normalize(mlir::ModuleOp module, std::string& error);
bool structure(mlir::ModuleOp module, std::string& error);

// Steps of the two (passes.h: qv-fold-block-dims, qv-promote-private-variables).
// qv.block's sizes replace gpu.block_dim, and gpu.thread_id along an axis of size 1 is 0.
void fold_block_dims(mlir::ModuleOp module);
// mem2reg of the allocas in the private address space (never a workgroup array).
void promote_private_variables(mlir::ModuleOp module);

}  // namespace quiver::ir
