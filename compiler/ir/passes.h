// The rewrites of the neutral IR (docs/ir.md) as registered MLIR passes, named qv-<what it
// does>, and the textual pipelines built from them. Every target lowers through such a pipeline
// (its own passes, in its folder, added to these); quiver-opt runs any of them on a file.
#pragma once

#include <mutex>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

// The kernels (func.func with qv.kernel and a body) named by a pass's kernels= option, in that
// order; std::runtime_error names the first that is not one.
llvm::SmallVector<mlir::func::FuncOp> named_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols);

// A pass's argument (qv-<what it does>) and description.
struct PassText {
  llvm::StringLiteral argument;
  llvm::StringLiteral description;
};

// The base of a quiver pass on `Op` (any op for void): Derived defines apply(Op); a
// std::exception thrown by apply is the pass's failure, its message the error diagnostic on
// the op.
template <typename Derived, const PassText& text, typename Op = mlir::ModuleOp>
class RewritePass : public mlir::PassWrapper<Derived, mlir::OperationPass<Op>> {
 public:
  llvm::StringRef getArgument() const override { return text.argument; }
  llvm::StringRef getDescription() const override { return text.description; }
  // The neutral IR's dialects: quiver-opt loads only those its input names.
  void getDependentDialects(mlir::DialectRegistry& registry) const override { register_dialects(registry); }
  void runOnOperation() override {
    try {
      static_cast<Derived*>(this)->apply(this->getOperation());
    } catch (const std::exception& e) {
      this->getOperation()->emitError(e.what());
      this->signalPassFailure();
    }
  }
};

// A pass without options that calls `rewrite` on its op; `Dialects` are those whose ops it
// creates beyond the neutral IR's.
template <const PassText& text, auto rewrite, typename Op = mlir::ModuleOp, typename... Dialects>
class FunctionPass : public RewritePass<FunctionPass<text, rewrite, Op, Dialects...>, text, Op> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FunctionPass)
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    register_dialects(registry);
    (registry.insert<Dialects>(), ...);
  }
  template <typename OpOrPointer>
  void apply(OpOrPointer op) {
    rewrite(op);
  }
};

// A pass on a module with the option kernels=<symbols> (the kernels it takes, in that order) that
// calls `rewrite(module, symbols)`; `Dialects` as FunctionPass's.
template <const PassText& text, auto rewrite, typename... Dialects>
class KernelListPass : public RewritePass<KernelListPass<text, rewrite, Dialects...>, text> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(KernelListPass)
  KernelListPass() = default;
  KernelListPass(const KernelListPass& other) : RewritePass<KernelListPass, text>(other) {}
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    register_dialects(registry);
    (registry.insert<Dialects>(), ...);
  }
  void apply(mlir::ModuleOp module) { rewrite(module, llvm::SmallVector<std::string>(kernels.begin(), kernels.end())); }

 private:
  mlir::Pass::ListOption<std::string> kernels{*this, "kernels",
                                              llvm::cl::desc("the kernels' symbols, in the image's order")};
};

// Registers the passes `P...` (any number of times: registering a pass type is idempotent).
template <typename... P>
void register_pass() {
  (mlir::registerPass([] { return std::unique_ptr<mlir::Pass>(std::make_unique<P>()); }), ...);
}

// A folder's registration: `first` (the registrations its pipelines also name), then `P...`;
// once per program, since the pass registry is not thread-safe.
template <typename... P>
void register_once(void (*first)()) {
  static std::once_flag once;
  std::call_once(once, [first] {
    first();
    register_pass<P...>();
  });
}

}  // namespace quiver::ir
