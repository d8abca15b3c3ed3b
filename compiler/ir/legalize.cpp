#include "ir/legalize.h"

#include "ir/passes.h"

namespace quiver::ir {

bool legalize(mlir::ModuleOp module, const LegalizeOptions& options, std::string& error) {
  return run_pipeline(module, legalize_pipeline(options), error);
}

}  // namespace quiver::ir
