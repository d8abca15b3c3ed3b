// Private to the CPU target: a block of a barrier kernel as loops over its threads, split at
// each barrier (docs/targets.md "CPU: barriers as loops").
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::cpu {

// Rewrites `func` (a kernel body on gpu.thread_id, before the CPU target replaces the gpu ids)
// so that one call runs every thread of a block of `block` threads: the body becomes loops over
// the threads split at each gpu.barrier; a barrier inside scf.for / scf.if / scf.while (whose
// trip count or condition the language requires uniform over the block) moves the thread loops
// inside that op; a value live across a barrier is kept per thread in a stack array. Returns
// false, leaving `func` untouched, with the reason in `why_not`, when the structure does not
// allow it (a barrier under other control flow, a value live across a barrier that cannot be
// stored per thread, per-thread arrays too large for the stack): such a kernel keeps fibers.
bool barriers_to_thread_loops(mlir::func::FuncOp func, std::array<uint32_t, 3> block, std::string& why_not);

// The qv-cpu-barriers-to-loops pass: every func.func with gpu.barrier and a qv.block attribute,
// through barriers_to_thread_loops; one it cannot rewrite is left as it is.
void barriers_to_loops_in_module(mlir::ModuleOp module);

}  // namespace quiver::compiler::cpu
