// Normalisation of the front end's output into the neutral IR of docs/ir.md: locals promoted
// to SSA values, unstructured control flow lifted to scf, then canonicalised.
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

}  // namespace quiver::ir
