// Each kernel of the neutral IR as a gpu.func in a gpu.module of its own (docs/abi.md "PTX /
// cubin"), the form MLIR's NVVM conversions take: the pass qv-ptx-outline-kernels; and their
// dynamic shared memory made one array once they are lowered and spliced into one module.
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

// On the module the kernels' lowered gpu.modules were spliced into: convert-gpu-to-nvvm gives
// each kernel that uses dynamic shared memory its own internal, zero-length `__dynamic_shmem__N`
// global. Internal, NVPTX emits it as a one-byte *static* `.shared` variable, which moves the
// dynamic memory off offset 0 and past the launch's size; and the kernels repeat the name. This
// makes them one `.extern .shared` array, `__qv_dynamic_shared`, at the module's start, that
// every kernel addresses, as nvcc's `extern __shared__` is (the pass
// qv-ptx-share-dynamic-shared-memory).
void share_dynamic_shared_memory(mlir::ModuleOp module);

}  // namespace quiver::compiler::ptx
