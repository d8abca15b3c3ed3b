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

}  // namespace quiver::ir
