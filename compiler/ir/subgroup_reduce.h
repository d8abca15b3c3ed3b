// Subgroup reductions in a block whose last subgroup is partly filled (docs/ir.md, "Subgroups of
// a partly filled block").
#pragma once

#include "mlir/IR/Operation.h"

namespace quiver::ir {

// Rewrites each gpu.subgroup_reduce of a 32-bit value in a function whose block (`qv.block`, a
// gpu.func's `known_block_size`, or an unknown one) is not a whole number of `width`-lane
// subgroups into gpu.shuffle xor butterflies that take, in place of a lane past the block's last
// thread, the operation's identity (its own value for min, max, and, or). The targets' lowering of
// the others (upstream's butterflies, which read every lane of the subgroup) stays as it is: a
// lane the block does not have returns an undefined value there, which a partly filled NVIDIA
// warp reads as 0.
void lower_partial_subgroup_reductions(mlir::Operation* root, unsigned width);

}  // namespace quiver::ir
