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

// The base of every quiver pass, over the class mlir-tblgen generates from its folder's
// Passes.td (impl::<Name>Base<Derived>: its name, summary, anchor and options): the neutral IR's
// dialects as dependent dialects (quiver-opt loads only those its input names), and rewrite(f),
// which runs f(op) and makes a std::exception it throws the pass's failure, its message an
// error on the op.
template <typename Generated>
class Rewriting : public Generated {
 public:
  using Generated::Generated;
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    Generated::getDependentDialects(registry);
    register_dialects(registry);
  }

 protected:
  template <typename Rewrite>
  void rewrite(Rewrite&& run) {
    try {
      run(this->getOperation());
    } catch (const std::exception& e) {
      this->getOperation()->emitError(e.what());
      this->signalPassFailure();
    }
  }
};

// A list option's values (kernels=, keep=) as strings.
template <typename ListOption>
llvm::SmallVector<std::string> values(const ListOption& option) {
  return llvm::SmallVector<std::string>(option.begin(), option.end());
}

// A pass without options that runs `kRewrite` on its op, over the generated base `Generated`
// (impl::<Name>Base): using <Name>Pass = ir::RewritePass<impl::<Name>Base, rewrite>.
template <template <typename> class Generated, auto kRewrite>
class RewritePass : public Rewriting<Generated<RewritePass<Generated, kRewrite>>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RewritePass)
  void runOnOperation() override { this->rewrite(kRewrite); }
};

// A pass whose one option is kernels=<symbols> (PassBase.td's KernelListPass) that runs
// `kRewrite(module, symbols)`.
template <template <typename> class Generated, auto kRewrite>
class KernelListRewritePass : public Rewriting<Generated<KernelListRewritePass<Generated, kRewrite>>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(KernelListRewritePass)
  using Rewriting<Generated<KernelListRewritePass>>::Rewriting;
  void runOnOperation() override {
    this->rewrite([this](mlir::ModuleOp module) { kRewrite(module, values(this->kernels)); });
  }
};

// Registers the passes `P...` (registering a pass type again is harmless).
template <typename... P>
void register_pass() {
  (mlir::registerPass([] { return std::unique_ptr<mlir::Pass>(std::make_unique<P>()); }), ...);
}

// A folder's registration, once per program since MLIR's pass registry is not thread-safe:
// `first` (the registrations its pipelines also name), then its passes `P...`.
template <void (*first)(), typename... P>
void register_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    first();
    register_pass<P...>();
  });
}

}  // namespace quiver::ir
