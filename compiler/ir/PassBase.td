// What the folders' Passes.td share: a quiver pass is an MLIR pass named qv-<what it does>, on a
// builtin.module unless it says otherwise; the kernel-list passes take the kernels they rewrite
// as the option kernels=<symbols>.
#ifndef QUIVER_IR_PASS_BASE
#define QUIVER_IR_PASS_BASE

include "mlir/Pass/PassBase.td"

class QvPass<string argument, string anchor = "mlir::ModuleOp"> : Pass<argument, anchor>;

class KernelListPass<string argument, list<Option> more_options = []> : QvPass<argument> {
  let options = !listconcat(
      [ListOption<"kernels", "kernels", "std::string", "the kernels' symbols, in the image's order">], more_options);
}

#endif  // QUIVER_IR_PASS_BASE
