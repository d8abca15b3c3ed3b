#include "ir/legalize.h"

#include <stdexcept>

#include "ir/block_tiles.h"
#include "ir/intrinsics.h"
#include "ir/matrix.h"
#include "ir/warpgroup.h"
#include "ir/normalize.h"
#include "mlir/IR/Verifier.h"

namespace quiver::ir {

bool legalize(mlir::ModuleOp module, const LegalizeOptions& options, std::string& error) {
  try {
    if (options.expand_matrix) expand_matrix_ops(module);
    if (options.expand_block_tiles) expand_block_ops(module);
    expand_warpgroup_ops(module, options.keep_warpgroup_mma);
    if (options.expand_dot4_i8) expand_dot4_i8(module);
    if (!options.keep_async_copies) erase_async_copy_marks(module);
    if (options.scalarize_vectors) scalarize_vectors(module, options.wide_buffer_access, !options.expand_matrix);
    carry_16bit_floats_as_bits(module, options.f16_as_bits, options.bf16_as_bits);
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
  if (mlir::failed(mlir::verify(module))) {
    error = "internal error: invalid IR after legalisation";
    return false;
  }
  return structure(module, error);
}

}  // namespace quiver::ir
