// Turns the neutral IR's kernels (func.func + qv.kernel, docs/ir.md) into what MLIR's SPIR-V
// conversions expect: one gpu.module per kernel holding a gpu.func with the Vulkan ABI
// attributes of docs/abi.md, structured control flow the SCF→SPIR-V patterns understand, and
// workgroup allocas as workgroup allocations. Every problem is a TargetError naming the kernel.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class ModuleOp;
namespace func { class FuncOp; }
namespace gpu { class GPUModuleOp; }
}  // namespace mlir

namespace quiver::compiler::spirv_target {

inline constexpr const char* kTargetName = "spirv";

// The kernel functions of `module` in the order of `kernels`; each must exist, carry qv.kernel,
// and agree with its manifest entry (parameter count, buffer vs scalar, block shape).
std::vector<mlir::func::FuncOp> find_kernel_functions(mlir::ModuleOp module,
                                                      std::span<const format::Kernel> kernels);

// Rejects types portable Vulkan 1.2 cannot run (f64, bf16, vectors wider than 4).
void check_kernel_types(mlir::func::FuncOp func, const format::Kernel& kernel);

// Rewrites scf.index_switch into scf.if chains and inlines single-block scf.execute_region,
// since MLIR 19's SCF→SPIR-V patterns handle neither.
void structure_control_flow(mlir::func::FuncOp func, const format::Kernel& kernel);

// Rewrites arith.remsi(a, b) as a - (a / b) * b. MLIR 19's Vulkan lowering of remsi takes
// |a| mod |b| and negates it unless a == |a|, which gives the wrong sign for INT_MIN (|INT_MIN|
// is INT_MIN): INT64_MIN % -2147483511 came out +37538 instead of -37538 on lavapipe.
// OpSDiv truncates toward zero like C++, so the rewrite is exact wherever C++ defines a % b.
void exact_signed_remainder(mlir::func::FuncOp func);

// The gpu.module the kernel with symbol `symbol` is wrapped into.
std::string kernel_module_name(llvm::StringRef symbol);

// Moves each kernel named in `symbols` (func.func with qv.kernel and qv.block) into a new
// gpu.module @qv_spirv_<symbol> at the end of `module`, in that order, as a gpu.func kernel with
// spirv.entry_point_abi (LocalSize = qv.block) and spirv.interface_var_abi (set 0, binding i; a
// word view at its buffer's binding) on every parameter. Workgroup allocas become memref.alloc
// (lowered to Workgroup variables), other allocas get the private address space (Function
// variables). The pass qv-spirv-wrap-kernels; TargetError names the kernel it cannot move.
void wrap_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols);

}  // namespace quiver::compiler::spirv_target
