// Each kernel of the neutral IR as a gpu.func in a gpu.module of its own (docs/abi.md "PTX /
// cubin"), the form MLIR's NVVM conversions take: the pass qv-ptx-outline-kernels.
#pragma once

#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// The gpu.module the kernel with symbol `symbol` is outlined into.
std::string kernel_module_name(llvm::StringRef symbol);

// Moves each kernel named in `symbols` (func.func with qv.kernel and qv.block) into a new
// gpu.module @qv_ptx_<symbol> at the end of `module`, in that order: buffers retyped for the
// bare-pointer convention, workgroup allocas turned into workgroup attributions (static `.shared`
// arrays) or, past the 48 KiB a `.shared` declaration may hold, into views of the dynamic shared
// memory at ir::workgroup_layout's offsets. std::runtime_error names the kernel it cannot move.
void outline_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols);

}  // namespace quiver::compiler::ptx
