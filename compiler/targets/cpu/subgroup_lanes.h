// Private to the CPU target: a block's subgroups as lanes of its thread loops
// (docs/targets.md "CPU: subgroups as lanes").
#pragma once

#include <array>
#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::cpu {

// On `func` after split_into_thread_loops (barrier_fission.h): each thread loop nest holding
// subgroup operations becomes a loop over the block's subgroups of W = gpu.subgroup_size
// consecutive threads (linear id, x fastest) around the subgroup's lanes, split at each
// subgroup operation like a block at a barrier. A lane stores its operand in a per-lane array;
// after the lane loop a reduction is computed once per subgroup (in lane order), and a shuffle
// is each lane's load of its source lane's element. The control flow around a subgroup
// operation is taken as uniform over the subgroup, as the language requires. W is the
// runtime's (docs/abi.md "CPU": a power of two dividing the block's thread count). Throws
// FissionFailure where the structure does not allow it.
void subgroups_to_lanes(mlir::func::FuncOp func, std::array<uint32_t, 3> block);

// The qv-cpu-subgroups-to-lanes pass: every func.func with subgroup operations, a qv.block
// attribute and no gpu.barrier (qv-cpu-barriers-to-loops runs first) rewritten as
// block_to_thread_loops does; one it cannot rewrite is left as it is.
void subgroups_to_lanes_in_module(mlir::ModuleOp module);

}  // namespace quiver::compiler::cpu
