// The rewrites of the neutral IR (docs/ir.md) as registered MLIR passes, named qv-<what it
// does>, and the textual pipelines built from them. Every target lowers through such a pipeline
// (its own passes, in its folder, added to these); quiver-opt runs any of them on a file.
#pragma once

#include <string>

#include "llvm/ADT/StringRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "ir/normalize.h"

namespace quiver::ir {

struct LegalizeOptions;

// Registers this folder's passes, the qv-normalize / qv-structure / qv-legalize pipelines and
// the upstream passes they name (canonicalize, cse, lift-cf-to-scf). Idempotent, thread-safe.
void register_passes();

// The front end's normalisation: block dimensions folded, private variables promoted to SSA.
std::string normalize_pipeline();
// Control flow lifted to scf (what every target's lowering expects), canonicalised.
std::string structure_pipeline();
// The target-dependent rewrites `options` asks for, then structure_pipeline().
std::string legalize_pipeline(const LegalizeOptions& options);

// Runs the textual pass list `pipeline` ("qv-expand-dot4-i8,canonicalize") on `op`, anchored
// on its own op name. False with `error` holding the parse error or the failing passes'
// diagnostics (their messages, "; "-separated).
bool run_pipeline(mlir::Operation* op, llvm::StringRef pipeline, std::string& error);

// The base of a quiver pass on `Op`: Derived defines kArgument, kDescription and
// rewrite(Op); a std::exception thrown by rewrite is the pass's failure, its message the
// error diagnostic on the op.
template <typename Derived, typename Op = mlir::ModuleOp>
class RewritePass : public mlir::PassWrapper<Derived, mlir::OperationPass<Op>> {
 public:
  llvm::StringRef getArgument() const override { return Derived::kArgument; }
  llvm::StringRef getDescription() const override { return Derived::kDescription; }
  // The neutral IR's dialects: quiver-opt loads only those its input names.
  void getDependentDialects(mlir::DialectRegistry& registry) const override { register_dialects(registry); }
  void runOnOperation() override {
    try {
      static_cast<Derived*>(this)->rewrite(this->getOperation());
    } catch (const std::exception& e) {
      this->getOperation()->emitError(e.what());
      this->signalPassFailure();
    }
  }
};

// Registers pass `P` (any number of times: registration of one pass type is idempotent).
template <typename P>
void register_pass() {
  mlir::registerPass([] { return std::unique_ptr<mlir::Pass>(std::make_unique<P>()); });
}

}  // namespace quiver::ir
