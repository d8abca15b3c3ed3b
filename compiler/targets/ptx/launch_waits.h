// Overlapped launches on NVIDIA GPUs (docs/abi.md "Overlapped launches"): Hopper's programmatic
// dependent launch lets a kernel start while the previous kernel of its stream drains, provided
// the kernel itself waits (griddepcontrol.wait) before it reads what that kernel wrote.
#pragma once

#include <string>

#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::ptx {

// qv.wait_prior_launches as `griddepcontrol.wait;` inline PTX (a memory clobber, so no load
// moves across it). Arch-neutral: place_launch_waits keeps or removes it per arch. The pass
// qv-ptx-launch-waits.
void lower_launch_waits(mlir::ModuleOp module);

// True for the archs whose PTX has griddepcontrol (sm_90 and later).
bool has_launch_waits(const std::string& arch);

// On the kernels' LLVM-dialect module, once per arch: where the arch has griddepcontrol (`overlap`), every kernel that never calls
// qv::wait_prior_launches waits at its entry, every kernel also waits before each return (a
// block that never reached its own call must not finish first: the next kernel trusts this
// one's end to mean the previous one's), and each wait is followed by launch_dependents (the
// next kernel may be scheduled once all of this one's blocks are past their wait). Elsewhere
// the waits are removed. The pass qv-ptx-place-launch-waits{overlap=}.
void place_launch_waits(mlir::ModuleOp module, bool overlap);

}  // namespace quiver::compiler::ptx
