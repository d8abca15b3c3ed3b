// Loops with their test at the top, for SPIR-V drivers.
//
// Lifting the front end's branches to structured control flow (mlir's lift-cf-to-scf) gives every
// loop the do-while shape: one `scf.while` whose "before" region tests the condition and runs
// the body under an `scf.if` of it, its "after" region only forwarding values. In SPIR-V that is a
// loop header holding the whole body. NVIDIA's Vulkan driver (580) compiles the same workgroup
// cooperative-matrix product 28% slower in that shape than as header (test) -> body -> continue
// (139 against 193 TFLOP/s, docs/perf/NOTES.md). This rewrite gives such loops the top-tested
// shape: "before" computes only the condition, "after" is the body.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace quiver::compiler::spirv_target {

// Rewrites, innermost first, every `scf.while` in `fn` of the lifted do-while shape: the before
// region is side-effect-free operations computing %c, one `scf.if %c` whose else branch yields
// only `ub.poison`, and `scf.condition(%c)` of that if's results and the loop's own arguments;
// the after region only forwards its arguments. Values the old loop produced from the if's
// results (poison at the exit) become poison. Returns the number rewritten.
unsigned make_loops_top_tested(mlir::func::FuncOp fn);

}  // namespace quiver::compiler::spirv_target
