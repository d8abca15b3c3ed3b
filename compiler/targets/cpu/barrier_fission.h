// Private to the CPU target: a block of a barrier kernel as loops over its threads, split at
// each barrier (docs/targets.md "CPU: barriers as loops"), and its subgroups as lanes of those
// loops (subgroup_lanes.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::cpu {

// Marks of the rewrite, kept on the ops it makes (subgroup_lanes.cpp adds to them):
inline constexpr const char* kAfterAttr = "qv.cpu.after_threads";   // runs once, after the thread loop before it
inline constexpr const char* kSlotAttr = "qv.cpu.thread_slots";     // a per-thread array
inline constexpr const char* kLoopAttr = "qv.cpu.thread_loop";      // a loop over the block's threads

// Why a kernel cannot run as thread loops.
struct FissionFailure {
  std::string why;
};

// Splits block `body` of `root` (whose gpu.thread_id ops are the threads') into loops over the
// threads at each gpu.barrier inside `root`: a barrier inside scf.for / scf.if / scf.while
// (whose trip count or condition the language requires uniform over the threads) moves the
// thread loops inside that op; a value live across a barrier is kept per thread in an array
// allocated at the start of `entry`. Without `lanes` the loops run over `block` (z, y, x; x
// innermost); with it, one loop over x from 0 to `lanes` (a subgroup's lanes; `block` is then
// {capacity of the per-thread arrays, 1, 1}). Throws FissionFailure, leaving the IR half
// rewritten, when the structure does not allow it (a barrier under other control flow, a value
// live across a barrier that cannot be stored per thread, per-thread arrays over 512 KiB).
void split_into_thread_loops(mlir::Operation* root, mlir::Block* body, mlir::Block* entry,
                             std::array<uint32_t, 3> block, mlir::Value lanes);

// `rewrite` on a copy of `func`, whose body replaces func's when it does not throw
// FissionFailure; otherwise `func` stays as it was and `why_not` has the reason.
bool rewrite_on_copy(mlir::func::FuncOp func, llvm::function_ref<void(mlir::func::FuncOp)> rewrite,
                     std::string& why_not);

// `visit` on each func.func of `module` with a 3-element qv.block and a body of one block.
void for_each_kernel(mlir::ModuleOp module,
                     llvm::function_ref<void(mlir::func::FuncOp, std::array<uint32_t, 3>)> visit);

// A gpu.barrier inside `root`.
bool has_barrier(mlir::Operation* root);

// gpu.subgroup_reduce, gpu.shuffle or gpu.lane_id inside `root`.
bool has_subgroup_operations(mlir::Operation* root);

// Rewrites kernel `func` (a body on gpu.thread_id, before the CPU target replaces the gpu ids)
// so that one call runs every thread of a block of `block` threads: split at its barriers
// (split_into_thread_loops), then, where it has subgroup operations, its subgroups made lanes
// of the thread loops (subgroups_to_lanes; `subgroup_lanes` says whether that held: a barrier
// kernel where it does not keeps its thread loops with subgroups of one thread, `why_not`
// saying why). Returns false, leaving `func` untouched, with the reason in `why_not`, when the
// kernel has neither barriers nor subgroup operations or cannot be split: such a kernel keeps
// fibers (barriers) or subgroups of one thread.
bool block_to_thread_loops(mlir::func::FuncOp func, std::array<uint32_t, 3> block, bool& subgroup_lanes,
                           std::string& why_not);

// The qv-cpu-barriers-to-loops pass: every func.func with gpu.barrier and a qv.block attribute
// split at its barriers; one it cannot rewrite is left as it is.
void barriers_to_loops_in_module(mlir::ModuleOp module);

}  // namespace quiver::compiler::cpu
