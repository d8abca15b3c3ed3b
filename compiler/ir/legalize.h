// Target-dependent rewrites of the neutral IR, run on each target's private copy before the
// target's own lowering (docs/ir.md). The front end leaves the IR unstructured (cf branches
// after mem2reg); legalize() applies what the target asked for and then structures the
// control flow (scf), which every target's lowering expects.
#pragma once

#include <string>

#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

struct LegalizeOptions {
  bool scalarize_vectors = false;   // no vector values at all (SPIR-V)
  bool f16_as_bits = false;         // f16 carried as i16, conversions in integer arithmetic
  bool bf16_as_bits = false;        // same for bf16
  bool expand_dot4_i8 = true;       // byte-lane arithmetic for kDot4I8 (else the target lowers it)
  bool expand_matrix = true;        // the portable matrix-tile fallback (else the target lowers them)
  bool keep_async_copies = false;   // keep qv::copy_async's group marks (the target lowers them)
};

// Applies `options`, then lift-cf-to-scf + canonicalize + cse. False with `error` on failure.
bool legalize(mlir::ModuleOp module, const LegalizeOptions& options, std::string& error);

// The individual steps (each throws std::runtime_error with the reason on failure).
void scalarize_vectors(mlir::ModuleOp module);
void carry_16bit_floats_as_bits(mlir::ModuleOp module, bool f16, bool bf16);

}  // namespace quiver::ir
