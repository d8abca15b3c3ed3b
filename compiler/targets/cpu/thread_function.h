// Each kernel of the neutral IR as the CPU image's per-thread function (docs/abi.md "CPU"): the
// pass qv-cpu-thread-functions.
#pragma once

#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::cpu {

// What the driver reads off a thread function (and removes) to make its entry (cpu_entry.h):
inline constexpr const char* kBlockLoopsAttr = "qv.cpu.block_loops";  // one call runs the block
inline constexpr const char* kKeptAttr = "qv.cpu.kept";  // what stays per thread, and why ("fibers: ...")

// The thread function's name for the kernel with symbol `symbol`.
std::string thread_function_name(llvm::StringRef symbol);

// Turns each kernel named in `symbols` (func.func with qv.kernel and qv.block) into its
// per-thread function thread_function_name(symbol), in place: a kernel with barriers or subgroup
// operations in structured control flow runs its block as loops over the threads, its subgroups
// as lanes of them (barrier_fission.h); the function takes its parameters, then the shared
// memory bytes, the qv_cpu_ctx pointer and the ids (thread_id, block_id, grid_dim, the subgroup
// size; cpu_entry.h's ThreadFunction); the workgroup allocas become views of the shared bytes,
// gpu ops the arguments or their one-lane values, gpu.barrier a call of ctx->barrier.
// std::runtime_error names the kernel it cannot turn.
void make_thread_functions(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols);

}  // namespace quiver::compiler::cpu
